import { randomUUID } from 'node:crypto';
import { requestHash } from '../../src/http/idempotency';
import { marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * An Idempotency-Key whose request died without an answer (the process was killed) is not stuck: after
 * the lease a retry runs the request again, and what the first run stored in the log is its outcome, so
 * the retry answers like the first and nothing is booked twice. The states a killed request leaves are
 * produced here exactly: the key's row claimed without an answer, with or without the first run's events.
 */

const now = new Date('2026-12-01T08:00:00Z');
const LEASE_MS = 1000;
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
beforeAll(async () => {
  t = await startTestSystem({ clock: () => now, env: { IDEMPOTENCY_LEASE_MS: String(LEASE_MS) } });
  m = marketplace(t);
});
afterAll(() => t?.close());

const SLOT = '2026-12-02T10:00:00';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Turns the key's row into what a request killed before answering leaves: claimed, no answer. */
async function killedBeforeAnswering(userId: string, key: string) {
  const r = await t.system.deps.db.query(
    `UPDATE idempotency_keys SET status = NULL, response = NULL, created_at = now() WHERE scope = $1 AND key = $2`,
    [userId, key],
  );
  expect(r.rowCount).toBe(1);
}

async function setting() {
  const coach = await m.coach();
  const serviceId = await m.offering(coach);
  const client = await m.client();
  const book = (key: string, slots = [SLOT]) =>
    t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots },
      headers: { 'idempotency-key': key },
    });
  const sessions = async () =>
    (await t.request('GET', '/api/v1/sessions', { token: client.token })).body as { id: string }[];
  return { client, serviceId, book, sessions };
}

it('a booking that was stored but never answered: 409 within the lease, then the original outcome, booked once', async () => {
  const { client, book, sessions } = await setting();
  const key = randomUUID();
  const first = await book(key);
  expect(first.status).toBe(200);
  await killedBeforeAnswering(client.id, key);

  const during = await book(key);
  expect(during.status).toBe(409);
  expect(during.body).toMatchObject({ error: 'conflict', message: expect.stringMatching(/in progress/) });
  expect(during.headers.get('retry-after')).toBe('1');

  await sleep(LEASE_MS + 200);
  const retry = await book(key);
  expect(retry.status).toBe(200);
  expect(retry.body).toEqual(first.body); // same session, group and payment ids
  expect(await sessions()).toHaveLength(1);
  // And it is remembered again: the next repeat is a plain replay.
  const replay = await book(key);
  expect(replay.headers.get('idempotent-replayed')).toBe('true');
  expect(replay.body).toEqual(first.body);
});

it('a booking whose request died before writing anything is run by the retry, once', async () => {
  const { client, serviceId, book, sessions } = await setting();
  const key = randomUUID();
  // The row a request leaves when it is killed right after claiming its key, before any event.
  await t.system.deps.db.query(
    `INSERT INTO idempotency_keys (scope, key, request_hash) VALUES ($1, $2, $3)`,
    [client.id, key, requestHash('POST', `/api/v1/service/${serviceId}`, { slots: [SLOT] })],
  );
  expect((await book(key)).status).toBe(409);
  await sleep(LEASE_MS + 200);
  const [a, b] = await Promise.all([book(key), book(key)]);
  // One retry takes the key over; a concurrent second one is told it is in progress.
  expect([a.status, b.status].sort()).toEqual([200, 409]);
  expect(await sessions()).toHaveLength(1);
  const replay = await book(key);
  expect(replay.status).toBe(200);
  expect(replay.body).toEqual((a.status === 200 ? a : b).body);
});

it('the same key with another body is still 422, and a lost key table still gives the original outcome', async () => {
  const { client, book, sessions } = await setting();
  const key = randomUUID();
  const first = await book(key);
  expect(first.status).toBe(200);
  const other = await book(key, ['2026-12-02T14:00:00']);
  expect(other.status).toBe(422);
  expect(other.body).toMatchObject({ error: 'idempotency_key_reused' });
  // The key table is only a cache: without its row (a replaced read-model database), the log still knows.
  await t.system.deps.db.query('DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2', [
    client.id,
    key,
  ]);
  const again = await book(key);
  expect(again.status).toBe(200);
  expect(again.body).toEqual(first.body);
  expect(await sessions()).toHaveLength(1);
});

it('other keyed commands answer their original outcome too (address, service)', async () => {
  const user = await m.client();
  const key = randomUUID();
  const body = { lat: 1, lng: 2, name: 'Home', address: 'a', zoom: 3, isDefault: true };
  const first = await t.request('POST', '/api/v1/nav/addreses', {
    token: user.token,
    body,
    headers: { 'idempotency-key': key },
  });
  expect(first.status).toBe(200);
  await killedBeforeAnswering(user.id, key);
  await sleep(LEASE_MS + 200);
  const retry = await t.request('POST', '/api/v1/nav/addreses', {
    token: user.token,
    body,
    headers: { 'idempotency-key': key },
  });
  expect(retry.status).toBe(200);
  expect(retry.body).toEqual(first.body);
  const list = await t.request('GET', '/api/v1/nav/addreses', { token: user.token });
  expect(list.body).toHaveLength(1);

  const coach = await m.coach();
  const serviceBody = { name: 'Once', price: 10, priceCurrency: 'EUR', sessionMinutesDuration: 60 };
  const created = await t.request('POST', '/api/v1/coach/services', {
    token: coach.token,
    body: serviceBody,
    headers: { 'idempotency-key': key },
  });
  expect(created.status).toBe(200);
  await killedBeforeAnswering(coach.id, key);
  await sleep(LEASE_MS + 200);
  const recreated = await t.request('POST', '/api/v1/coach/services', {
    token: coach.token,
    body: serviceBody,
    headers: { 'idempotency-key': key },
  });
  expect(recreated.status).toBe(200);
  expect(recreated.body).toEqual(created.body);
});
