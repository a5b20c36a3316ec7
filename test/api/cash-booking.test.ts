import { randomUUID } from 'node:crypto';
import { paymentStream } from '../../commands/payments/events';
import { type TestSystem } from '../support/system';
import { apiSuite, type Marketplace } from '../support/apiSuite';

let t: TestSystem;
let m: Marketplace;
const clock = apiSuite('2026-12-01T08:00:00Z', (system, market) => {
  t = system;
  m = market;
});

const settled = async () =>
  expect(await t.system.runner.waitFor(await t.system.deps.store.headPosition(), 5000)).toBe(true);

const paymentEvents = async (paymentId: string) =>
  (await t.system.deps.store.readStream(paymentStream(paymentId))).events.map((e) => e.data);

describe('a booking paid in cash, to the coach at the session', () => {
  it('is not canceled as unpaid: its deadline is the first session, and the payment service records the money', async () => {
    clock.set('2026-12-01T08:00:00Z');
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { price: 80 });
    const client = await m.client();
    const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-02T10:00:00'], method: 'cash' },
    });
    expect(res.status).toBe(200);
    const session = res.body[0] as { id: string; paymentId: string };
    expect(res.body[0]).toMatchObject({ paymentState: 'awaiting', paymentExpirationAt: '02/12/2026' });
    const payment = await t.request('GET', `/api/v1/payment/${session.paymentId}`, { token: client.token });
    // 10:00 in Berlin: the session's start.
    expect(payment.body).toMatchObject({
      methodId: 2,
      status: 'awaiting',
      expiresAt: '2026-12-02T09:00:00.000Z',
    });

    // A card booking would have been canceled an hour before the start; the session is over now.
    clock.set('2026-12-02T12:00:00Z');
    await t.system.sweepExpiredPayments();
    await settled();
    expect(await paymentEvents(session.paymentId)).toHaveLength(1);
    expect(
      (await t.request('GET', `/api/v1/session/${session.id}`, { token: client.token })).body,
    ).toMatchObject({
      state: 'new',
      paymentState: 'awaiting',
    });

    // The coach was paid: the payment service records it (17, the user's open payment).
    const service = t.token(randomUUID(), ['service']);
    for (const status of ['checkout', 'received']) {
      const update = await t.request('POST', `/api/v1/payment/private/user/${client.id}/update`, {
        token: service,
        body: { status },
      });
      expect(update.status).toBe(200);
    }
    await settled();
    expect(
      (await t.request('GET', `/api/v1/payment/${session.paymentId}`, { token: client.token })).body,
    ).toMatchObject({
      status: 'received',
    });
  });

  it("books a cash package's later sessions before its first session (no package_unpaid)", async () => {
    clock.set('2026-12-01T08:00:00Z');
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { price: 240, numberOfSessions: 3 });
    const client = await m.client();
    const first = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-09T10:00:00'], method: 'cash' },
    });
    expect(first.status).toBe(200);
    const later = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-02T09:00:00'], packageId: first.body[0].groupId },
    });
    expect(later.status).toBe(200);
    expect(later.body).toHaveLength(1);
  });
});
