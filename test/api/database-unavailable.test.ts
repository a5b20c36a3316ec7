import { randomUUID } from 'node:crypto';
import { switchableDatabase, testDatabase, type TestDatabase } from '../support/services';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * The read-model database away (PostgreSQL restarting, failing over, unreachable): requests that need it
 * answer 503 `service_unavailable` ("retry shortly"), as they do while the event store is away, not 500
 * "an unexpected error occurred"; and they answer as before once it is back.
 */
let t: TestSystem;
let database: TestDatabase;
let closeSwitch: () => Promise<void>;
let away: { now: boolean };

beforeAll(async () => {
  database = await testDatabase();
  const switched = await switchableDatabase(database.db);
  ({ away, close: closeSwitch } = switched);
  t = await startTestSystem({ db: switched.db });
});
afterAll(async () => {
  await t?.close();
  await closeSwitch?.();
  await database?.drop();
});

it('answers 503 service_unavailable while the database is away, and serves again once it is back', async () => {
  const client = t.token(randomUUID(), ['client']);
  const keyed = (key: string) =>
    t.request('POST', '/api/v1/nav/addreses', {
      token: client,
      headers: { 'Idempotency-Key': key },
      body: { lat: 52.52, lng: 13.405, name: 'Home', address: 'Alexanderplatz 1' },
    });
  expect((await t.request('GET', '/api/v1/nav/addreses', { token: client })).status).toBe(200);

  away.now = true;
  try {
    const read = await t.request('GET', '/api/v1/nav/addreses', { token: client });
    expect([read.status, read.body]).toEqual([
      503,
      { error: 'service_unavailable', message: expect.stringMatching(/database/), code: 503 },
    ]);
    // A keyed command meets it first at its key.
    // Clients (and proxies) are told when to try again.
    expect(read.headers.get('retry-after')).toBe('1');
    const write = await keyed('while-away');
    expect([write.status, write.body.error]).toEqual([503, 'service_unavailable']);
    expect(write.headers.get('retry-after')).toBe('1');
    const health = await t.request('GET', '/healthz');
    expect([health.status, health.body.database.status]).toEqual([503, 'down']);
  } finally {
    away.now = false;
  }

  // Nothing was kept for the key: its retry runs the request.
  const retried = await keyed('while-away');
  expect([retried.status, retried.body[0]?.name]).toEqual([200, 'Home']);
  expect((await t.request('GET', '/api/v1/nav/addreses', { token: client })).body).toHaveLength(1);
});
