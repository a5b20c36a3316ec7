import { randomUUID } from 'node:crypto';
import * as identity from '../../src/http/requestIdentity';
import { marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * A keyed request is "the same request" when its body is the same JSON value, whatever order its object
 * keys came in (many JSON libraries do not keep it): before, the hash was taken of the body's text as
 * received, so a retry serialised with another key order was 422 `idempotency_key_reused`. Keys claimed by
 * the code before this change (their hash taken of the text as received) still match their retries, and a
 * retry of a request that died under that code names the same ids (its events' tag is unchanged).
 */

// The hash the middleware takes, switchable to the former one to produce what the code before left.
jest.mock('../../src/http/requestIdentity', () => {
  const actual = jest.requireActual('../../src/http/requestIdentity');
  return { ...actual, requestHash: jest.fn(actual.requestHash) };
});
const hashMock = identity.requestHash as jest.MockedFunction<typeof identity.requestHash>;
const actual = jest.requireActual('../../src/http/requestIdentity') as typeof identity;
/** What the code before this change hashed: the body's text in the order it arrived. */
const formerHash = actual.receivedRequestHash;

const now = new Date('2026-12-01T08:00:00Z');
const LEASE_MS = 1000;
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
beforeAll(async () => {
  t = await startTestSystem({ clock: () => now, env: { IDEMPOTENCY_LEASE_MS: String(LEASE_MS) } });
  m = marketplace(t);
});
afterAll(() => t?.close());
afterEach(() => hashMock.mockImplementation(actual.requestHash));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const addressBody = { lat: 1, lng: 2, name: 'Home', address: 'a', zoom: 3, isDefault: true };
const reordered = { isDefault: true, zoom: 3, address: 'a', name: 'Home', lng: 2, lat: 1 };

async function postAddress(token: string, key: string, body: unknown) {
  return t.request('POST', '/api/v1/nav/addreses', { token, body, headers: { 'idempotency-key': key } });
}

it('the same body with its keys in another order replays the first answer', async () => {
  const user = await m.client();
  const key = randomUUID();
  const first = await postAddress(user.token, key, addressBody);
  expect(first.status).toBe(200);
  const retry = await postAddress(user.token, key, reordered);
  expect(retry.status).toBe(200);
  expect(retry.headers.get('idempotent-replayed')).toBe('true');
  expect(retry.body).toEqual(first.body);
  // Another value is still another request: a changed field, or an array in another order.
  const other = await postAddress(user.token, key, { ...reordered, zoom: 4 });
  expect(other.status).toBe(422);
  expect(other.body).toMatchObject({ error: 'idempotency_key_reused' });
  const list = await t.request('GET', '/api/v1/nav/addreses', { token: user.token });
  expect(list.body).toHaveLength(1);
});

it('arrays keep their order; nested objects are compared by value; numbers as parsed', () => {
  const h = (body: unknown) => actual.requestHash('POST', '/x', body);
  expect(h({ a: [1, 2], b: { c: 1, d: [{ e: 1, f: 2 }] } })).toBe(
    h({ b: { d: [{ f: 2, e: 1 }], c: 1 }, a: [1, 2] }),
  );
  expect(h({ a: [1, 2] })).not.toBe(h({ a: [2, 1] }));
  expect(h(JSON.parse('{"n": 1.0, "m": 1e2}'))).toBe(h({ m: 100, n: 1 }));
  // A "__proto__" key is a key like any other (not dropped by the sorting).
  expect(h(JSON.parse('{"__proto__": {"x": 1}}'))).not.toBe(h({}));
  // Sorted keys hash as before the change (the tag of such a request does not move).
  expect(h({ a: 1, b: [{ c: 1, d: 2 }] })).toBe(
    actual.receivedRequestHash('POST', '/x', { a: 1, b: [{ c: 1, d: 2 }] }),
  );
});

it('a key answered before the change still replays its retry (same text)', async () => {
  const user = await m.client();
  const key = randomUUID();
  hashMock.mockImplementation(formerHash);
  const first = await postAddress(user.token, key, reordered);
  expect(first.status).toBe(200);
  hashMock.mockImplementation(actual.requestHash); // the deploy
  const retry = await postAddress(user.token, key, reordered);
  expect(retry.status).toBe(200);
  expect(retry.headers.get('idempotent-replayed')).toBe('true');
  expect(retry.body).toEqual(first.body);
});

it('a request that died under the code before is run again after the change with the same ids, once', async () => {
  const coach = await m.coach();
  const key = randomUUID();
  const serviceBody = { sessionMinutesDuration: 60, priceCurrency: 'EUR', price: 10, name: 'Once' };
  const create = () =>
    t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: serviceBody,
      headers: { 'idempotency-key': key },
    });
  hashMock.mockImplementation(formerHash);
  const first = await create();
  expect(first.status).toBe(200);
  // Killed before answering: claimed, no answer; its events are in the log with the former tag.
  const r = await t.system.deps.db.query(
    `UPDATE idempotency_keys SET status = NULL, response = NULL, created_at = now() WHERE scope = $1 AND key = $2`,
    [coach.id, key],
  );
  expect(r.rowCount).toBe(1);
  hashMock.mockImplementation(actual.requestHash); // the deploy
  await sleep(LEASE_MS + 200);
  const retry = await create();
  expect(retry.status).toBe(200);
  expect(retry.body).toEqual(first.body); // the same service id: the ids derive from the same tag
  const list = await t.request('GET', `/api/v1/coach/${coach.id}/services`, { token: coach.token });
  expect((list.body as { name: string }[]).filter((s) => s.name === 'Once')).toHaveLength(1);
});
