import fs from 'node:fs';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { Database } from '../../src/db/database';
import { createPgDatabase } from '../../src/db/pg';
import { createPgliteDatabase } from '../../src/db/pglite';

/**
 * How tests find their services (DESIGN section 8): explicit env URLs first, then testcontainers where
 * a Docker engine answers, then embedded. Each caller gets a database of its own.
 */
export function dockerAvailable(): boolean {
  return Boolean(process.env.DOCKER_HOST) || fs.existsSync('/var/run/docker.sock');
}

let containerUrl: Promise<string | null> | undefined;
/** A PostgreSQL started by testcontainers, or null (with the reason logged once) when none can start. */
async function containerPostgres(): Promise<string | null> {
  if (!dockerAvailable()) return null;
  containerUrl ??= (async () => {
    try {
      const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
      const c = await new PostgreSqlContainer('postgres:16-alpine').start();
      return c.getConnectionUri() as string;
    } catch (err) {
      console.warn(
        `testcontainers could not start PostgreSQL (${(err as Error).message}); using embedded PGlite`,
      );
      return null;
    }
  })();
  return containerUrl;
}

export interface TestDatabase {
  db: Database;
  kind: 'postgres' | 'pglite';
  /** Opens another pool on the same database (postgres only), e.g. for a second process's view. */
  url?: string;
  drop(): Promise<void>;
}

/** A fresh, empty PostgreSQL database on the server of `serverUrl`, dropped by `drop()`. */
export async function freshPostgres(serverUrl: string): Promise<TestDatabase> {
  const name = `t_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = createPgDatabase(url.toString(), { max: 12 });
  return {
    db,
    kind: 'postgres',
    url: url.toString(),
    async drop() {
      await db.close();
      const c = new Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export async function freshPglite(): Promise<TestDatabase> {
  const db = await createPgliteDatabase();
  return { db, kind: 'pglite', drop: () => db.close() };
}

/** The read-model database for a test file: DATABASE_URL, else a container, else PGlite in memory. */
export async function testDatabase(): Promise<TestDatabase> {
  const server = process.env.DATABASE_URL ?? (await containerPostgres());
  return server ? freshPostgres(server) : freshPglite();
}

/** The PostgreSQL server tests may use, if any (for suites that need a real multi-connection server). */
export async function postgresServer(): Promise<string | null> {
  return process.env.DATABASE_URL ?? (await containerPostgres());
}

/**
 * `real` behind a switch: while `away.now`, every query and transaction goes to a node-postgres pool on a
 * port nothing listens on, so it fails as it does while the server is down (restarting, failing over).
 */
/** A TCP port nothing listens on right now. */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });

export async function switchableDatabase(real: Database) {
  const unreachable = createPgDatabase(`postgres://postgres@127.0.0.1:${await freePort()}/postgres`, {
    max: 2,
  });
  const away = { now: false };
  const db = Object.assign(Object.create(real) as Database, {
    query: (...args: Parameters<Database['query']>) => (away.now ? unreachable : real).query(...args),
    transaction: (...args: Parameters<Database['transaction']>) =>
      (away.now ? unreachable : real).transaction(...args),
    framedTransaction: (...args: Parameters<Database['framedTransaction']>) =>
      (away.now ? unreachable : real).framedTransaction(...args),
  });
  return { db, away, close: () => unreachable.close() };
}

/**
 * A TCP proxy in front of a PostgreSQL server that can freeze: frozen, it keeps every connection open and
 * passes nothing on, holding what comes (as a stopped server or a blackholed route holds it); thawed, it
 * passes on what it held and goes on. `url` is the server's URL through the proxy.
 */
export async function freezableProxy(serverUrl: string) {
  const target = new URL(serverUrl);
  let frozen = false;
  const sockets = new Set<net.Socket>();
  const held: (() => void)[] = [];
  const proxy = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    const pass = (to: net.Socket) => (d: Buffer) => {
      const send = () => to.destroyed || to.write(d);
      if (frozen) held.push(send);
      else send();
    };
    client.on('data', pass(upstream));
    upstream.on('data', pass(client));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const url = new URL(serverUrl);
  url.hostname = '127.0.0.1';
  url.port = String((proxy.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    freeze: () => {
      frozen = true;
    },
    thaw: () => {
      frozen = false;
      held.splice(0).forEach((send) => send());
    },
    close: async () => {
      frozen = false;
      held.length = 0;
      for (const s of sockets) s.destroy();
      await new Promise((r) => proxy.close(r));
    },
  };
}
