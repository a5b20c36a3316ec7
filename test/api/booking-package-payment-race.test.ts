import { randomUUID } from 'node:crypto';
import type { SlotsReserved } from '../../commands/calendar/events';
import type { EventStore } from '../../src/eventstore/types';
import { eventually, marketplace as marketplaceOf, type marketplace } from '../support/marketplace';
import { systemOnSteppedStore } from '../support/storeRaces';
import { startTestSystem, testEventStoreOnEsdb, type TestSystem } from '../support/system';

type Marketplace = ReturnType<typeof marketplace>;

/**
 * A package's later session is booked against the package's payment as read: if the payment is canceled
 * between that read and the hold's write (endpoint 16, the expiry sweeper, the provider), the write is
 * refused by its condition on the payment stream and the booking decided again: 409 `package_canceled`,
 * and no session is left held on a payment nobody will pay or release. SQL stores only (the condition rides
 * on the hold's multi-stream write); found by review.
 */
const describeSql = testEventStoreOnEsdb() ? describe.skip : describe;
const NOW = new Date('2026-12-01T08:00:00Z');

/**
 * A package top-up's hold appended as the route writes it when it read the payment still open just before
 * the payment closed (the EventStoreDB window), on `day` at 10:00 Berlin; resolves once the booking
 * process canceled its session, with the booking's events and a wait for its slot's release.
 */
async function heldAfterClose(store: EventStore, coachId: string, groupId: string, day: string) {
  const calendar = `calendar-${coachId}`;
  const { events, revision } = await store.readStream(calendar);
  const pkg = events.find((e) => e.type === 'SlotsReserved')!.data as SlotsReserved['data'];
  const sessionId = randomUUID();
  const topUp: SlotsReserved['data'] = {
    ...pkg,
    sessions: [
      {
        sessionId,
        startsAt: `${day}T09:00:00.000Z`,
        endsAt: `${day}T10:00:00.000Z`,
        slot: `${day}T10:00:00`,
      },
    ],
    reservedAt: NOW.toISOString(),
    packageTopUp: { bookedAt: pkg.reservedAt },
  };
  await store.append(calendar, [{ type: 'SlotsReserved', data: topUp }], { expectedRevision: revision });
  const booked = await eventually(
    async () => (await store.readStream(`booking-${groupId}`)).events,
    (es) =>
      es.some(
        (e) => e.type === 'SessionCanceled' && (e.data as { sessionId: string }).sessionId === sessionId,
      ),
    5000,
  );
  const released = () =>
    eventually(
      async () => (await store.readStream(calendar)).events,
      (es) => es.some((e) => e.type === 'SlotsReleased' && JSON.stringify(e.data).includes(sessionId)),
      5000,
    );
  return { booked, released };
}

describeSql('a package session booked while its payment is canceled', () => {
  let t: TestSystem;
  let m: Marketplace;
  let inner: EventStore;
  let close: () => Promise<void>;
  /** When `stream` is read next, `during` runs before the read is answered (once). */
  const race: { stream: string | null; during: (() => Promise<void>) | null } = {
    stream: null,
    during: null,
  };

  beforeAll(async () => {
    ({ t, m, inner, close } = await systemOnSteppedStore(NOW, (real) => ({
      readStream: async (name, opts) => {
        const read = await real.readStream(name, opts);
        if (race.stream === name && race.during) {
          const during = race.during;
          race.during = null;
          await during();
        }
        return read;
      },
    })));
  });
  afterAll(() => close?.());

  it('answers 409 package_canceled and holds no new session', async () => {
    const { coach, client, serviceId, first } = await m.packageBought('2026-12-02T10:00:00');
    const { groupId, paymentId } = first;

    race.stream = `payment-${paymentId}`;
    race.during = async () => {
      const cancel = await t.request('POST', `/api/v1/payment/private/payment/${paymentId}/cancel`, {
        token: m.service(),
      });
      expect(cancel.status).toBe(200);
      // The booking process cancels the package's sessions, those it has at that moment.
      await eventually(
        async () => (await inner.readStream(`booking-${groupId}`)).events.map((e) => e.type),
        (types) => types.includes('SessionCanceled') || types.includes('GroupCanceled'),
      );
    };
    const topUp = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-03T10:00:00'], packageId: groupId },
    });
    expect(race.during).toBeNull(); // the cancel did run between the read and the write
    expect(topUp.status).toBe(409);
    expect(topUp.body.error).toBe('package_canceled');
    const held = (await inner.readStream(`calendar-${coach.id}`)).events.filter(
      (e) => e.type === 'SlotsReserved' && JSON.stringify(e.data).includes('2026-12-03'),
    );
    expect(held).toEqual([]);
  });
});

/**
 * On EventStoreDB the hold cannot carry that condition: a package's later session can be held after the
 * package's payment was canceled (its read came before the cancel, its hold after it), and the booking
 * process's cancel of the package's sessions has run already. The booking process then cancels the session
 * it completes onto the package, which gives its slot back. Produced here on every store by writing such a
 * hold (as the EventStoreDB route does, after the payment's cancel) straight to the coach's calendar.
 */
describe('a package session held after its payment was canceled (the EventStoreDB window)', () => {
  let t: TestSystem;
  let m: Marketplace;
  beforeAll(async () => {
    t = await startTestSystem({ clock: () => NOW });
    m = marketplaceOf(t);
  });
  afterAll(() => t?.close());

  it('is canceled by the booking process and its slot given back', async () => {
    const { coach, first } = await m.packageBought('2026-12-02T10:00:00');
    const { groupId, paymentId } = first;
    const cancel = await t.request('POST', `/api/v1/payment/private/payment/${paymentId}/cancel`, {
      token: m.service(),
    });
    expect(cancel.status).toBe(200);
    const store = t.system.deps.store;
    // Its session canceled and its slot released (the last write the cancel makes on the calendar, which the
    // hold below is appended after).
    await eventually(
      async () => (await store.readStream(`calendar-${coach.id}`)).events.map((e) => e.type),
      (types) => types.includes('SlotsReleased'),
    );

    // The top-up's hold as the route writes it when the payment was read open just before the cancel.
    const { booked, released } = await heldAfterClose(store, coach.id, groupId, '2026-12-03');
    expect(
      booked.filter((e) => e.type === 'SessionCanceled').map((e) => (e.data as { reason: string }).reason),
    ).toEqual(['payment_canceled', 'payment_canceled']);
    await released();
  });

  it('is canceled too when the payment was refunded (every session gone), and only it', async () => {
    const { coach, client, first } = await m.packageBought('2026-12-03T10:00:00');
    const { groupId, paymentId, id } = first;
    for (const status of ['checkout', 'received'])
      expect(
        (
          await t.request('POST', `/api/v1/payment/private/payment/${paymentId}/update`, {
            token: m.service(),
            body: { status },
          })
        ).status,
      ).toBe(200);
    // The client cancels the package's one booked session: the money goes back.
    const canceled = await t.request('POST', `/api/v1/session/${id}/cancel`, { token: client.token });
    expect(canceled.body.state).toBe('canceled');
    const store = t.system.deps.store;
    await eventually(
      async () => (await store.readStream(`payment-${paymentId}`)).events.map((e) => e.data),
      (moves) => moves.some((d) => (d as { to?: string }).to === 'refund'),
    );
    await eventually(
      async () => (await store.readStream(`calendar-${coach.id}`)).events.map((e) => e.type),
      (types) => types.includes('SlotsReleased'),
    );

    // A later session whose request read the payment received just before the refund (EventStoreDB).
    const { booked, released } = await heldAfterClose(store, coach.id, groupId, '2026-12-04');
    expect(
      booked
        .filter((e) => e.type === 'SessionCanceled')
        .map((e) => [(e.data as { by: string }).by, (e.data as { reason: string }).reason]),
    ).toEqual([
      ['client', ''],
      ['system', 'payment_refund'],
    ]);
    await released();
    // Refunded once: the top-up's cancel settles nothing again.
    const moves = (await store.readStream(`payment-${paymentId}`)).events
      .filter((e) => e.type === 'PaymentStatusChanged')
      .map((e) => (e.data as { to: string }).to);
    expect(moves).toEqual(['checkout', 'received', 'refund']);
  });
});
