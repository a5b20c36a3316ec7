import type { SlotsReserved } from '../../commands/calendar/events';
import { isCondition, type EventStore } from '../../src/eventstore/types';
import { eventually, type marketplace } from '../support/marketplace';
import { systemOnSteppedStore } from '../support/storeRaces';
import { testEventStoreOnEsdb, type TestSystem } from '../support/system';

/**
 * The decline or cancel of a booking's last session settles its payment before answering (canceled, or
 * refunded when received). A package's later session may join the booking while that cancel is under way:
 * the calendar still holds the canceled session until its slot is released, so the package books on. The
 * settlement then finds a session still on and keeps the payment, as the booking process does. SQL stores
 * only (a top-up's session joins its booking in the hold's own write); the race is stepped into here.
 */
const describeSql = testEventStoreOnEsdb() ? describe.skip : describe;
if (testEventStoreOnEsdb())
  console.log(
    'session-settlement-race: skipped on EventStoreDB, which writes no streams together (the race is stepped on the SQL stores)',
  );
const NOW = new Date('2026-12-01T08:00:00Z');

describeSql("a package's session booked while its last session's cancel is under way", () => {
  let t: TestSystem;
  let m: ReturnType<typeof marketplace>;
  let inner: EventStore;
  let close: () => Promise<void>;
  /**
   * `during` runs before the next slot release is appended to `stream` (the request's or the booking
   * process's, whichever comes first); every release there waits for it.
   */
  const race: { stream: string | null; during: (() => Promise<void>) | null; gate: Promise<void> | null } = {
    stream: null,
    during: null,
    gate: null,
  };
  /**
   * `beforeJoin` runs once a package's later session is held (its hold written), before the session's
   * `SessionsBooked` is appended to the booking stream on its own (if it is not written with the hold).
   */
  const join: {
    stream: string | null;
    beforeJoin: (() => Promise<void>) | null;
    gate: Promise<void> | null;
  } = { stream: null, beforeJoin: null, gate: null };

  beforeAll(async () => {
    ({ t, m, inner, close } = await systemOnSteppedStore(NOW, (real) => ({
      appendMany: async (appends) => {
        const written = await real.appendMany!(appends);
        const topUpHeld = appends.some(
          (a) =>
            !isCondition(a) &&
            a.events.some(
              (e) => e.type === 'SlotsReserved' && (e.data as SlotsReserved['data']).packageTopUp,
            ),
        );
        if (topUpHeld && join.beforeJoin) {
          join.gate = join.beforeJoin();
          join.beforeJoin = null;
          await join.gate;
        }
        return written;
      },
      append: async (name, events, opts) => {
        if (join.stream === name && events.some((e) => e.type === 'SessionsBooked')) await join.gate;
        if (race.stream === name && events.some((e) => e.type === 'SlotsReleased')) {
          if (race.during) {
            race.gate = race.during();
            race.during = null;
          }
          await race.gate;
        }
        return real.append(name, events, opts);
      },
    })));
  });
  afterAll(() => close?.());

  it('keeps the payment: the package has a session again', async () => {
    const { coach, client, serviceId, first } = await m.packageBought('2026-12-02T10:00:00', {
      sessionCancellationHours: 1,
    });
    for (const status of ['checkout', 'received'])
      await t.request('POST', `/api/v1/payment/private/payment/${first.paymentId}/update`, {
        token: m.service(),
        body: { status },
      });
    let topUp: { status: number; body: { id: string }[] } | null = null;
    race.stream = `calendar-${coach.id}`;
    race.during = async () => {
      topUp = await t.request('POST', `/api/v1/service/${serviceId}`, {
        token: client.token,
        body: { slots: ['2026-12-03T10:00:00'], packageId: first.groupId },
      });
    };
    const canceled = await t.request('POST', `/api/v1/session/${first.id}/cancel`, { token: client.token });
    expect(canceled.status).toBe(200);
    expect(race.during).toBeNull(); // the package booked on before the canceled session's slot was released
    expect(topUp!.status).toBe(200);
    expect(canceled.body.paymentState).toBe('received');
    // Once the booking process has handled the cancel too (the slot is back), still nothing was refunded.
    await eventually(
      async () => (await inner.readStream(`calendar-${coach.id}`)).events,
      (es) => es.some((e) => e.type === 'SlotsReleased'),
    );
    await new Promise((r) => setTimeout(r, 300));
    const moves = (await inner.readStream(`payment-${first.paymentId}`)).events
      .filter((e) => e.type === 'PaymentStatusChanged')
      .map((e) => (e.data as { to: string }).to);
    expect(moves).toEqual(['checkout', 'received']);
    const later = await t.request('GET', `/api/v1/session/${topUp!.body[0]!.id}`, { token: client.token });
    expect(later.body).toMatchObject({ state: 'new', paymentState: 'received' });
  });

  it("keeps the payment when the cancel settles between the later session's hold and its joining the booking", async () => {
    const { client, serviceId, first } = await m.packageBought('2026-12-02T10:00:00', {
      sessionCancellationHours: 1,
    });
    for (const status of ['checkout', 'received'])
      await t.request('POST', `/api/v1/payment/private/payment/${first.paymentId}/update`, {
        token: m.service(),
        body: { status },
      });
    let canceled: { status: number; body: { paymentState: string } } | null = null;
    join.stream = `booking-${first.groupId}`;
    join.beforeJoin = async () => {
      canceled = await t.request('POST', `/api/v1/session/${first.id}/cancel`, { token: client.token });
    };
    const topUp = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-03T10:00:00'], packageId: first.groupId },
    });
    await join.gate;
    join.stream = null;
    expect(canceled!.status).toBe(200);
    expect(topUp.status).toBe(200);
    // The package holds a session again (the hold was decided while the canceled one still counted): its
    // payment stays, and the new session with it.
    expect(canceled!.body.paymentState).toBe('received');
    await new Promise((r) => setTimeout(r, 500));
    const moves = (await inner.readStream(`payment-${first.paymentId}`)).events
      .filter((e) => e.type === 'PaymentStatusChanged')
      .map((e) => (e.data as { to: string }).to);
    expect(moves).toEqual(['checkout', 'received']);
    const later = await t.request('GET', `/api/v1/session/${topUp.body[0]!.id}`, { token: client.token });
    expect(later.body).toMatchObject({ state: 'new', paymentState: 'received' });
  });
});
