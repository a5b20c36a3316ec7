import { randomUUID } from 'node:crypto';
import { paymentStream } from '../../commands/payments/events';
import { loadConfig } from '../../src/config';
import { createSystem } from '../../src/system';
import { testDatabase } from '../support/services';

// The deadline lives in the read model, not in a timer: a service that was down when the payment fell
// due expires it on its first sweep after starting again.
it('expires a payment that fell due while the service was stopped, on the next start', async () => {
  let now = new Date('2026-03-03T13:00:00.000Z');
  const database = await testDatabase();
  const config = loadConfig({ JWT_SECRET: 'test-secret' });
  const first = await createSystem(config, { db: database.db, clock: () => now });
  const paymentId = randomUUID();
  const clientId = randomUUID();
  const res = await first.deps.store.append(paymentStream(paymentId), [
    {
      type: 'PaymentCreated',
      data: {
        paymentId,
        groupId: randomUUID(),
        status: 'awaiting',
        price: 30,
        currency: 'EUR',
        methodId: 1,
        method: 'card',
        coachId: randomUUID(),
        clientId,
        serviceId: randomUUID(),
        expiresAt: '2026-03-03T14:00:00.000Z',
        createdAt: now.toISOString(),
      },
    },
  ]);
  expect(await first.runner.waitFor(res.position, 3000)).toBe(true);
  await first.close(); // the database stays: it was passed in

  now = new Date('2026-03-03T15:00:00.000Z');
  const restarted = await createSystem(config, { db: database.db, clock: () => now });
  try {
    // No explicit sweep here: the sweeper runs once as the system starts.
    const deadline = Date.now() + 5000;
    let events = (await restarted.deps.store.readStream(paymentStream(paymentId))).events;
    while (events.length < 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      events = (await restarted.deps.store.readStream(paymentStream(paymentId))).events;
    }
    expect(events[1]?.data).toMatchObject({ from: 'awaiting', to: 'canceled', reason: 'expired' });
  } finally {
    await restarted.close();
    await database.drop();
  }
});
