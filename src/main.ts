import fs from 'node:fs';
import type { ServerResponse } from 'node:http';
import { ConfigError, loadConfig, DEV_JWT_SECRET } from './config';
import { ensureDataDir } from './dataDir';
import { EmbeddedDatabaseInUseError } from './db/pglite';
import { isConnectFailure } from './db/unavailable';
import { EventStoreUnavailableError } from './eventstore/types';
import { BlobStoreUnavailableError } from './storage/types';
import { createHttpServer } from './http/server';
import { createSystem } from './system';
import { log } from './log';

/** How long a stop (SIGTERM, SIGINT) waits for the requests in flight before it closes their connections. */
const SHUTDOWN_GRACE_MS = 10_000;

async function main() {
  // A .env file next to package.json is read when present (Node's own loader, no dependency).
  if (fs.existsSync('.env')) process.loadEnvFile('.env');
  const config = loadConfig();
  ensureDataDir(config.dataDir);
  if (config.jwt.usingDevSecret) {
    log.warn(
      `JWT_SECRET is not set: tokens are checked with the development secret "${DEV_JWT_SECRET}". ` +
        'Never run like this in production. Mint a token with: npm run token -- <user-uuid> client',
    );
  }
  if (config.webhooks.usingDevKey) {
    log.warn(
      'WEBHOOK_SIGNING_KEY is not set: webhook signing secrets are derived from a development key. ' +
        'Set it (e.g. openssl rand -hex 32) before registering webhooks in production.',
    );
  }
  const system = await createSystem(config);
  const server = createHttpServer(system.app, config.http);
  const inFlight = new Set<ServerResponse>();
  server.on('request', (_req, res: ServerResponse) => {
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });
  // A port it cannot listen on (in use, or privileged) was an unhandled 'error' event: a stack trace.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch(async (err: NodeJS.ErrnoException) => {
    await system.close().catch(() => undefined);
    if (err.code === 'EADDRINUSE') throw new ConfigError(`PORT ${config.port} is in use by another process`);
    if (err.code === 'EACCES')
      throw new ConfigError(
        `PORT ${config.port} may not be opened by this user (ports below 1024 need privileges)`,
      );
    throw err;
  });
  log.info('listening', {
    port: config.port,
    eventStore: system.deps.store.kind,
    database: system.deps.db.kind,
    dataDir: config.databaseUrl ? undefined : config.dataDir,
  });
  const shutdown = async (signal: string) => {
    log.info('shutting down', { signal });
    // No new connections; idle keep-alive ones are closed, and the requests being served get their answer
    // (up to SHUTDOWN_GRACE_MS) before the database and event store close under them. Before, a request in
    // flight lost its connection without an answer.
    const drained = new Promise<void>((resolve) => server.close(() => resolve()));
    // Their answers close their connections (`Connection: close`) rather than keep them alive.
    for (const res of inFlight) if (!res.headersSent) res.shouldKeepAlive = false;
    const idle = setInterval(() => server.closeIdleConnections(), 100);
    server.closeIdleConnections();
    const grace = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    await drained;
    clearInterval(idle);
    clearTimeout(grace);
    await system.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((err) => {
  if (err instanceof ConfigError || err instanceof EmbeddedDatabaseInUseError)
    log.error('refusing to start', { error: err.message });
  else if (err instanceof EventStoreUnavailableError)
    log.error('cannot reach the event store, refusing to start', { error: err.message });
  else if (err instanceof BlobStoreUnavailableError)
    log.error('cannot reach the file storage (S3_ENDPOINT), refusing to start', { error: err.message });
  else if (isConnectFailure(err))
    log.error('cannot reach the database, refusing to start', {
      error: (err as Error).message,
      code: (err as { code?: string }).code,
    });
  else log.error('failed to start', { error: err instanceof Error ? err.stack : String(err) });
  process.exit(1);
});
