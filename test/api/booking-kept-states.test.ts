import { marketplace } from '../support/marketplace';
import { systemOnSteppedStore, touchServiceBeforeHold } from '../support/storeRaces';
import { startTestSystem, testEventStoreOnEsdb, type TestSystem } from '../support/system';

/**
 * A booking decides on the service and the coach's address book as this instance last folded them, without
 * reading them, and the hold's write checks that neither changed (SQL stores). What another instance wrote
 * meanwhile must still decide the booking: a new price, a rejection, an approval, a new address (and with it
 * the coach's travel).
 *
 * Not on EventStoreDB: there the booking reads both streams every time (no multi-stream append to carry
 * the conditions), and each test system gets an event store of its own.
 */
const describeSql = testEventStoreOnEsdb() ? describe.skip : describe;

// Tuesday 1 December 2026, 09:00 in Berlin.
const NOW = new Date('2026-12-01T08:00:00Z');

/** 27.8 km from the studio (Alexanderplatz): 75 minutes of travel. */
const POTSDAM = { lat: 52.3906, lng: 13.0645 };

const book = (t: TestSystem, token: string, serviceId: string, body: Record<string, unknown>) =>
  t.request('POST', `/api/v1/service/${serviceId}`, { token, body });

async function saveAddress(t: TestSystem, token: string, name: string) {
  const res = await t.request('POST', '/api/v1/nav/addreses', {
    token,
    body: { lat: 52.5219, lng: 13.4132, name, address: `${name} 1, Berlin` },
  });
  expect(res.status).toBe(200);
  return (res.body as { id: string; name: string }[]).find((x) => x.name === name)!.id;
}

describeSql('a booking on states this instance kept, after another instance changed them', () => {
  let a: TestSystem;
  let b: TestSystem;
  let m: ReturnType<typeof marketplace>;
  beforeAll(async () => {
    a = await startTestSystem({ clock: () => NOW });
    // A second instance on the same database and log: its writes are unknown to the first one's kept states.
    b = await startTestSystem({ clock: () => NOW, database: a.database });
    m = marketplace(a);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('books at the price the other instance set, with travel from the address it added', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    // The first booking makes instance a keep the service and the (empty) address book: no base, no travel.
    const first = await book(a, client.token, serviceId, {
      slots: ['2026-12-02T10:00:00'],
      position: POTSDAM,
    });
    expect(first.status).toBe(200);
    expect(first.body[0]).toMatchObject({ price: 40, addressId: null, minutesTravel: 0 });

    const edit = await b.request('PUT', `/api/v1/coach/services/${serviceId}`, {
      token: coach.token,
      body: { price: 65 },
    });
    expect(edit.status).toBe(200);
    const second = await book(a, client.token, serviceId, { slots: ['2026-12-02T12:00:00'] });
    expect(second.status).toBe(200);
    expect(second.body[0]).toMatchObject({ price: 65 });
    const payment = await a.system.deps.store.readStream(`payment-${second.body[0].paymentId}`);
    expect(payment.events[0]!.data).toMatchObject({ price: 65 });

    // The studio becomes the coach's default address: the trip to the client is counted from it.
    const studio = await saveAddress(b, coach.token, 'Studio');
    const third = await book(a, client.token, serviceId, {
      slots: ['2026-12-03T10:00:00'],
      position: POTSDAM,
    });
    expect(third.status).toBe(200);
    expect(third.body[0]).toMatchObject({ addressId: null, minutesTravel: 75 });
    const there = await book(a, client.token, serviceId, {
      slots: ['2026-12-04T10:00:00'],
      addressId: studio,
    });
    expect(there.status).toBe(200);
    expect(there.body[0]).toMatchObject({ addressId: studio, minutesTravel: 0 });
  });

  it('refuses a service the other instance had rejected', async () => {
    const coach = await m.coach();
    const rejected = await m.offering(coach);
    const client = await m.client();
    expect((await book(a, client.token, rejected, { slots: ['2026-12-02T10:00:00'] })).status).toBe(200);

    const reject = await b.request('POST', `/api/v1/admin/services/${rejected}/reject`, {
      token: m.admin(),
      body: { reason: 'complaint' },
    });
    expect(reject.status).toBe(200);
    const refused = await book(a, client.token, rejected, { slots: ['2026-12-03T10:00:00'] });
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({ error: 'service_not_found' });
  });

  it('books a service the other instance approved after this one had seen it in review', async () => {
    const coach = await m.coach();
    const client = await m.client();
    const created = await a.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: {
        name: 'Yoga',
        price: 30,
        priceCurrency: 'EUR',
        sessionMinutesDuration: 60,
        serviceTypes: ['yoga'],
      },
    });
    expect(created.status).toBe(200);
    // In review: not bookable (instance a keeps it as such).
    expect((await book(a, client.token, created.body.id, { slots: ['2026-12-02T10:00:00'] })).status).toBe(
      404,
    );
    const approve = await b.request('POST', `/api/v1/admin/services/${created.body.id}/approve`, {
      token: m.admin(),
    });
    expect(approve.status).toBe(200);
    const booked = await book(a, client.token, created.body.id, { slots: ['2026-12-02T10:00:00'] });
    expect(booked.status).toBe(200);
    expect(booked.body[0]).toMatchObject({ price: 30, serviceId: created.body.id });
  });
});

describeSql('a service that changes between a booking’s read and its hold', () => {
  let t: TestSystem;
  let m: ReturnType<typeof marketplace>;
  /** How many more bookings' holds find their service changed just before they are written. */
  const race = { left: 0 };
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ t, m, close } = await systemOnSteppedStore(NOW, (inner) => ({
      appendMany: touchServiceBeforeHold(inner, NOW, race),
    })));
  });
  afterAll(() => close?.());

  /** A booking of a new coach's service whose hold finds the service changed `changes` times. */
  const bookInRace = async (changes: number) => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    race.left = changes;
    const res = await book(t, client.token, serviceId, { slots: ['2026-12-02T10:00:00'] });
    return { coach, serviceId, client, res };
  };

  it('decides again on the service as it now is, and books', async () => {
    const { serviceId, res } = await bookInRace(2);
    expect(res.status).toBe(200);
    expect(race.left).toBe(0);
    expect(res.body[0]).toMatchObject({ serviceId, price: 40 });
  });

  it('answers 409 conflict, booking nothing, when the service changes before every attempt', async () => {
    const { coach, serviceId, client, res } = await bookInRace(100);
    race.left = 0;
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: 'conflict' });
    const { events } = await t.system.deps.store.readStream(`calendar-${coach.id}`);
    expect(events.filter((e) => e.type === 'SlotsReserved')).toHaveLength(0);
    // The slot is still free for the next try.
    expect((await book(t, client.token, serviceId, { slots: ['2026-12-02T10:00:00'] })).status).toBe(200);
  });
});
