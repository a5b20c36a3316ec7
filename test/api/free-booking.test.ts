import { randomUUID } from 'node:crypto';
import { bookingStream } from '../../commands/booking/events';
import { calendarStream } from '../../commands/calendar/events';
import { paymentStream } from '../../commands/payments/events';
import { createPaymentExpirySweeper } from '../../src/paymentExpirySweeper';
import { bookingTerms } from '../support/marketplace';
import { type TestSystem } from '../support/system';
import { apiSuite, type Marketplace } from '../support/apiSuite';

let t: TestSystem;
let m: Marketplace;
const clock = apiSuite('2026-12-01T08:00:00Z', (system, market) => {
  t = system;
  m = market;
});

/** A client's booking of a free service (price 0), one session on 2 December at 10:00 local. */
async function freeBooking() {
  const coach = await m.coach();
  const serviceId = await m.offering(coach, { name: 'Discovery call', price: 0 });
  const client = await m.client();
  const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
    token: client.token,
    body: { slots: ['2026-12-02T10:00:00'] },
  });
  expect(res.status).toBe(200);
  const session = res.body[0] as { id: string; paymentId: string; paymentState: string; price: number };
  return { coach, client, serviceId, session };
}

const settled = async () =>
  expect(await t.system.runner.waitFor(await t.system.deps.store.headPosition(), 5000)).toBe(true);

const paymentEvents = async (paymentId: string) =>
  (await t.system.deps.store.readStream(paymentStream(paymentId))).events.map((e) => e.data);

/**
 * A free booking's streams as the code before free payments were created received wrote them: the payment
 * created `awaiting` with a deadline (schemaVersion 1). Booking and payment first, so the booking process
 * finds them written.
 */
async function storedOldFreeBooking(
  ids: { coachId: string; clientId: string; serviceId: string },
  startsAt: string,
  expiresAt: string,
) {
  const groupId = randomUUID();
  const sessionId = randomUUID();
  const terms = bookingTerms({ price: 0, serviceName: 'Discovery call', paymentExpiresAt: expiresAt });
  const group = { groupId, ...ids };
  const start = new Date(startsAt);
  const sessions = [
    {
      sessionId,
      startsAt: start.toISOString(),
      endsAt: new Date(start.getTime() + 3_600_000).toISOString(),
      slot: start.toISOString().slice(0, 19),
    },
  ];
  const at = '2026-12-01T08:00:00.000Z';
  const v1 = { schemaVersion: 1, correlationId: `old-free-${groupId}` };
  const { store } = t.system.deps;
  await store.append(bookingStream(groupId), [
    {
      type: 'SessionsBooked',
      data: { ...group, sessions, terms, timezone: 'UTC', bookedAt: at },
      metadata: v1,
    },
  ]);
  await store.append(paymentStream(terms.paymentId), [
    {
      type: 'PaymentCreated',
      data: {
        ...group,
        paymentId: terms.paymentId,
        status: 'awaiting',
        price: 0,
        currency: 'EUR',
        methodId: terms.methodId,
        method: terms.method,
        expiresAt,
        createdAt: at,
      },
      metadata: v1,
    },
  ]);
  await store.append(calendarStream(ids.coachId), [
    {
      type: 'SlotsReserved',
      data: {
        ...group,
        groupSession: false,
        maxGroupSize: 1,
        timezone: 'UTC',
        sessions,
        terms,
        reservedAt: at,
      },
      metadata: v1,
    },
  ]);
  return { paymentId: terms.paymentId, sessionId };
}

describe('a free service (price 0): nothing to pay, nothing to expire or refund', () => {
  it('is booked with its payment received, and is not canceled as unpaid at the deadline', async () => {
    const { client, session } = await freeBooking();
    expect(session).toMatchObject({ price: 0, paymentState: 'received' });
    const payment = await t.request('GET', `/api/v1/payment/${session.paymentId}`, { token: client.token });
    expect(payment.body).toMatchObject({ price: 0, status: 'received' });

    // A paid booking's payment would be canceled (expired) now: a day later, after the session's start.
    clock.set('2026-12-02T12:00:00Z');
    await t.system.sweepExpiredPayments();
    await settled();
    expect(await paymentEvents(session.paymentId)).toEqual([expect.objectContaining({ status: 'received' })]);
    const read = await t.request('GET', `/api/v1/session/${session.id}`, { token: client.token });
    expect(read.body).toMatchObject({ state: 'new', paymentState: 'received' });
  });

  it('refunds nothing when canceled: the payment stays received and the slot comes back', async () => {
    const { client, serviceId, session } = await freeBooking();
    const canceled = await t.request('POST', `/api/v1/session/${session.id}/cancel`, {
      token: client.token,
      body: {},
    });
    expect(canceled.status).toBe(200);
    await settled();
    expect(await paymentEvents(session.paymentId)).toEqual([expect.objectContaining({ status: 'received' })]);
    const again = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: (await m.client()).token,
      body: { slots: ['2026-12-02T10:00:00'] },
    });
    expect(again.status).toBe(200);
  });

  it('is passed by when the payment service updates the user payment (17): it has nothing to update', async () => {
    const { client, session } = await freeBooking();
    const service = t.token(randomUUID(), ['service']);
    const res = await t.request('POST', `/api/v1/payment/private/user/${client.id}/update`, {
      token: service,
      body: { status: 'checkout' },
    });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error: 'payment_not_found' });
    expect(await paymentEvents(session.paymentId)).toHaveLength(1);
  });

  it('booked before free payments were created received (a v1 PaymentCreated, awaiting), is read as received: not expired, nothing to pay', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { name: 'Discovery call', price: 0 });
    const client = await m.client();
    const { paymentId, sessionId } = await storedOldFreeBooking(
      { coachId: coach.id, clientId: client.id, serviceId },
      '2026-12-02T09:00:00.000Z',
      '2026-12-02T08:00:00.000Z',
    );
    await settled();
    const payment = await t.request('GET', `/api/v1/payment/${paymentId}`, { token: client.token });
    expect(payment.body).toMatchObject({ price: 0, status: 'received' });

    // Past its old deadline: before, the sweeper canceled it as unpaid, and with it the session.
    clock.set('2026-12-02T12:00:00Z');
    expect(await t.system.sweepExpiredPayments()).toBe(0);
    await settled();
    expect(await paymentEvents(paymentId)).toHaveLength(1);
    const read = await t.request('GET', `/api/v1/session/${sessionId}`, { token: client.token });
    expect(read.body).toMatchObject({ state: 'new', paymentState: 'received' });
    // Stored as it was: the upcasting is on read only.
    if (t.system.deps.store.kind !== 'esdb') {
      const stored = await t.system.deps.db.query<{ data: { status: string } }>(
        `SELECT data FROM es_events WHERE stream_name = $1`,
        [paymentStream(paymentId)],
      );
      expect(stored.rows[0]!.data.status).toBe('awaiting');
    }
  });

  it('left due in payment_expiry_due by the previous release (no rebuild yet), holds no later expiry back', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { name: 'Discovery call', price: 0 });
    const client = await m.client();
    const ids = { coachId: coach.id, clientId: client.id, serviceId };
    const stale = [
      await storedOldFreeBooking(ids, '2026-12-02T09:00:00.000Z', '2026-12-01T09:00:00.000Z'),
      await storedOldFreeBooking(ids, '2026-12-02T11:00:00.000Z', '2026-12-01T09:30:00.000Z'),
    ];
    await settled();
    // What the read model got from the previous release, which read these payments as unpaid.
    for (const [i, s] of stale.entries())
      await t.system.deps.db.query(
        'INSERT INTO payment_expiry_due (payment_id, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING',
        [s.paymentId, `2026-12-01T09:${i ? '30' : '00'}:00.000Z`],
      );
    const paid = await t.request('POST', `/api/v1/service/${await m.offering(coach)}`, {
      token: (await m.client()).token,
      body: { slots: ['2026-12-03T10:00:00'] },
    });
    expect(paid.status).toBe(200);
    await settled();
    // A sweep of 2 at a time, on a clock of its own (the service's own sweeper stays before every deadline):
    // the two stale rows come first and expire nothing; the paid booking is still expired in the same sweep
    // (before, it waited behind them for ever).
    const { db, store, log } = t.system.deps;
    const later = () => new Date('2026-12-03T12:00:00Z');
    const sweeper = createPaymentExpirySweeper({ db, store, log, clock: later }, 60_000, 2);
    expect(await sweeper.sweep()).toBe(1);
    expect(await paymentEvents(paid.body[0].paymentId)).toEqual([
      expect.objectContaining({ status: 'awaiting' }),
      expect.objectContaining({ to: 'canceled', reason: 'expired' }),
    ]);
    for (const s of stale) expect(await paymentEvents(s.paymentId)).toHaveLength(1);
  });
});
