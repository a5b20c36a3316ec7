import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createPgDatabase } from '../../src/db/pg';
import type { Database } from '../../src/db/database';
import { postgresServer, freshPostgres, freezableProxy, type TestDatabase } from '../support/services';
import { startTestSystem, type TestSystem } from '../support/system';
import { marketplace } from '../support/marketplace';
import { loadConfig } from '../../src/config';
import { openDatabase } from '../../src/system';
import { isDatabaseUnavailable } from '../../src/db/unavailable';

/**
 * A database that stops answering without closing its connections (a frozen server, a blackholed route, a
 * hung failover): `/healthz` says so within seconds, and requests answer 503 once a statement has had
 * DATABASE_QUERY_TIMEOUT_MS without an answer. Both waited for TCP keepalive: minutes, or for ever for a
 * stopped server whose kernel still answers the probes.
 */
// A proxy in front of a PostgreSQL server: not for the embedded PGlite, which has no connection to freeze.
const describePg = process.env.DATABASE_URL ? describe : describe.skip;
if (!process.env.DATABASE_URL)
  console.log('database-frozen: skipped, it needs DATABASE_URL (a PostgreSQL server)');

const QUERY_TIMEOUT_MS = 1_500;
const CONNECT_TIMEOUT_MS = 2_000;
let database: TestDatabase;
let proxy: Awaited<ReturnType<typeof freezableProxy>>;
let db: Database;
let t: TestSystem;

describePg('the database frozen', () => {
  beforeAll(async () => {
    database = await freshPostgres((await postgresServer())!);
    proxy = await freezableProxy(database.url!);
    db = createPgDatabase(proxy.url, {
      max: 6,
      queryTimeoutMs: QUERY_TIMEOUT_MS,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
    });
    t = await startTestSystem({ db });
  });
  afterEach(() => proxy.thaw());
  afterAll(async () => {
    await t?.close().catch(() => undefined);
    await db?.close().catch(() => undefined);
    await proxy?.close();
    await database?.drop();
  });

  it('GET /healthz answers 503 within seconds, naming the database (and the event store when on it) as down', async () => {
    expect((await t.request('GET', '/healthz')).status).toBe(200);
    proxy.freeze();
    const started = Date.now();
    const res = await t.request('GET', '/healthz');
    expect(Date.now() - started).toBeLessThan(6_000);
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      status: 'degraded',
      database: { status: 'down' },
      // On the database when it is the event store too; EventStoreDB is not behind the frozen proxy.
      eventStore: { status: t.system.deps.store.kind === 'esdb' ? 'ok' : 'down' },
      leases: null,
    });
    const admin = await t.request('GET', '/healthz', {
      token: t.token('00000000-0000-4000-8000-000000000001', ['admin']),
    });
    // The probe's own limit, or the driver's (statement or connection) when that came first.
    // (`Query read timeout`, `timeout exceeded when trying to connect`, `... due to connection timeout`).
    expect(admin.body.database.status).toMatch(/^down: .*(no answer within \d+ s|timeout)/i);
  }, 30_000);

  it('a read answers 503 service_unavailable after the query timeout, and 200 once the database answers again', async () => {
    const client = t.token(randomUUID(), ['client']);
    const addresses = () => t.request('GET', '/api/v1/nav/addreses', { token: client });
    expect((await addresses()).status).toBe(200);
    proxy.freeze();
    const started = Date.now();
    const read = await addresses();
    const waited = Date.now() - started;
    expect([read.status, read.body]).toEqual([
      503,
      { error: 'service_unavailable', message: expect.stringMatching(/database/), code: 503 },
    ]);
    expect(read.headers.get('retry-after')).toBe('1');
    // At worst a wait for a connection (the others wait for their answers too), then for the answer.
    expect(waited).toBeLessThan(CONNECT_TIMEOUT_MS + QUERY_TIMEOUT_MS + 2_000);
    proxy.thaw();
    // The connection that waited was closed, not handed to the next request with its answer still due.
    for (let i = 0; i < 8; i++) expect((await addresses()).status).toBe(200);
  }, 30_000);

  it('a keyed booking answers 503 while the database is frozen, and its retry books once', async () => {
    const m = marketplace(t);
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const book = () =>
      t.request('POST', `/api/v1/service/${serviceId}`, {
        token: client.token,
        headers: { 'Idempotency-Key': 'frozen-booking' },
        body: { slots: ['2026-12-02T10:00:00'] },
      });
    proxy.freeze();
    const started = Date.now();
    const during = await book();
    expect([during.status, during.body.error]).toEqual([503, 'service_unavailable']);
    expect(Date.now() - started).toBeLessThan(20_000);
    proxy.thaw();
    const retried = await book();
    expect(retried.status).toBe(200);
    const again = await book();
    expect(again.body).toEqual(retried.body);
    const sessions = await t.request('GET', '/api/v1/sessions?as=client', { token: client.token });
    expect(sessions.body.map((x: { id: string }) => x.id)).toEqual([retried.body[0].id]);
  }, 60_000);

  it('DATABASE_QUERY_TIMEOUT_MS reaches the service; migrations (a transaction marked unbounded) wait as long as they take', async () => {
    const bounded = await openDatabase(
      loadConfig({ DATABASE_URL: proxy.url, DATABASE_QUERY_TIMEOUT_MS: '300' }),
    );
    try {
      const slow = await bounded.query('SELECT pg_sleep(0.8)').then(
        () => null,
        (e: unknown) => e,
      );
      expect(isDatabaseUnavailable(slow)).toBe(true);
      // The pool goes on with a new connection.
      expect((await bounded.query<{ n: number }>('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
      const migration = await bounded.transaction(
        async (tx) => (await tx.query<{ n: number }>('SELECT pg_sleep(0.8), 2 AS n')).rows[0]!.n,
        { unbounded: true },
      );
      expect(migration).toBe(2);
    } finally {
      await bounded.close();
    }
  });

  it('a statement the server cancels (statement_timeout, pg_cancel_backend, lock_timeout) is 503, not 500', async () => {
    const client = t.token(randomUUID(), ['client']);
    const locker = new Client({ connectionString: database.url });
    const admin = new Client({ connectionString: database.url });
    await Promise.all([locker.connect(), admin.connect()]);
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE addresses IN ACCESS EXCLUSIVE MODE');
      const pending = t.request('GET', '/api/v1/nav/addreses', { token: client });
      // The read waits for the lock; the server then cancels it, as its statement_timeout would.
      let canceled = 0;
      for (let i = 0; i < 100 && canceled === 0; i++) {
        const { rows } = await admin.query<{ canceled: boolean }>(
          `SELECT pg_cancel_backend(pid) AS canceled FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FROM addresses%'`,
        );
        canceled = rows.filter((r) => r.canceled).length;
        if (canceled === 0) await new Promise((r) => setTimeout(r, 50));
      }
      expect(canceled).toBe(1);
      const read = await pending;
      expect([read.status, read.body]).toEqual([
        503,
        { error: 'service_unavailable', message: expect.stringMatching(/database/), code: 503 },
      ]);
      expect(read.headers.get('retry-after')).toBe('1');
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await Promise.all([locker.end(), admin.end()]);
    }
    expect((await t.request('GET', '/api/v1/nav/addreses', { token: client })).status).toBe(200);
  });
});
