import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { loadConfig, type Config } from '../../src/config';
import { signToken, type Role } from '../../src/http/auth';
import { createHttpServer } from '../../src/http/server';
import { createSystem, type System, type SystemOverrides } from '../../src/system';
import { testDatabase, type TestDatabase } from './services';

export interface TestSystem {
  system: System;
  config: Config;
  baseUrl: string;
  database: TestDatabase;
  token(userId: string, roles?: Role[]): string;
  /** fetch against the running server, JSON in and out. */
  request(
    method: string,
    path: string,
    opts?: { token?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

/** The whole service over real HTTP on an ephemeral port, with its own database. */
export async function startTestSystem(
  overrides: SystemOverrides & { env?: NodeJS.ProcessEnv } = {},
): Promise<TestSystem> {
  const database = await testDatabase();
  // Files the service writes (the mail outbox) go to a temporary DATA_DIR unless the test names one.
  const tmpDir = overrides.env?.DATA_DIR ? null : fs.mkdtempSync(path.join(os.tmpdir(), 'coaching-test-'));
  const config = loadConfig({
    JWT_SECRET: 'test-secret',
    CONSISTENCY_WAIT_MS: '3000',
    ...(tmpDir ? { DATA_DIR: tmpDir } : {}),
    ...overrides.env,
  });
  const system = await createSystem(config, { db: database.db, ...overrides });
  const server = createHttpServer(system.app, config.http);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    system,
    config,
    baseUrl,
    database,
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
      return { status: res.status, body: parsed as any, headers: res.headers };
    },
    async close() {
      await new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections();
      await system.close();
      await database.drop();
      if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
    },
  };
}
