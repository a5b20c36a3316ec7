import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { signToken } from '../../src/http/auth';
import { EventStoreUnavailableError } from '../../src/eventstore/types';
import type { marketplace } from '../support/marketplace';
import { systemOnSteppedStore, touchServiceBeforeHold } from '../support/storeRaces';
import { startTestSystem, testEventStoreOnEsdb, type TestSystem } from '../support/system';

type Marketplace = ReturnType<typeof marketplace>;

/**
 * An answer that only says "not now" is not the request's outcome: a 409 `conflict` that asks to retry
 * (contention) and a 503 (the event store away) are not replayed to a retry with the same Idempotency-Key,
 * which runs the request again and books. An outcome (201/200, or a 409 `slot_unavailable`) still is.
 * Found by review: the retry used to get the stored 409 back for 24 hours. SQL stores (the contention is
 * made through the booking's multi-stream write).
 */
const describeSql = testEventStoreOnEsdb() ? describe.skip : describe;
const NOW = new Date('2026-12-01T08:00:00Z');

describeSql('Idempotency-Key and answers that ask for a retry', () => {
  let t: TestSystem;
  let m: Marketplace;
  let close: () => Promise<void>;
  /** Services changed right before the hold's write, this many times; appends failing as unavailable. */
  const race = { left: 0 };
  let unavailable = 0;

  beforeAll(async () => {
    ({ t, m, close } = await systemOnSteppedStore(NOW, (inner) => {
      const touching = touchServiceBeforeHold(inner, NOW, race)!;
      return {
        appendMany: async (appends) => {
          if (unavailable > 0) {
            unavailable--;
            throw new EventStoreUnavailableError(new Error('connection refused'));
          }
          return touching(appends);
        },
      };
    }));
  });
  afterAll(() => close?.());

  /** A booking by a new client of a new coach's service, with one Idempotency-Key for all its attempts. */
  const booking = async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const keyedBy = async () => {
      const client = await m.client();
      const key = randomUUID();
      return () =>
        t.request('POST', `/api/v1/service/${serviceId}`, {
          token: client.token,
          body: { slots: ['2026-12-02T10:00:00'] },
          headers: { 'idempotency-key': key },
        });
    };
    return { book: await keyedBy(), keyedBy };
  };

  it('runs the request again after a 409 conflict that asked for a retry, and then replays the booking', async () => {
    const { book } = await booking();
    race.left = 100;
    const first = await book();
    race.left = 0;
    expect(first.status).toBe(409);
    expect(first.body).toMatchObject({ error: 'conflict', message: expect.stringMatching(/retry/) });
    expect(first.headers.get('retry-after')).toBe('1');
    const retry = await book();
    expect(retry.headers.get('retry-after')).toBeNull();
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    const again = await book();
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(retry.body);
  });

  it('runs the request again after a 503', async () => {
    const { book } = await booking();
    unavailable = 1;
    const first = await book();
    expect(first.status).toBe(503);
    const retry = await book();
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  it('still replays an outcome: 409 slot_unavailable', async () => {
    const { book, keyedBy } = await booking();
    expect((await book()).status).toBe(200);
    const late = await keyedBy(); // another client, the same slot
    const refused = await late();
    expect(refused.status).toBe(409);
    expect(refused.headers.get('retry-after')).toBeNull();
    expect(refused.body.error).toBe('slot_unavailable');
    const replayed = await late();
    expect(replayed.status).toBe(409);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
  });
});

/**
 * A 5xx is never kept for a key (docs/api.md), also one the service answers by name: 503
 * `webhooks_not_configured` (no WEBHOOK_SIGNING_KEY yet) was replayed for 24 hours to the retry sent once
 * the operator had set the key and restarted.
 */
describe('Idempotency-Key and a 503 answered by name', () => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const env = { NODE_ENV: 'production', JWT_PUBLIC_KEY: publicKey, JWT_SECRET: '' };
  let before: TestSystem | undefined;
  let after: TestSystem | undefined;
  afterAll(async () => {
    await after?.close();
    await before?.close();
  });

  it('runs the registration again once webhooks are configured', async () => {
    before = await startTestSystem({ env });
    const token = signToken(before.config, randomUUID(), ['client'], { privateKey });
    const register = (t: TestSystem) =>
      t.request('POST', '/api/v1/notification/channel', {
        token,
        body: { type: 'webhook', address: 'https://hooks.example.com/in' },
        headers: { 'idempotency-key': 'webhook-1' },
      });
    const refused = await register(before);
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ error: 'webhooks_not_configured', code: 503 });

    // The operator sets the key and restarts (a new instance on the same database).
    after = await startTestSystem({
      env: { ...env, WEBHOOK_SIGNING_KEY: 'k'.repeat(40) },
      database: before.database,
    });
    const retry = await register(after);
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.body).toMatchObject({ type: 'webhook', secret: expect.stringMatching(/^whsec_/) });
  });
});
