import { randomUUID } from 'node:crypto';
import { paymentStream, type PaymentStatusChanged } from '../../commands/payments/events';
import { clientBookingsStream, type BookingListed } from '../../commands/booking/events';
import { startTestSystem, type TestSystem } from '../support/system';
import { systemOnSteppedStore } from '../support/storeRaces';
import type { EventStore } from '../../src/eventstore/types';
import { createPaymentExpirySweeper } from '../../src/paymentExpirySweeper';

const T0 = Date.parse('2026-03-03T13:00:00.000Z');
const HOUR = 3600_000;

describe('payments (endpoints 15 to 17, owner view, audit, expiry)', () => {
  let t: TestSystem;
  let now = new Date(T0);
  let service: string;
  beforeAll(async () => {
    t = await startTestSystem({ clock: () => now });
    service = t.token(randomUUID(), ['service']);
  });
  afterAll(() => t.close());

  /** What the booking side writes when a client books: a payment in `awaiting`. */
  async function createPayment(opts: { clientId?: string; coachId?: string; expiresInMs?: number } = {}) {
    const p = await listedPayment(t.system.deps.store, opts.clientId ?? randomUUID(), now.toISOString(), {
      coachId: opts.coachId,
      expiresAt: new Date(now.getTime() + (opts.expiresInMs ?? HOUR)).toISOString(),
    });
    expect(await t.system.runner.waitFor(p.position, 3000)).toBe(true);
    return p.payment;
  }
  const payment = (p: Awaited<ReturnType<typeof createPayment>>, status: string, extra = {}) => ({
    status,
    price: 49.5,
    currency: 'EUR',
    methodId: 2,
    coachId: p.coachId,
    clientId: p.clientId,
    serviceId: p.serviceId,
    ...extra,
  });
  const update = (id: string, body: unknown, token = service) =>
    t.request('POST', `/api/v1/payment/private/payment/${id}/update`, { token, body });
  const streamLength = async (id: string) =>
    (await t.system.deps.store.readStream(paymentStream(id))).events.length;

  it('drives a payment awaiting -> checkout -> received -> delivered -> refund', async () => {
    const p = await createPayment();
    const checkout = { sessionUrl: 'https://pay.example/s/1' };
    const r1 = await update(p.paymentId, { status: 'checkout', clientSecret: 'cs_1', checkout });
    expect(r1.status).toBe(200);
    expect(r1.body).toEqual(payment(p, 'checkout', { clientSecret: 'cs_1', checkout }));
    for (const status of ['received', 'delivered', 'refund']) {
      const r = await update(p.paymentId, { status });
      expect(r.status).toBe(200);
      expect(r.body).toEqual(payment(p, status, { clientSecret: 'cs_1', checkout }));
    }
    const client = t.token(p.clientId, ['client']);
    const view = await t.request('GET', `/api/v1/payment/${p.paymentId}`, { token: client });
    expect(view.status).toBe(200);
    expect(view.body.status).toBe('refund');
    expect(view.body.history.map((h: { from: string; to: string }) => `${h.from}->${h.to}`)).toEqual([
      'awaiting->checkout',
      'checkout->received',
      'received->delivered',
      'delivered->refund',
    ]);
  });

  it('applies a duplicate provider event once and answers the same Payment', async () => {
    const p = await createPayment();
    const body = { status: 'checkout', providerEventId: 'evt_dup_1', clientSecret: 'cs_a' };
    const first = await update(p.paymentId, body);
    const second = await update(p.paymentId, body);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(await streamLength(p.paymentId)).toBe(2);
  });

  it('ignores a late, out-of-order provider update (checkout after received)', async () => {
    const p = await createPayment();
    await update(p.paymentId, { status: 'checkout', providerEventId: 'evt_1' });
    const received = await update(p.paymentId, { status: 'received', providerEventId: 'evt_3' });
    const late = await update(p.paymentId, { status: 'checkout', providerEventId: 'evt_2' });
    expect(late.status).toBe(200);
    expect(late.body).toEqual(received.body);
    expect(late.body.status).toBe('received');
    expect(await streamLength(p.paymentId)).toBe(3);
  });

  it('answers 409 invalid_transition to an illegal move and records nothing', async () => {
    const p = await createPayment();
    const res = await update(p.paymentId, { status: 'delivered' });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'invalid_transition', message: expect.any(String), code: 409 });
    const withEventId = await update(p.paymentId, { status: 'received', providerEventId: 'evt_x' });
    expect(withEventId.status).toBe(409);
    expect(await streamLength(p.paymentId)).toBe(1);
  });

  it('needs the service role: 401 without a token, 403 with a user token', async () => {
    const p = await createPayment();
    const paths = [
      `/api/v1/payment/private/payment/${p.paymentId}/update`,
      `/api/v1/payment/private/payment/${p.paymentId}/cancel`,
      `/api/v1/payment/private/user/${p.clientId}/update`,
    ];
    for (const path of paths) {
      const anon = await t.request('POST', path, { body: { status: 'checkout' } });
      expect(anon.status).toBe(401);
      expect(anon.body).toEqual({ error: 'unauthorized', message: expect.any(String), code: 401 });
      const user = await t.request('POST', path, {
        token: t.token(p.clientId, ['client', 'coach', 'admin']),
        body: { status: 'checkout' },
      });
      expect(user.status).toBe(403);
      expect(user.body).toEqual({ error: 'forbidden', message: expect.any(String), code: 403 });
    }
    expect(await streamLength(p.paymentId)).toBe(1);
  });

  it('answers 404 payment_not_found for an unknown payment', async () => {
    const id = randomUUID();
    for (const res of [
      await update(id, { status: 'checkout' }),
      await t.request('POST', `/api/v1/payment/private/payment/${id}/cancel`, { token: service }),
    ])
      expect(res.body).toEqual({ error: 'payment_not_found', message: expect.any(String), code: 404 });
  });

  it('answers 422 with field locations for a bad body or path', async () => {
    const p = await createPayment();
    const bad = await update(p.paymentId, {
      status: 'paid',
      checkout: 'not an object',
      providerEventId: 'x'.repeat(201),
      amount: 3,
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(
      expect.arrayContaining([
        ['body', 'status'],
        ['body', 'checkout'],
        ['body', 'providerEventId'],
        ['body', 'amount'],
      ]),
    );
    const missing = await update(p.paymentId, {});
    expect(missing.body).toEqual({
      detail: [{ loc: ['body', 'status'], msg: 'Field required', type: 'missing' }],
    });
    const badPath = await update('not-a-uuid', { status: 'checkout' });
    expect(badPath.status).toBe(422);
    expect(badPath.body.detail[0].loc).toEqual(['path', 'payment_id']);
  });

  it("takes the whole Payment record as the body of 15 and 17 when its fields are the payment's own", async () => {
    const p = await createPayment();
    // As a client of the interface document sends it: the Payment it read, with the new status.
    const read = await update(p.paymentId, { ...payment(p, 'checkout'), currency: 'eur' });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(payment(p, 'checkout'));
    const viaUser = await t.request('POST', `/api/v1/payment/private/user/${p.clientId}/update`, {
      token: service,
      body: { ...payment(p, 'received'), coachId: p.coachId.toUpperCase(), clientSecret: 'cs_1' },
    });
    expect(viaUser.status).toBe(200);
    expect(viaUser.body).toEqual(payment(p, 'received', { clientSecret: 'cs_1' }));
    // A field that says another payment is refused at that field, and nothing is recorded.
    const before = await streamLength(p.paymentId);
    for (const [field, value] of [
      ['price', 49.49],
      ['currency', 'USD'],
      ['methodId', 1],
      ['coachId', randomUUID()],
      ['clientId', randomUUID()],
      ['serviceId', randomUUID()],
    ] as const) {
      const res = await update(p.paymentId, { ...payment(p, 'delivered'), [field]: value });
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([
        {
          loc: ['body', field],
          msg: expect.stringContaining('does not match the payment'),
          type: 'value_error',
        },
      ]);
    }
    expect(await streamLength(p.paymentId)).toBe(before);
    // Their types are checked as the record's: a price as a string, a methodId not an integer.
    const typed = await update(p.paymentId, { ...payment(p, 'delivered'), price: '49.5', methodId: 2.5 });
    expect(typed.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([
      ['body', 'price'],
      ['body', 'methodId'],
    ]);
  });

  it('cancels for the service (16) with reason canceled_by_service, and refuses a second cancel', async () => {
    const p = await createPayment();
    const path = `/api/v1/payment/private/payment/${p.paymentId}/cancel`;
    const res = await t.request('POST', path, { token: service });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(payment(p, 'canceled'));
    const again = await t.request('POST', path, { token: service });
    expect(again.status).toBe(409);
    const { events } = await t.system.deps.store.readStream(paymentStream(p.paymentId));
    expect(events[1]?.data).toMatchObject({
      from: 'awaiting',
      to: 'canceled',
      reason: 'canceled_by_service',
    });
    expect(events[1]?.metadata.actor).toMatchObject({ role: 'service' });
  });

  it("applies endpoint 17 to the user's newest open payment, and answers 404 when there is none", async () => {
    const clientId = randomUUID();
    const path = `/api/v1/payment/private/user/${clientId}/update`;
    const none = await t.request('POST', path, { token: service, body: { status: 'checkout' } });
    expect(none.status).toBe(404);
    expect(none.body).toEqual({
      error: 'payment_not_found',
      message: 'the user has no open payment',
      code: 404,
    });

    const older = await createPayment({ clientId });
    now = new Date(now.getTime() + 1000);
    const newer = await createPayment({ clientId });
    const headers = { 'idempotency-key': randomUUID() };
    const res = await t.request('POST', path, { token: service, body: { status: 'checkout' }, headers });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(payment(newer, 'checkout'));
    expect(await streamLength(older.paymentId)).toBe(1);
    // The `Payment` record has no id: the answer's X-Payment-Id names the payment it moved, also on a replay.
    expect(res.headers.get('x-payment-id')).toBe(newer.paymentId);
    const replay = await t.request('POST', path, { token: service, body: { status: 'checkout' }, headers });
    expect([replay.headers.get('idempotent-replayed'), replay.headers.get('x-payment-id')]).toEqual([
      'true',
      newer.paymentId,
    ]);

    // Once the newer one is closed, the older open one is the target.
    await t.request('POST', `/api/v1/payment/private/payment/${newer.paymentId}/cancel`, { token: service });
    const next = await t.request('POST', path, { token: service, body: { status: 'checkout' } });
    expect(next.body).toEqual(payment(older, 'checkout'));
    expect(next.headers.get('x-payment-id')).toBe(older.paymentId);
    await t.request('POST', `/api/v1/payment/private/payment/${older.paymentId}/cancel`, { token: service });
    const closed = await t.request('POST', path, { token: service, body: { status: 'checkout' } });
    expect(closed.status).toBe(404);
  });

  it('finds the newest open payment behind any number of closed ones (17 reads them newest first, in pages)', async () => {
    const clientId = randomUUID();
    const path = `/api/v1/payment/private/user/${clientId}/update`;
    const made = [];
    for (let i = 0; i < 24; i++) {
      made.push(await createPayment({ clientId }));
      now = new Date(now.getTime() + 1000);
    }
    // Each cancel through 17 closes the newest open one, so the next is one further back in the list:
    // every position of every page is the answer once.
    for (let i = made.length - 1; i >= 0; i--) {
      const res = await t.request('POST', path, { token: service, body: { status: 'canceled' } });
      expect(res.body).toEqual(payment(made[i]!, 'canceled'));
      if (i > 0) expect(await streamLength(made[i - 1]!.paymentId)).toBe(1);
    }
    const none = await t.request('POST', path, { token: service, body: { status: 'canceled' } });
    expect(none.status).toBe(404);
  });

  it('applies a redelivered endpoint-17 event to no other payment once the first closed its target', async () => {
    const clientId = randomUUID();
    const path = `/api/v1/payment/private/user/${clientId}/update`;
    const older = await createPayment({ clientId });
    now = new Date(now.getTime() + 1000);
    const newer = await createPayment({ clientId });
    const body = { status: 'canceled', providerEventId: 'evt_user_cancel_1' };
    const first = await t.request('POST', path, { token: service, body });
    expect(first.status).toBe(200);
    expect(first.body).toEqual(payment(newer, 'canceled'));
    // The provider did not get the answer and delivers the same event again.
    const again = await t.request('POST', path, { token: service, body });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(payment(newer, 'canceled'));
    expect(await streamLength(older.paymentId)).toBe(1);
    expect(await streamLength(newer.paymentId)).toBe(2);

    // Also after a newer booking: the event was applied already, to the payment it closed.
    now = new Date(now.getTime() + 1000);
    const newest = await createPayment({ clientId });
    const late = await t.request('POST', path, { token: service, body });
    expect(late.status).toBe(200);
    expect(late.body).toEqual(payment(newer, 'canceled'));
    expect(await streamLength(newest.paymentId)).toBe(1);
    expect(await streamLength(older.paymentId)).toBe(1);
  });

  it('runs a keyed endpoint-17 request again after a crash on the payment the first run closed', async () => {
    const clientId = randomUUID();
    const path = `/api/v1/payment/private/user/${clientId}/update`;
    const older = await createPayment({ clientId });
    now = new Date(now.getTime() + 1000);
    const newer = await createPayment({ clientId });
    const headers = { 'Idempotency-Key': `crash-${randomUUID()}` };
    const body = { status: 'canceled' };
    const first = await t.request('POST', path, { token: service, body, headers });
    expect(first.status).toBe(200);
    // The process died before the answer was kept: the key is claimed with no answer, past its lease.
    await t.system.deps.db.query(
      `UPDATE idempotency_keys SET status = NULL, response = NULL, created_at = now() - interval '1 hour'
       WHERE key = $1`,
      [headers['Idempotency-Key']],
    );
    const retry = await t.request('POST', path, { token: service, body, headers });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(payment(newer, 'canceled'));
    expect(await streamLength(older.paymentId)).toBe(1);
  });

  it('shows a payment to its client, its coach, admins and auditors, and 404 to anyone else', async () => {
    const p = await createPayment();
    await update(p.paymentId, { status: 'checkout' });
    const path = `/api/v1/payment/${p.paymentId}`;
    const asClient = await t.request('GET', path, { token: t.token(p.clientId, ['client']) });
    expect(asClient.status).toBe(200);
    expect(asClient.body).toEqual({
      id: p.paymentId,
      groupId: p.groupId,
      ...payment(p, 'checkout'),
      expiresAt: p.expiresAt,
      history: [
        {
          from: 'awaiting',
          to: 'checkout',
          at: now.toISOString(),
          reason: 'provider',
          actor: { userId: expect.any(String), role: 'service' },
        },
      ],
    });
    for (const token of [
      t.token(p.coachId, ['coach']),
      t.token(randomUUID(), ['admin']),
      t.token(randomUUID(), ['auditor']),
    ])
      expect((await t.request('GET', path, { token })).body).toEqual(asClient.body);
    const stranger = await t.request('GET', path, { token: t.token(randomUUID(), ['client', 'coach']) });
    expect(stranger.status).toBe(404);
    expect(stranger.body).toEqual({ error: 'payment_not_found', message: expect.any(String), code: 404 });
    const unknown = await t.request('GET', `/api/v1/payment/${randomUUID()}`, { token: t.token(p.clientId) });
    expect(unknown.body).toEqual(stranger.body);
    expect((await t.request('GET', path)).status).toBe(401);
  });

  it('replays a payment for an auditor as it stood at a given instant', async () => {
    now = new Date('2026-03-03T13:30:00.000Z');
    const p = await createPayment({ expiresInMs: 10 * HOUR });
    now = new Date('2026-03-03T13:45:00.000Z');
    await update(p.paymentId, { status: 'checkout', providerEventId: 'evt_a1' });
    now = new Date('2026-03-03T14:30:00.000Z');
    await update(p.paymentId, { status: 'received', providerEventId: 'evt_a2' });

    const auditor = t.token(randomUUID(), ['auditor']);
    const path = `/api/v1/audit/payments/${p.paymentId}/events`;
    const res = await t.request('GET', `${path}?at=2026-03-03T14:00:00Z`, { token: auditor });
    expect(res.status).toBe(200);
    expect(res.body.events.map((e: { type: string; revision: number }) => [e.type, e.revision])).toEqual([
      ['PaymentCreated', 0],
      ['PaymentStatusChanged', 1],
      ['PaymentStatusChanged', 2],
    ]);
    expect(res.body.events[1]).toMatchObject({
      data: { from: 'awaiting', to: 'checkout', providerEventId: 'evt_a1' },
      metadata: { actor: { role: 'service' } },
      createdAt: expect.any(String),
    });
    // As the owner's view showed the payment then: its deadline too.
    const owner = await t.request('GET', `/api/v1/payment/${p.paymentId}`, { token: t.token(p.clientId) });
    expect(res.body.stateAt).toMatchObject({
      id: p.paymentId,
      status: 'checkout',
      expiresAt: owner.body.expiresAt,
      revision: 1,
      lastChange: {
        // The event behind it, as the session audit's lastChange names it: its correlation chain opens from here.
        eventId: res.body.events[1].eventId,
        type: 'PaymentStatusChanged',
        at: '2026-03-03T13:45:00.000Z',
        reason: 'provider',
        actor: { role: 'service' },
      },
    });
    // The same instant in another zone, typed into the URL as is: its '+' arrives as a space (form
    // encoding) and is read back as the offset's sign; before, this was 422 for a valid instant.
    const zoned = await t.request('GET', `${path}?at=2026-03-03T15:00:00+01:00`, { token: auditor });
    expect([zoned.status, zoned.body.at, zoned.body.stateAt]).toEqual([
      200,
      '2026-03-03T14:00:00.000Z',
      res.body.stateAt,
    ]);
    const before = await t.request('GET', `${path}?at=2026-03-03T13:00:00Z`, { token: auditor });
    expect(before.body.stateAt).toBeNull();
    const latest = await t.request('GET', path, { token: t.token(randomUUID(), ['admin']) });
    expect(latest.body.stateAt.status).toBe('received');

    expect((await t.request('GET', path, { token: t.token(p.clientId) })).status).toBe(403);
    const badAt = await t.request('GET', `${path}?at=3%20March`, { token: auditor });
    expect(badAt.status).toBe(422);
    expect(badAt.body.detail[0].loc).toEqual(['query', 'at']);
    const unknown = await t.request('GET', `/api/v1/audit/payments/${randomUUID()}/events`, {
      token: auditor,
    });
    expect(unknown.status).toBe(404);
  });

  it('replays a payment whose domain times run backwards (clock skew) as a state one revision had', async () => {
    now = new Date('2026-03-05T13:30:00.000Z');
    const p = await createPayment({ expiresInMs: 10 * HOUR });
    now = new Date('2026-03-05T14:30:00.000Z'); // an instance whose clock runs ahead
    await update(p.paymentId, { status: 'checkout', providerEventId: 'evt_s1', clientSecret: 'cs_s1' });
    now = new Date('2026-03-05T14:10:00.000Z'); // the next update lands on one whose clock does not
    expect((await update(p.paymentId, { status: 'failed', providerEventId: 'evt_s2' })).status).toBe(200);
    const auditor = t.token(randomUUID(), ['auditor']);
    const path = `/api/v1/audit/payments/${p.paymentId}/events`;
    // At 14:20 the checkout (14:30) had not happened, so neither had the failure decided after it: the
    // payment was as created. Before, the failure alone was folded in: a state no revision of the log had
    // (failed, but without the checkout's client secret), labelled revision 2.
    const res = await t.request('GET', `${path}?at=2026-03-05T14:20:00Z`, { token: auditor });
    expect(res.status).toBe(200);
    expect(res.body.stateAt).toMatchObject({ status: 'awaiting', revision: 0 });
    const after = await t.request('GET', `${path}?at=2026-03-05T14:30:00Z`, { token: auditor });
    // The secret was set (an auditor sees that, not its value).
    expect(after.body.stateAt).toMatchObject({ status: 'failed', clientSecret: '[redacted]', revision: 2 });
  });

  it('expires an unpaid payment at its expiresAt (system actor), and leaves a received one alone', async () => {
    now = new Date('2026-03-04T09:00:00.000Z');
    const unpaid = await createPayment({ expiresInMs: HOUR });
    const paid = await createPayment({ expiresInMs: HOUR });
    await update(paid.paymentId, { status: 'checkout' });
    await update(paid.paymentId, { status: 'received' });

    now = new Date('2026-03-04T09:59:59.000Z');
    await t.system.sweepExpiredPayments();
    expect(await streamLength(unpaid.paymentId)).toBe(1);

    now = new Date('2026-03-04T10:00:00.000Z');
    // The periodic sweep may have run first at this clock; either way the payment is expired once.
    await t.system.sweepExpiredPayments();
    const { events } = await t.system.deps.store.readStream(paymentStream(unpaid.paymentId));
    expect(events.map((e) => e.data)).toEqual([
      expect.objectContaining({ status: 'awaiting' }),
      expect.objectContaining({ from: 'awaiting', to: 'canceled', reason: 'expired', at: now.toISOString() }),
    ]);
    expect(events[1]?.metadata.actor).toEqual({
      userId: '00000000-0000-0000-0000-000000000000',
      role: 'system',
    });
    expect(await streamLength(paid.paymentId)).toBe(3);

    // Sweeping again changes nothing: the expired one left the due list, the received one never expires.
    await t.system.sweepExpiredPayments();
    expect(await streamLength(unpaid.paymentId)).toBe(2);
    expect(await t.system.runner.waitFor(await t.system.deps.store.headPosition(), 3000)).toBe(true);
    const view = await t.request('GET', `/api/v1/payment/${unpaid.paymentId}`, {
      token: t.token(unpaid.clientId),
    });
    expect(view.body.status).toBe('canceled');
    expect(view.body.history).toEqual([
      {
        from: 'awaiting',
        to: 'canceled',
        at: now.toISOString(),
        reason: 'expired',
        actor: { userId: '00000000-0000-0000-0000-000000000000', role: 'system' },
      },
    ]);
  });

  it('leaves a payment in checkout to the provider past its deadline, and expires it once it has failed', async () => {
    now = new Date('2026-03-05T09:00:00.000Z');
    const p = await createPayment({ expiresInMs: HOUR });
    await update(p.paymentId, { status: 'checkout' });
    expect(await t.system.runner.waitFor(await t.system.deps.store.headPosition(), 3000)).toBe(true);
    now = new Date('2026-03-05T11:00:00.000Z');
    await t.system.sweepExpiredPayments();
    expect(await streamLength(p.paymentId)).toBe(2); // created, checkout: money may be in flight
    await update(p.paymentId, { status: 'failed' });
    expect(await t.system.runner.waitFor(await t.system.deps.store.headPosition(), 3000)).toBe(true);
    await t.system.sweepExpiredPayments();
    const { events } = await t.system.deps.store.readStream(paymentStream(p.paymentId));
    expect(events.map((e) => e.data)).toEqual([
      expect.objectContaining({ status: 'awaiting' }),
      expect.objectContaining({ to: 'checkout' }),
      expect.objectContaining({ to: 'failed' }),
      expect.objectContaining({ from: 'failed', to: 'canceled', reason: 'expired' }),
    ]);
  });

  it("records each expiry at the clock of its own decision, never before a provider's move made during the sweep", async () => {
    now = new Date('2026-03-07T09:00:00.000Z');
    const first = await createPayment({ expiresInMs: HOUR });
    const second = await createPayment({ expiresInMs: HOUR + 1000 });
    // The service's own sweeper stays before both deadlines (its clock is `now`); this one runs past them.
    let sweepNow = Date.parse('2026-03-07T10:01:00.000Z');
    const { db, store, log } = t.system.deps;
    // While the first expiry is decided, the provider moves the second to checkout and then failed, a
    // minute later (another instance, or a sweep long enough). The second is then expired after that move.
    const stepped: EventStore = {
      ...store,
      async readStream(name, opts) {
        if (name === paymentStream(first.paymentId) && sweepNow < Date.parse('2026-03-07T10:02:00.000Z')) {
          sweepNow += 60_000;
          const at = new Date(sweepNow).toISOString();
          const move = (from: string, to: string) => ({
            type: 'PaymentStatusChanged',
            data: { paymentId: second.paymentId, groupId: second.groupId, from, to, at, reason: 'provider' },
            metadata: { actor: { userId: randomUUID(), role: 'service' } },
          });
          await store.append(paymentStream(second.paymentId), [
            move('awaiting', 'checkout'),
            move('checkout', 'failed'),
          ]);
          sweepNow += 1;
        }
        return store.readStream(name, opts);
      },
    };
    const sweeper = createPaymentExpirySweeper({ db, store: stepped, log, clock: () => new Date(sweepNow) });
    // Earlier tests' payments left due are expired by this sweep too.
    expect(await sweeper.sweep()).toBeGreaterThanOrEqual(2);
    expect((await store.readStream(paymentStream(first.paymentId))).events[1]?.data).toMatchObject({
      to: 'canceled',
      reason: 'expired',
      at: '2026-03-07T10:01:00.000Z',
    });
    const { events } = await store.readStream(paymentStream(second.paymentId));
    const times = events.slice(1).map((e) => {
      const d = e.data as PaymentStatusChanged['data'];
      return `${d.to}@${d.at}`;
    });
    expect(times).toEqual([
      'checkout@2026-03-07T10:02:00.000Z',
      'failed@2026-03-07T10:02:00.000Z',
      'canceled@2026-03-07T10:02:00.001Z',
    ]);
  });

  it('at the deadline, whichever of the sweep and a provider update is written first wins, never both', async () => {
    now = new Date('2026-03-06T09:00:00.000Z');
    const provider = await createPayment({ expiresInMs: HOUR });
    const sweep = await createPayment({ expiresInMs: HOUR });
    expect(await t.system.runner.waitFor(await t.system.deps.store.headPosition(), 3000)).toBe(true);
    // A millisecond past both deadlines, before any sweep: the provider's checkout is applied as at any time.
    now = new Date('2026-03-06T10:00:00.001Z');
    expect((await update(provider.paymentId, { status: 'checkout', providerEventId: 'b-1' })).status).toBe(
      200,
    );
    expect(await t.system.runner.waitFor(await t.system.deps.store.headPosition(), 3000)).toBe(true);
    await t.system.sweepExpiredPayments();
    // In the provider's hands now: not expired, and its outcome is taken.
    expect(
      (await update(provider.paymentId, { status: 'received', providerEventId: 'b-2' })).body.status,
    ).toBe('received');
    // Swept first: the payment is closed, and the provider's checkout after it is refused, not applied.
    const late = await update(sweep.paymentId, { status: 'checkout', providerEventId: 'b-3' });
    expect(late.status).toBe(409);
    expect(late.body.error).toBe('invalid_transition');
    const reasons = async (id: string) =>
      (await t.system.deps.store.readStream(paymentStream(id))).events.map((e) =>
        e.type === 'PaymentStatusChanged'
          ? `${(e.data as PaymentStatusChanged['data']).to}:${(e.data as PaymentStatusChanged['data']).reason}`
          : e.type,
      );
    expect(await reasons(provider.paymentId)).toEqual([
      'PaymentCreated',
      'checkout:provider',
      'received:provider',
    ]);
    expect(await reasons(sweep.paymentId)).toEqual(['PaymentCreated', 'canceled:expired']);
  });
});

/**
 * What the booking side writes when a client books, straight to `store`: the booking listed on the client's
 * bookings, then its payment in `awaiting`. Answers the payment and the position of its event.
 */
async function listedPayment(
  store: EventStore,
  clientId: string,
  createdAt: string,
  opts: { coachId?: string; expiresAt?: string } = {},
) {
  const p = {
    paymentId: randomUUID(),
    groupId: randomUUID(),
    status: 'awaiting' as const,
    price: 49.5,
    currency: 'EUR',
    methodId: 2,
    method: 'card',
    coachId: opts.coachId ?? randomUUID(),
    clientId,
    serviceId: randomUUID(),
    expiresAt: opts.expiresAt ?? new Date(T0 + HOUR).toISOString(),
    createdAt,
  };
  const listed: BookingListed['data'] = {
    groupId: p.groupId,
    clientId,
    coachId: p.coachId,
    serviceId: p.serviceId,
    paymentId: p.paymentId,
    sessionIds: [],
    bookedAt: createdAt,
  };
  await store.append(clientBookingsStream(clientId), [{ type: 'BookingListed', data: listed }]);
  const res = await store.append(paymentStream(p.paymentId), [
    { type: 'PaymentCreated', data: p, metadata: { actor: { userId: clientId, role: 'client' } } },
  ]);
  return { payment: p, position: res.position };
}

/**
 * A store wrapper for endpoint 17's races: the second read of `race.target`'s payment stream first appends a
 * provider's cancel of it (event `providerEventId`), as a delivery running beside the request would.
 */
const canceledOnSecondRead =
  (race: { target: string; reads: number }, now: Date, service: string, providerEventId: string) =>
  (store: EventStore): Partial<EventStore> => ({
    async readStream(streamName, opts) {
      if (race.target && streamName === paymentStream(race.target) && ++race.reads === 2) {
        const { events } = await store.readStream(streamName);
        const created = events[0]!.data as { groupId: string };
        await store.append(streamName, [
          {
            type: 'PaymentStatusChanged',
            data: {
              paymentId: race.target,
              groupId: created.groupId,
              from: 'awaiting',
              to: 'canceled',
              at: now.toISOString(),
              reason: 'provider',
              providerEventId,
            },
            metadata: { actor: { userId: service, role: 'service' } },
          },
        ]);
      }
      return store.readStream(streamName, opts);
    },
  });

describe('endpoint 17: a provider event delivered twice at once', () => {
  it('applies both deliveries to one payment, even when the first lands while the second looks', async () => {
    const now = new Date(T0);
    const race = { target: '', reads: 0 };
    const service = randomUUID();
    const providerEventId = 'evt_twice_at_once';
    // The first delivery's cancel is written right after the second delivery first read the payment.
    const { t, inner, close } = await systemOnSteppedStore(
      now,
      canceledOnSecondRead(race, now, service, providerEventId),
    );
    try {
      const clientId = randomUUID();
      const create = async (createdAt: string) => (await listedPayment(inner, clientId, createdAt)).payment;
      const older = await create(new Date(T0).toISOString());
      const newer = await create(new Date(T0 + 1000).toISOString());
      race.target = newer.paymentId;
      const second = await t.request('POST', `/api/v1/payment/private/user/${clientId}/update`, {
        token: t.token(service, ['service']),
        body: { status: 'canceled', providerEventId },
      });
      expect(race.reads).toBeGreaterThanOrEqual(2);
      // The event was applied (by the first delivery) to the newer payment: the repeat answers it, and the
      // older booking's payment is left alone.
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ status: 'canceled', serviceId: newer.serviceId });
      expect((await inner.readStream(paymentStream(older.paymentId))).events).toHaveLength(1);
    } finally {
      await close();
    }
  });
});

describe('endpoint 17: two different provider events for one user at once', () => {
  it("moves the user's next open payment when the one it chose was closed by the other meanwhile", async () => {
    const now = new Date(T0);
    const race = { target: '', reads: 0 };
    const service = randomUUID();
    // Another event (evt_other) cancels the newest payment right after this request chose it.
    const { t, inner, close } = await systemOnSteppedStore(
      now,
      canceledOnSecondRead(race, now, service, 'evt_other'),
    );
    try {
      const clientId = randomUUID();
      const create = async (createdAt: string) => (await listedPayment(inner, clientId, createdAt)).payment;
      let at = T0;
      for (const body of [
        { status: 'canceled', providerEventId: 'evt_mine' },
        { status: 'canceled' }, // no event id: the newest open payment when it is decided, too
      ]) {
        race.target = '';
        const older = await create(new Date((at += 1000)).toISOString());
        const newer = await create(new Date((at += 1000)).toISOString());
        race.target = newer.paymentId;
        race.reads = 0;
        const res = await t.request('POST', `/api/v1/payment/private/user/${clientId}/update`, {
          token: t.token(service, ['service']),
          body,
        });
        expect(race.reads).toBeGreaterThanOrEqual(2);
        // Sent a moment later it would have found the older payment the newest open one: so it does now.
        // Before, it was 409 invalid_transition (canceled -> canceled) while the user had an open payment.
        expect([res.status, res.body.serviceId]).toEqual([200, older.serviceId]);
        const { events } = await inner.readStream(paymentStream(older.paymentId));
        expect(events.map((e) => (e.data as { to?: string }).to)).toEqual([undefined, 'canceled']);
      }
    } finally {
      await close();
    }
  });
});
