import { randomUUID } from 'node:crypto';
import type { SlotsReserved } from '../../commands/calendar/events';
import { clientBookings, ensureListed, listBooking } from '../../commands/booking/lookups';
import { bookingTerms, eventually, holdData, marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * Commands decide from the log, not from read models: with a read model stopped for good (its projection
 * fails on a real database error), bookings, payment updates and session lifecycle still decide on the
 * current truth.
 */

// Tuesday 1 December 2026, 08:00 UTC (09:00 in Berlin).
const NOW = new Date('2026-12-01T08:00:00Z');
const SLOT = '2026-12-02T10:00:00';

/** Makes every write to `table` fail from now on, so the projection that keeps it stops as failed. */
async function breakReadModel(t: TestSystem, table: string) {
  await t.database.db.query(
    `CREATE OR REPLACE FUNCTION refuse_write() RETURNS trigger AS $$
     BEGIN RAISE EXCEPTION 'read model % is broken for this test', TG_TABLE_NAME; END $$ LANGUAGE plpgsql`,
  );
  await t.database.db.query(
    `CREATE TRIGGER refuse_write BEFORE INSERT OR UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION refuse_write()`,
  );
}

const failed = async (t: TestSystem, projection: string) =>
  eventually(
    async () => (await t.request('GET', '/healthz')).body,
    (h) =>
      h.projections.some(
        (p: { name: string; state: string }) => p.name === projection && p.state === 'failed',
      ),
  );

/** Each scenario gets a system of its own: it breaks a read model for good. */
function ownSystem() {
  const sys = {} as { t: TestSystem; m: ReturnType<typeof marketplace> };
  beforeAll(async () => {
    sys.t = await startTestSystem({ clock: () => NOW });
    sys.m = marketplace(sys.t);
  });
  afterAll(() => sys.t.close());
  return sys;
}

describe('booking decides on the service stream, not the services read model', () => {
  const sys = ownSystem();

  it('refuses a service rejected while the services projection is failed, and books at the current price', async () => {
    const { t, m } = sys;
    const coach = await m.coach();
    const rejected = await m.offering(coach);
    const repriced = await m.offering(coach);
    const client = await m.client();
    await breakReadModel(t, 'services');

    const reject = await t.request('POST', `/api/v1/admin/services/${rejected}/reject`, {
      token: m.admin(),
      body: { reason: 'complaint' },
    });
    expect(reject.status).toBe(200);
    expect(reject.body.status).toBe('rejected');
    await failed(t, 'services');
    const edit = await t.request('PUT', `/api/v1/coach/services/${repriced}`, {
      token: coach.token,
      body: { price: 65 },
    });
    expect(edit.status).toBe(200);

    // The read model still shows both services as they were...
    const stale = await t.request('GET', `/api/v1/service/${rejected}`);
    expect(stale.body).toMatchObject({ status: 'approved' });
    expect((await t.request('GET', `/api/v1/service/${repriced}`)).body).toMatchObject({ price: 40 });

    // ...but booking reads the services' own streams.
    const refused = await t.request('POST', `/api/v1/service/${rejected}`, {
      token: client.token,
      body: { slots: [SLOT] },
    });
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({ error: 'service_not_found', code: 404 });

    const booked = await t.request('POST', `/api/v1/service/${repriced}`, {
      token: client.token,
      body: { slots: [SLOT] },
    });
    expect(booked.status).toBe(200);
    expect(booked.body[0]).toMatchObject({ price: 65, serviceId: repriced });
    const payment = await t.system.deps.store.readStream(`payment-${booked.body[0].paymentId}`);
    expect(payment.events[0]!.data).toMatchObject({ price: 65 });
  });
});

describe('a group made smaller is booked on its new size, read from the service stream', () => {
  const sys = ownSystem();

  it('refuses the seat the coach took away while the services projection is failed', async () => {
    const { t, m } = sys;
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { groupSession: true, maxGroupSize: 3 });
    const book = async () =>
      t.request('POST', `/api/v1/service/${serviceId}`, {
        token: (await m.client()).token,
        body: { slots: [SLOT] },
      });
    expect((await book()).status).toBe(200);
    expect((await book()).status).toBe(200);
    await breakReadModel(t, 'services');
    const edit = await t.request('PUT', `/api/v1/coach/services/${serviceId}`, {
      token: coach.token,
      body: { maxGroupSize: 2 },
    });
    expect(edit.status).toBe(200);
    await failed(t, 'services');
    // The read model still offers three seats; the booking decides on two, both taken.
    expect((await t.request('GET', `/api/v1/service/${serviceId}`)).body).toMatchObject({ maxGroupSize: 3 });
    const third = await book();
    expect(third.status).toBe(409);
    expect(third.body).toMatchObject({ error: 'slot_unavailable' });
  });
});

describe("endpoint 17 finds the user's newest open payment on the write side", () => {
  const sys = ownSystem();

  it('updates the newest payment even when only the older one is in the payments read model', async () => {
    const { t, m } = sys;
    const coach = await m.coach();
    const [first, second] = [await m.offering(coach), await m.offering(coach)];
    const client = await m.client();
    const book = (serviceId: string, slot: string) =>
      t.request('POST', `/api/v1/service/${serviceId}`, { token: client.token, body: { slots: [slot] } });
    const older = await book(first, '2026-12-02T10:00:00');
    expect(older.status).toBe(200);
    const olderId = older.body[0].paymentId;
    const asClient = { token: client.token };
    expect((await t.request('GET', `/api/v1/payment/${olderId}`, asClient)).status).toBe(200);

    await breakReadModel(t, 'payments');
    const newer = await book(second, '2026-12-02T12:00:00');
    expect(newer.status).toBe(200);
    const newerId = newer.body[0].paymentId;
    await failed(t, 'payments');
    // Not in the read model...
    expect((await t.request('GET', `/api/v1/payment/${newerId}`, asClient)).status).toBe(404);

    // ...yet the provider's update lands on it, not on the older payment.
    const res = await t.request('POST', `/api/v1/payment/private/user/${client.id}/update`, {
      token: m.service(),
      body: { status: 'checkout' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'checkout', serviceId: second, clientId: client.id });
    const types = async (id: string) =>
      (await t.system.deps.store.readStream(`payment-${id}`)).events.map((e) => e.type);
    expect(await types(newerId)).toEqual(['PaymentCreated', 'PaymentStatusChanged']);
    expect(await types(olderId)).toEqual(['PaymentCreated']);
  });

  it('lists a hold no request listed (a crash, or a booking from before lists existed), and 17 then finds it', async () => {
    const { t, m } = sys;
    const coachId = randomUUID();
    const clientId = randomUUID();
    const terms = bookingTerms({ paymentExpiresAt: '2026-12-02T08:00:00.000Z' });
    const hold = holdData({ coachId, clientId, terms, reservedAt: NOW.toISOString() });
    await t.system.deps.store.append(`calendar-${coachId}`, [{ type: 'SlotsReserved', data: hold }]);
    const listed = await eventually(
      async () => (await t.system.deps.store.readStream(`bookings-of-${clientId}`)).events,
      (events) => events.length > 0,
    );
    expect(listed.map((e) => e.data)).toEqual([
      expect.objectContaining({ groupId: hold.groupId, paymentId: terms.paymentId }),
    ]);
    const res = await eventually(
      () =>
        t.request('POST', `/api/v1/payment/private/user/${clientId}/update`, {
          token: m.service(),
          body: { status: 'checkout' },
        }),
      (r) => r.status === 200,
    );
    expect(res.body).toMatchObject({ status: 'checkout', serviceId: hold.serviceId });
  });
});

describe('session lifecycle loads the booking stream, not the sessions read model', () => {
  const sys = ownSystem();

  it('approves and cancels a session the sessions read model has never seen; strangers get 404', async () => {
    const { t, m } = sys;
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 2 });
    const client = await m.client();
    await breakReadModel(t, 'sessions');
    const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: [SLOT, '2026-12-03T10:00:00'] },
    });
    expect(booked.status).toBe(200);
    const [s1, s2] = booked.body.map((s: { id: string }) => s.id);
    await failed(t, 'sessions');
    expect((await t.request('GET', `/api/v1/session/${s1}`, { token: client.token })).status).toBe(404);

    const act = (token: string, id: string, action: string, body?: unknown) =>
      t.request('POST', `/api/v1/session/${id}/${action}`, { token, body });
    const approved = await act(coach.token, s1, 'approve');
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({
      id: s1,
      state: 'approved',
      paymentState: 'awaiting',
      coachId: coach.id,
      clientId: client.id,
      serviceId,
      slot: SLOT,
      name: 'Tennis basics',
    });
    // The client may not approve (its role is read from the booking), and may cancel its other session.
    expect((await act(client.token, s2, 'approve')).status).toBe(403);
    const canceled = await act(client.token, s2, 'cancel', { reason: 'busy' });
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ id: s2, state: 'canceled' });

    const stranger = await m.client();
    expect((await act(stranger.token, s1, 'cancel', {})).body).toMatchObject({ error: 'session_not_found' });
    const otherCoach = await m.coach();
    expect((await act(otherCoach.token, s1, 'complete')).status).toBe(404);
    expect((await act(coach.token, '00000000-0000-4000-8000-000000000000', 'approve')).status).toBe(404);

    // The private e-mail endpoints find the booking and the session the same way.
    const email = (path: string) =>
      t.request('POST', `/api/v1/notification/private/email/${path}`, { token: m.service(), body: {} });
    const groupId = booked.body[0].groupId;
    const bookingMail = await email(`${coach.id}/session/${groupId}/booking`);
    expect(bookingMail.status).toBe(200);
    expect(bookingMail.body).toMatchObject({ status: 'queued', template: 'booking' });
    expect((await email(`${client.id}/session/${s1}/approve`)).status).toBe(200);
    expect((await email(`${coach.id}/session/${s2}/cancel`)).status).toBe(200);
    expect((await email(`${stranger.id}/session/${s1}/approve`)).body).toMatchObject({
      error: 'session_not_found',
    });
  });
});

describe("the client's list orders a package by its booking time, however its listings came", () => {
  const sys = ownSystem();

  it('a later session listed before the package itself (its listing healed late) keeps the package older', async () => {
    const store = sys.t.system.deps.store;
    const clientId = randomUUID();
    const hold = (reservedAt: string, over: Partial<SlotsReserved['data']> = {}): SlotsReserved['data'] => ({
      coachId: randomUUID(),
      groupId: randomUUID(),
      serviceId: randomUUID(),
      clientId,
      groupSession: false,
      maxGroupSize: 1,
      timezone: 'Europe/Berlin',
      sessions: [
        {
          sessionId: randomUUID(),
          startsAt: '2026-12-09T09:00:00.000Z',
          endsAt: '2026-12-09T10:00:00.000Z',
          slot: '2026-12-09T10:00:00',
        },
      ],
      terms: bookingTerms({ paymentId: randomUUID() }),
      reservedAt,
      ...over,
    });
    const pkg = hold('2026-11-20T08:00:00.000Z');
    const other = hold('2026-11-25T08:00:00.000Z');
    const topUp = hold('2026-11-30T08:00:00.000Z', {
      groupId: pkg.groupId,
      terms: pkg.terms,
      packageTopUp: { bookedAt: pkg.reservedAt },
    });
    const metadata = { actor: { userId: clientId, role: 'client' } };
    // The package's own listing was left to the booking-list process, which had not got to it when its
    // later session was booked (the booking process had written the package's booking stream).
    await listBooking(store, topUp, metadata);
    await listBooking(store, other, metadata);
    await ensureListed(store, pkg, metadata);
    const listed = await clientBookings(store, clientId);
    expect(listed.map((b) => [b.groupId, b.bookedAt])).toEqual([
      [other.groupId, other.reservedAt],
      [pkg.groupId, pkg.reservedAt],
    ]);
    expect(listed[1]!.sessionIds).toHaveLength(2);
  });
});
