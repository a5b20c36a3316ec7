import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import type { Config } from './config';
import type { Database } from './db/database';
import { createPgDatabase } from './db/pg';
import { createPgliteDatabase } from './db/pglite';
import { migrate } from './db/migrate';
import type { EventStore } from './eventstore/types';
import { createSqlEventStore } from './eventstore/sql';
import { createEsdbEventStore } from './eventstore/esdb';
import { UPCASTERS, createUpcasterRegistry, withUpcasting, type Upcaster } from './eventstore/upcasting';
import { createApp } from './http/app';
import { keyedNewId } from './http/idempotency';
import type { AppDeps } from './deps';
import { createLogger, type Logger } from './log';
import { createProjectionRunner, type ProjectionRunner } from '../projections/runner';
import { allProjections } from '../projections';
import { createPaymentExpirySweeper } from './paymentExpirySweeper';
import { createSessionReminderSweeper } from './sessionReminderSweeper';
import { openBlobStore } from './storage';
import { sweepStaleFiles } from './storage/filesystem';
import { uploadTmpDir } from './http/multipart';
import { createMailer } from './mail/mailer';
import { createMailRetry } from './mailRetry';
import { createIdempotencyPruner } from './idempotencyPruner';
import { createMetrics } from './metrics';
import { createWebhookDispatcher } from './webhooks/dispatcher';
import type { HostResolver } from './webhooks/target';
import { LEASES, createLocalLeases, createPgLeases } from './leases';

export interface System {
  deps: AppDeps;
  app: Koa;
  runner: ProjectionRunner;
  /** Cancels the unpaid payments due at the clock's now (the sweeper also runs this every few seconds). */
  sweepExpiredPayments(): Promise<number>;
  /**
   * Reminds both parties of the sessions due for a reminder at the clock's now (the sweeper also runs this
   * every few seconds); resolves to how many sessions were reminded.
   */
  remindSessions(): Promise<number>;
  /** Forgets the Idempotency-Keys past their 24 h (also every 10 minutes); resolves to how many. */
  pruneIdempotencyKeys(): Promise<number>;
  /**
   * Sends the deferred e-mails due at `now` (default the clock's) and takes over claims whose lease ran out;
   * the retry loop does this every `MAIL_RETRY_INTERVAL_MS` (30 s).
   */
  retryDeferredEmails(now?: Date): Promise<number>;
  /** Sends the webhook deliveries due now (the dispatcher also runs every second and when woken). */
  deliverWebhooks(): Promise<number>;
  close(): Promise<void>;
}

export interface SystemOverrides {
  db?: Database;
  store?: EventStore;
  /** Event upcasters (default: the service's own, UPCASTERS). */
  upcasters?: Upcaster[];
  clock?: () => Date;
  newId?: () => string;
  log?: Logger;
  /** How webhook receivers' host names are resolved (default: DNS through c-ares). */
  webhookResolver?: HostResolver;
}

/** Read models: DATABASE_URL, else embedded PGlite under DATA_DIR. */
export async function openDatabase(config: Config): Promise<Database> {
  return config.databaseUrl
    ? createPgDatabase(config.databaseUrl, {
        // With the events in this database, one connection listens for appends all the time: at least one
        // more for everything else (with DATABASE_POOL_SIZE=1 nothing else ever got a connection).
        max: Math.max(config.databasePoolSize, config.eventStoreUrl ? 1 : 2),
        connectTimeoutMs: config.databaseConnectTimeoutMs,
        queryTimeoutMs: config.databaseQueryTimeoutMs,
      })
    : createPgliteDatabase(path.join(config.dataDir, 'pglite'));
}

/** Events: EVENTSTORE_URL (esdb:// or postgres://), else the read-model database itself. */
export async function openEventStore(config: Config, db: Database): Promise<EventStore> {
  const url = config.eventStoreUrl;
  if (!url) return createSqlEventStore(db);
  // The scheme in any letter case, as loadConfig checked it (`POSTGRES://` is a postgres:// URL to pg too).
  if (/^esdb(\+discover)?:\/\//i.test(url)) return createEsdbEventStore(url);
  if (/^postgres(ql)?:\/\//i.test(url))
    return createSqlEventStore(
      createPgDatabase(url, {
        connectTimeoutMs: config.databaseConnectTimeoutMs,
        queryTimeoutMs: config.databaseQueryTimeoutMs,
      }),
      { ownsDb: true },
    );
  // Not the URL itself: it may hold a password.
  throw new Error('EVENTSTORE_URL must start with esdb:// or postgres://');
}

/** Wires the whole service; `close` stops projections and releases every connection. */
export async function createSystem(config: Config, overrides: SystemOverrides = {}): Promise<System> {
  const log = overrides.log ?? createLogger({ service: 'coaching' });
  const db = overrides.db ?? (await openDatabase(config));
  await migrate(db);
  const metrics = createMetrics();
  const rawStore = overrides.store ?? (await openEventStore(config, db));
  // Versioned events: every reader of the log (deciders, projections, audit) sees the current shapes.
  const store = metrics.instrumentStore(
    withUpcasting(rawStore, createUpcasterRegistry(overrides.upcasters ?? UPCASTERS)),
  );
  const clock = overrides.clock ?? (() => new Date());
  const mailer = metrics.instrumentMailer(createMailer(config));
  const blobs = await openBlobStore(config);
  // Each start is a new owner: a restarted process never mistakes its predecessor's leases for its own.
  const instanceId = `${config.instanceName}-${randomUUID().slice(0, 8)}`;
  const leases =
    db.kind === 'pg'
      ? createPgLeases(db, { instanceId, names: Object.values(LEASES), ttlMs: config.leaseTtlMs, log })
      : createLocalLeases({ instanceId, names: Object.values(LEASES) });
  const webhooks = createWebhookDispatcher({
    db,
    store,
    clock,
    log,
    config,
    leases,
    resolve: overrides.webhookResolver,
  });
  const runner = createProjectionRunner(
    store,
    db,
    allProjections({
      store,
      clock,
      db,
      mailer,
      log,
      mailLeaseMs: config.mailLeaseMs,
      onWebhookQueued: () => webhooks.kick(),
      blobs,
    }),
    log,
    { leases },
  );
  metrics.watchProjections(store, runner);
  // Leases first: a single instance owns its process managers from the start.
  await leases.start();
  await runner.start();
  // Uploads a process that died mid-request left in DATA_DIR/uploads (multer removes them only while alive).
  const staleUploads = await sweepStaleFiles(uploadTmpDir(config.dataDir));
  if (staleUploads) log.info('removed uploads left by a stopped process', { files: staleUploads });
  const deps: AppDeps = {
    config,
    db,
    store,
    runner,
    log,
    clock,
    newId: keyedNewId(overrides.newId ?? randomUUID),
    blobs,
    mailer,
    metrics,
    leases,
  };
  const expirySweeper = createPaymentExpirySweeper(deps);
  expirySweeper.start();
  const reminderSweeper = createSessionReminderSweeper(deps, config.sessionReminderLeadMs);
  reminderSweeper.start();
  const mailRetry = createMailRetry({ ...deps, leaseMs: config.mailLeaseMs }, config.mailRetryIntervalMs);
  mailRetry.start();
  webhooks.start();
  const idempotencyPruner = createIdempotencyPruner(deps);
  idempotencyPruner.start();
  return {
    deps,
    app: createApp(deps),
    runner,
    sweepExpiredPayments: () => expirySweeper.sweep(),
    remindSessions: () => reminderSweeper.sweep(),
    retryDeferredEmails: (now?: Date) => mailRetry.retryDue(now),
    deliverWebhooks: () => webhooks.deliverDue(),
    pruneIdempotencyKeys: () => idempotencyPruner.prune(),
    async close() {
      await idempotencyPruner.stop();
      await expirySweeper.stop();
      await reminderSweeper.stop();
      await mailRetry.stop();
      await webhooks.stop();
      await runner.stop();
      // Given up only once nothing here acts any more; another instance takes over at its next renewal.
      await leases.stop();
      mailer.close();
      if (!overrides.store) await store.close();
      if (!overrides.db) await db.close();
    },
  };
}
