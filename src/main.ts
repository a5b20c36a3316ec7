import fs from 'node:fs';
import { ConfigError, loadConfig, DEV_JWT_SECRET } from './config';
import { createHttpServer } from './http/server';
import { createSystem } from './system';
import { log } from './log';

async function main() {
  // A .env file next to package.json is read when present (Node's own loader, no dependency).
  if (fs.existsSync('.env')) process.loadEnvFile('.env');
  const config = loadConfig();
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
  server.listen(config.port, () =>
    log.info('listening', {
      port: config.port,
      eventStore: system.deps.store.kind,
      database: system.deps.db.kind,
      dataDir: config.databaseUrl ? undefined : config.dataDir,
    }),
  );
  const shutdown = async (signal: string) => {
    log.info('shutting down', { signal });
    server.close();
    await system.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((err) => {
  if (err instanceof ConfigError) log.error('refusing to start', { error: err.message });
  else log.error('failed to start', { error: err instanceof Error ? err.stack : String(err) });
  process.exit(1);
});
