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
});
