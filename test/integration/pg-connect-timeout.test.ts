import net from 'node:net';
import { isTransient } from '../../projections/runner';
import { loadConfig } from '../../src/config';
import type { Database } from '../../src/db/database';
import { createPgDatabase } from '../../src/db/pg';
import { openEventStore } from '../../src/system';
import { isDatabaseUnavailable } from '../../src/db/unavailable';

/**
 * A database that stops answering without closing anything (a dropped network, a blackholed route, a
 * server frozen mid-handshake): a connection is waited for at most DATABASE_CONNECT_TIMEOUT_MS, then the
 * query fails as "database unavailable" (HTTP 503, a projection retries) instead of hanging for ever.
 */

let silent: net.Server;
let port: number;
const sockets = new Set<net.Socket>();
beforeAll(async () => {
  // Accepts connections and never says a word: the startup handshake never completes.
  silent = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  port = (silent.address() as net.AddressInfo).port;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => silent.close(r));
});

it('gives up on a server that never answers after the connect timeout, as unavailable and transient', async () => {
  const db = createPgDatabase(`postgres://postgres@127.0.0.1:${port}/postgres`, {
    max: 2,
    connectTimeoutMs: 300,
  });
  try {
    const started = Date.now();
    const err = await db.query('SELECT 1').then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).not.toBeNull();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(isDatabaseUnavailable(err)).toBe(true);
    expect(isTransient(err)).toBe(true);
    // The same in a transaction (how read models and appends take a connection).
    const inTx = await db
      .transaction(async (tx) => tx.query('SELECT 1'))
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(isDatabaseUnavailable(inTx)).toBe(true);
  } finally {
    await db.close();
  }
});

const describePg = process.env.DATABASE_URL ? describe : describe.skip;
describePg('a pool with every connection busy (skipped without DATABASE_URL)', () => {
  it('fails a query that waits longer than the connect timeout for a free connection, then serves again', async () => {
    const db = createPgDatabase(process.env.DATABASE_URL!, { max: 1, connectTimeoutMs: 300 });
    try {
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const busy = db.transaction(async (tx) => {
        await tx.query('SELECT 1');
        await held;
      });
      await new Promise((r) => setTimeout(r, 100));
      const err = await db.query('SELECT 1').then(
        () => null,
        (e: unknown) => e,
      );
      expect(isDatabaseUnavailable(err)).toBe(true);
      release();
      await busy;
      expect((await db.query<{ n: number }>('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    } finally {
      await db.close();
    }
  });
});

it('holds for a postgres:// EVENTSTORE_URL too (the event store has its own pool)', async () => {
  const config = loadConfig({
    EVENTSTORE_URL: `postgres://postgres@127.0.0.1:${port}/postgres`,
    DATABASE_CONNECT_TIMEOUT_MS: '300',
  });
  const started = Date.now();
  const err = await openEventStore(config, undefined as unknown as Database)
    .then((store) => store.readStream('anything').finally(() => store.close()))
    .then(
      () => null,
      (e: unknown) => e,
    );
  expect(err).not.toBeNull();
  expect(Date.now() - started).toBeLessThan(5_000);
  expect(isTransient(err)).toBe(true);
});
