import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { loadConfig, type Config } from '../../src/config';
import { signToken, type Role } from '../../src/http/auth';
import { createHttpServer } from '../../src/http/server';
import type { Database } from '../../src/db/database';
import { createSystem, type System, type SystemOverrides } from '../../src/system';
import { testDatabase, type TestDatabase } from './services';
import { answerChecker, type AnswerCheck } from './openapiCheck';
import { eventStoreDbPlan, startEventStoreDb, type RunningEventStoreDb } from './eventstoredb';

/**
 * The event store every test system uses unless a test passes its own: the SQL store on the test's
 * database by default; EventStoreDB when TEST_EVENTSTORE=esdb or EVENTSTORE_URL is an esdb:// URL (then
 * EVENTSTORE_URL, else a container, else a fresh wire-level double per test system).
 */
export function testEventStoreOnEsdb(): boolean {
  return process.env.TEST_EVENTSTORE === 'esdb' || Boolean(process.env.EVENTSTORE_URL?.startsWith('esdb'));
}
export function testEventStoreLabel(): string {
  if (testEventStoreOnEsdb()) return 'EventStoreDB';
  return process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite';
}

let sharedEsdb: Promise<RunningEventStoreDb> | undefined;
/** A double per system (its faults stay its own); a server or a container is shared by the test file. */
async function esdbForTest(): Promise<{ server: RunningEventStoreDb; stop(): Promise<void> }> {
  if (eventStoreDbPlan().kind !== 'double') {
    sharedEsdb ??= startEventStoreDb();
    return { server: await sharedEsdb, stop: async () => undefined };
  }
  const server = await startEventStoreDb();
  return { server, stop: () => server.stop() };
}

export interface TestSystem {
  system: System;
  config: Config;
  baseUrl: string;
  database: TestDatabase;
  /** The EventStoreDB behind the system when the run is on EventStoreDB (a double has fault switches). */
  esdb?: RunningEventStoreDb;
  token(userId: string, roles?: Role[]): string;
  /** fetch against the running server, JSON in and out. */
  request(
    method: string,
    path: string,
    opts?: { token?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

/** A database the caller owns and drops: the test system only uses it. */
const borrowed = (db: Database): TestDatabase => ({
  db,
  kind: db.kind === 'pg' ? 'postgres' : 'pglite',
  drop: async () => undefined,
});

/** The whole service over real HTTP on an ephemeral port, with its own database unless given one. */
export async function startTestSystem(
  overrides: SystemOverrides & { env?: NodeJS.ProcessEnv; database?: TestDatabase } = {},
): Promise<TestSystem> {
  // A test that brings its database (to share it, or to wrap a store on it) owns it: none is made here (an
  // unused embedded PGlite cost seconds of start-up, enough for a loaded CI to time a beforeAll out).
  const { database: given, ...rest } = overrides;
  const database: TestDatabase = given
    ? { ...given, drop: async () => undefined }
    : rest.db
      ? borrowed(rest.db)
      : await testDatabase();
  const esdb =
    !overrides.store && !overrides.env?.EVENTSTORE_URL && testEventStoreOnEsdb()
      ? await esdbForTest()
      : undefined;
  // Files the service writes (the mail outbox) go to a temporary DATA_DIR unless the test names one.
  const tmpDir = overrides.env?.DATA_DIR ? null : fs.mkdtempSync(path.join(os.tmpdir(), 'coaching-test-'));
  const config = loadConfig({
    JWT_SECRET: 'test-secret',
    CONSISTENCY_WAIT_MS: '3000',
    // Reminders are notices no event causes, sent as the clock passes a session's lead time: off unless a test
    // turns them on (test/api/session-reminders.test.ts), so other tests' notification and webhook counts do
    // not depend on when the sweeper's timer fires as they move their clocks.
    SESSION_REMINDER_LEAD_MS: '0',
    ...(tmpDir ? { DATA_DIR: tmpDir } : {}),
    ...(esdb ? { EVENTSTORE_URL: esdb.server.url } : {}),
    ...overrides.env,
  });
  const system = await createSystem(config, { ...rest, db: database.db });
  const server = createHttpServer(system.app, config.http);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let check: Promise<AnswerCheck> | null = null;
  return {
    system,
    config,
    baseUrl,
    database,
    ...(esdb ? { esdb: esdb.server } : {}),
    token: (userId, roles = ['client']) => signToken(config, userId, roles),
    async request(method, path, { token, body, headers = {} } = {}) {
      const res = await fetch(baseUrl + path, {
        method,
        headers: {
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...headers,
        },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON: keep the text */
      }
      // Every JSON answer must be what /openapi.json says this route answers with this status.
      check ??= fetch(`${baseUrl}/openapi.json`).then(async (r) =>
        answerChecker((await r.json()) as Record<string, any>),
      );
      (await check)(method, path, res.status, res.headers.get('content-type'), parsed, { body });
      return { status: res.status, body: parsed as any, headers: res.headers };
    },
    async close() {
      await new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections();
      await system.close();
      await esdb?.stop();
      await database.drop();
      if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
    },
  };
}
