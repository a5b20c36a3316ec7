import net from 'node:net';
import { createPgDatabase } from '../../src/db/pg';
import type { Database } from '../../src/db/database';
import { postgresServer, freshPostgres, type TestDatabase } from '../support/services';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * A database that stops answering without closing its connections (a frozen server, a blackholed route):
 * `/healthz` still answers, 503 naming the database, within seconds; it waited for TCP keepalive (minutes)
 * and a load balancer's probe timed out without learning why.
 */
// A proxy in front of a PostgreSQL server: not for the embedded PGlite, which has no connection to freeze.
const describePg = process.env.DATABASE_URL ? describe : describe.skip;
if (!process.env.DATABASE_URL)
  console.log('health-frozen-database: skipped, it needs DATABASE_URL (a PostgreSQL server)');

let database: TestDatabase;
let proxy: net.Server;
let db: Database;
let t: TestSystem;
const frozen = { now: false };
const sockets = new Set<net.Socket>();

describePg('GET /healthz with the database frozen', () => {
  beforeAll(async () => {
    database = await freshPostgres((await postgresServer())!);
    const target = new URL(database.url!);
    // A TCP proxy to the real server that, when frozen, keeps every connection open and passes nothing on.
    proxy = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => sockets.delete(s));
      }
      client.on('data', (d) => frozen.now || upstream.write(d));
      upstream.on('data', (d) => frozen.now || client.write(d));
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const url = new URL(database.url!);
    url.port = String((proxy.address() as net.AddressInfo).port);
    url.hostname = '127.0.0.1';
    db = createPgDatabase(url.toString(), { max: 6 });
    t = await startTestSystem({ db });
  });
  afterAll(async () => {
    frozen.now = false;
    for (const s of sockets) s.destroy();
    await t?.close().catch(() => undefined);
    await db?.close().catch(() => undefined);
    await new Promise((r) => proxy?.close(r));
    await database?.drop();
  });

  it('answers 503 within seconds, naming the database (and the event store when on it) as down', async () => {
    expect((await t.request('GET', '/healthz')).status).toBe(200);
    frozen.now = true;
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
    expect(admin.body.database.status).toMatch(/^down: no answer within \d+ s$/);
  }, 30_000);
});
