import { randomUUID } from 'node:crypto';
import { idempotencyTag } from '../../src/http/idempotency';
import { receivedRequestHash, requestHash } from '../../src/http/requestIdentity';
import { marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * A keyed request is "the same request" when its body is the same JSON value, whatever order its object
 * keys came in (many JSON libraries do not keep it): before, the hash was taken of the body's text as
 * received, so a retry serialised with another key order was 422 `idempotency_key_reused`. Keys claimed
 * before this change (their row holding only that hash) still match their retries, and the tag a keyed
 * request's events carry (from which its ids derive) is computed as before, so a retry that crosses the
 * change names the same ids, even where the key's row is lost.
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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const addressBody = { lat: 1, lng: 2, name: 'Home', address: 'a', zoom: 3, isDefault: true };
const reordered = { isDefault: true, zoom: 3, address: 'a', name: 'Home', lng: 2, lat: 1 };
const serviceBody = { sessionMinutesDuration: 60, priceCurrency: 'EUR', price: 10, name: 'Once' };

const postAddress = (token: string, key: string, body: unknown) =>
  t.request('POST', '/api/v1/nav/addreses', { token, body, headers: { 'idempotency-key': key } });

/**
 * Turns the key's row into what the code before this change left: only the hash of the body's text as
 * received (no value hash); with `died`, claimed without an answer (its process killed before answering).
 */
async function asClaimedBefore(scope: string, key: string, path: string, body: unknown, died: boolean) {
  const r = await t.system.deps.db.query(
    `UPDATE idempotency_keys SET request_hash = $3, value_hash = NULL, created_at = now()
       ${died ? ', status = NULL, response = NULL' : ''}
     WHERE scope = $1 AND key = $2`,
    [scope, key, receivedRequestHash('POST', path, body)],
  );
  expect(r.rowCount).toBe(1);
}

async function coachServices(coach: { id: string; token: string }) {
  const list = await t.request('GET', `/api/v1/coach/${coach.id}/services`, { token: coach.token });
  return (list.body as { id: string; name: string }[]).filter((s) => s.name === 'Once');
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
  // Another value is still another request.
  const other = await postAddress(user.token, key, { ...reordered, zoom: 4 });
  expect(other.status).toBe(422);
  expect(other.body).toMatchObject({ error: 'idempotency_key_reused' });
  const list = await t.request('GET', '/api/v1/nav/addreses', { token: user.token });
  expect(list.body).toHaveLength(1);
});

it('refuses a key over 200 characters at the header, in the 422 detail shape, writing nothing', async () => {
  const user = await m.client();
  const res = await postAddress(user.token, 'k'.repeat(201), addressBody);
  expect(res.status).toBe(422);
  expect(res.body).toEqual({
    detail: [
      {
        loc: ['header', 'idempotency-key'],
        msg: 'Idempotency-Key is longer than 200 characters',
        type: 'too_long',
      },
    ],
  });
  const listed = await t.request('GET', '/api/v1/nav/addreses', { token: user.token });
  expect(listed.body).toEqual([]);
  expect((await postAddress(user.token, 'k'.repeat(200), addressBody)).status).toBe(200);
});

it('forgets a 422 for its key: the corrected body under the same key is run, then replayed', async () => {
  const user = await m.client();
  const key = randomUUID();
  const bad = await postAddress(user.token, key, { ...addressBody, lat: 'north' });
  expect(bad.status).toBe(422);
  const fixed = await postAddress(user.token, key, addressBody);
  expect(fixed.status).toBe(200);
  const again = await postAddress(user.token, key, addressBody);
  expect(again.status).toBe(200);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(again.body).toEqual(fixed.body);
  expect((await t.request('GET', '/api/v1/nav/addreses', { token: user.token })).body).toHaveLength(1);
});

it('repeats sent together with a body refused 422: each is run (422) or asked to retry (409 with Retry-After)', async () => {
  // A repeat that found the key claimed, and its row gone when it read it (the first forgot its 422), was a
  // 409 without Retry-After ("being retried"); it now claims the key itself and is run. The race needs
  // several connections: PostgreSQL, not PGlite.
  const user = await m.client();
  const answers = new Set<string>();
  for (let round = 0; round < 20; round++) {
    const key = randomUUID();
    const all = await Promise.all(
      Array.from({ length: 12 }, () => postAddress(user.token, key, { ...addressBody, lat: 999 })),
    );
    for (const r of all) answers.add(`${r.status} ${r.headers.get('retry-after')} ${r.body.error ?? ''}`);
  }
  expect([...answers].filter((a) => a !== '422 null ' && a !== '409 1 conflict')).toEqual([]);
}, 60_000);

it('arrays keep their order; nested objects are compared by value; numbers as parsed', () => {
  const h = (body: unknown) => requestHash('POST', '/x', body);
  expect(h({ a: [1, 2], b: { c: 1, d: [{ e: 1, f: 2 }] } })).toBe(
    h({ b: { d: [{ f: 2, e: 1 }], c: 1 }, a: [1, 2] }),
  );
  expect(h({ a: [1, 2] })).not.toBe(h({ a: [2, 1] }));
  expect(h(JSON.parse('{"n": 1.0, "m": 1e2}'))).toBe(h({ m: 100, n: 1 }));
  // A "__proto__" key is a key like any other (not dropped by the sorting).
  expect(h(JSON.parse('{"__proto__": {"x": 1}}'))).not.toBe(h({}));
});

it('a crashed request retried with its keys in another order is run again with the same ids, once', async () => {
  const coach = await m.coach();
  const key = randomUUID();
  const create = (body: unknown) =>
    t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body,
      headers: { 'idempotency-key': key },
    });
  const first = await create(serviceBody);
  expect(first.status).toBe(200);
  await t.system.deps.db.query(
    `UPDATE idempotency_keys SET status = NULL, response = NULL, created_at = now() WHERE scope = $1 AND key = $2`,
    [coach.id, key],
  );
  await sleep(LEASE_MS + 200);
  const retry = await create({ name: 'Once', price: 10, priceCurrency: 'EUR', sessionMinutesDuration: 60 });
  expect(retry.status).toBe(200);
  expect(retry.body).toEqual(first.body);
  expect(await coachServices(coach)).toHaveLength(1);
});

it('a key answered before the change still replays its retry sent as before', async () => {
  const user = await m.client();
  const key = randomUUID();
  const first = await postAddress(user.token, key, reordered);
  expect(first.status).toBe(200);
  await asClaimedBefore(user.id, key, '/api/v1/nav/addreses', reordered, false);
  const retry = await postAddress(user.token, key, reordered);
  expect(retry.status).toBe(200);
  expect(retry.headers.get('idempotent-replayed')).toBe('true');
  expect(retry.body).toEqual(first.body);
});

it("a keyed request's events carry the tag the code before the change gave them; its row reads as before", async () => {
  const coach = await m.coach();
  const key = randomUUID();
  const res = await t.request('POST', '/api/v1/coach/services', {
    token: coach.token,
    body: serviceBody,
    headers: { 'idempotency-key': key },
  });
  expect(res.status).toBe(200);
  const { events } = await t.system.deps.store.readStream(`service-${res.body.id}`);
  const formerTag = idempotencyTag(
    coach.id,
    key,
    receivedRequestHash('POST', '/api/v1/coach/services', serviceBody),
  );
  expect(events.map((e) => e.metadata.idempotencyTag)).toEqual([formerTag]);
  // And its key's row holds in request_hash what the code before wrote there: an instance still running
  // that code (a rolling deploy, a rollback) matches a retry as it did.
  const row = await t.system.deps.db.query<{ request_hash: string }>(
    'SELECT request_hash FROM idempotency_keys WHERE scope = $1 AND key = $2',
    [coach.id, key],
  );
  expect(row.rows[0]!.request_hash).toBe(receivedRequestHash('POST', '/api/v1/coach/services', serviceBody));
});

it('a request that died before the change is run again after it with the same ids, once', async () => {
  const coach = await m.coach();
  const key = randomUUID();
  const create = () =>
    t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: serviceBody,
      headers: { 'idempotency-key': key },
    });
  const first = await create();
  expect(first.status).toBe(200);
  await asClaimedBefore(coach.id, key, '/api/v1/coach/services', serviceBody, true);
  await sleep(LEASE_MS + 200);
  const retry = await create();
  expect(retry.status).toBe(200);
  expect(retry.body).toEqual(first.body);
  expect(await coachServices(coach)).toHaveLength(1);

  // And with the key's row lost (a replaced read-model database), the log still knows.
  await t.system.deps.db.query('DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2', [coach.id, key]);
  const again = await create();
  expect(again.status).toBe(200);
  expect(again.body).toEqual(first.body);
  expect(await coachServices(coach)).toHaveLength(1);
});

it('the same request with its id in upper case replays the first answer', async () => {
  const coach = await m.coach();
  const created = await t.request('POST', '/api/v1/coach/services', {
    token: coach.token,
    body: serviceBody,
  });
  expect(created.status).toBe(200);
  const id = created.body.id as string;
  const admin = t.token(randomUUID(), ['admin']);
  const key = randomUUID();
  const approve = (path: string) =>
    t.request('POST', path, { token: admin, headers: { 'idempotency-key': key } });
  const first = await approve(`/api/v1/admin/services/${id}/approve`);
  expect(first.status).toBe(200);
  // The handlers read ids in any letter case: the same service, so the same request.
  const retry = await approve(`/api/v1/admin/services/${id.toUpperCase()}/approve`);
  expect([retry.status, retry.headers.get('idempotent-replayed')]).toEqual([200, 'true']);
  expect(retry.body).toEqual(first.body);
  // Another route under the same key is still another request.
  const reject = await t.request('POST', `/api/v1/admin/services/${id}/reject`, {
    token: admin,
    headers: { 'idempotency-key': key },
  });
  expect([reject.status, reject.body.error]).toEqual([422, 'idempotency_key_reused']);
});

it('the same request with a trailing slash on its path replays the first answer (the routes take both)', async () => {
  const token = t.token(randomUUID(), ['client']);
  const key = randomUUID();
  const first = await postAddress(token, key, addressBody);
  expect(first.status).toBe(200);
  // Sent as a client that adds the slash would (the harness's request checks paths against the document).
  const retry = await fetch(`${t.baseUrl}/api/v1/nav/addreses/`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: JSON.stringify(addressBody),
  });
  expect([retry.status, retry.headers.get('idempotent-replayed')]).toEqual([200, 'true']);
  expect(await retry.json()).toEqual(first.body);
  const list = await t.request('GET', '/api/v1/nav/addreses', { token });
  expect(list.body).toHaveLength(1);
});
