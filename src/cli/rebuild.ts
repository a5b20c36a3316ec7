import fs from 'node:fs';
import { ConfigError, loadConfig } from '../config';
import { ensureDataDir } from '../dataDir';
import { migrate } from '../db/migrate';
import { EmbeddedDatabaseInUseError } from '../db/pglite';
import { isConnectFailure } from '../db/unavailable';
import { EventStoreUnavailableError } from '../eventstore/types';
import { openDatabase, openEventStore } from '../system';
import { UPCASTERS, createUpcasterRegistry, withUpcasting } from '../eventstore/upcasting';
import { createLogger } from '../log';
import { createMailer } from '../mail/mailer';
import { allProjections } from '../../projections';
import { RebuildBusyError, RebuildError, rebuildReadModels } from '../rebuild/rebuild';
import { progressPrinter } from '../rebuild/progress';

/** Connections a rebuild holds at once at most (see below). */
const REBUILD_CONNECTIONS = 3;

/**
 * npm run rebuild [-- --verify] [-- --page-size=<n>] [-- <read model> …]: rebuilds read models from the
 * event log next to the live ones and swaps them in (or, with --verify, compares them row by row and exits
 * 1 on a difference). Safe while the service runs on PostgreSQL; embedded PGlite allows one process, so
 * stop the service first. One rebuild or verify at a time per database: a second one exits 3 at once.
 * Exit status: 0 done (for --verify: no difference), 1 differences found, 2 failed, 3 another is running.
 */
async function main() {
  const args = process.argv.slice(2);
  const verify = args.includes('--verify');
  const names = args.filter((a) => !a.startsWith('--'));
  const pageArg = args.find((a) => a.startsWith('--page-size='));
  const pageSize = pageArg ? Number(pageArg.slice('--page-size='.length)) : undefined;
  if (pageSize !== undefined && !(Number.isInteger(pageSize) && pageSize >= 1 && pageSize <= 100_000))
    throw new RebuildError(`--page-size takes a whole number of events from 1 to 100000, got ${pageArg}`);
  const unknownFlag = args.find((a) => a.startsWith('--') && a !== '--verify' && a !== pageArg);
  if (unknownFlag) throw new RebuildError(`unknown option ${unknownFlag} (--verify, --page-size=<n>)`);

  // The .env the service reads (src/main.ts): else the rebuild opens another database than the service's.
  if (fs.existsSync('.env')) process.loadEnvFile('.env');
  const config = loadConfig();
  if (!config.databaseUrl) ensureDataDir(config.dataDir);
  const log = createLogger({ service: 'rebuild' });
  // An operator's job over whole tables (a verify compares them): no bound on a statement's time. At least
  // REBUILD_CONNECTIONS whatever DATABASE_POOL_SIZE says: the rebuild lock holds one connection throughout,
  // the final transaction another, and the log is read under it on a third (with fewer, it waited for a
  // connection that never came and said the database could not be reached).
  const db = await openDatabase({
    ...config,
    databaseQueryTimeoutMs: 0,
    databasePoolSize: Math.max(config.databasePoolSize, REBUILD_CONNECTIONS),
  });
  await migrate(db);
  // The same versioned view of the log as the service (src/system.ts).
  const store = withUpcasting(await openEventStore(config, db), createUpcasterRegistry(UPCASTERS));
  const mailer = createMailer(config); // needed to list the projections; a rebuild never runs a process manager
  try {
    const result = await rebuildReadModels({
      db,
      store,
      projections: allProjections({ store, db, mailer, log, clock: () => new Date() }),
      names,
      verify,
      ...(pageSize ? { pageSize } : {}),
      onProgress: progressPrinter(process.stderr),
    });
    if (result.leftovers.length)
      console.log(`dropped what an interrupted rebuild left behind: schema ${result.leftovers.join(', ')}`);
    const rate = Math.round(result.events / (result.ms / 1000));
    console.log(
      `${verify ? 'verified' : 'rebuilt'} ${result.readModels.join(', ')}: ${result.events} events in ` +
        `${(result.ms / 1000).toFixed(1)} s (${rate} events/s)`,
    );
    for (const d of result.differences) {
      console.log(`\n${d.table}: ${d.count} row(s) differ`);
      for (const r of d.onlyLive) console.log(`  only in live:    ${JSON.stringify(r)}`);
      for (const r of d.onlyRebuilt) console.log(`  only in rebuilt: ${JSON.stringify(r)}`);
    }
    if (verify)
      console.log(result.differences.length ? 'DIFFERENCES FOUND' : 'live read models match the log');
    process.exitCode = result.differences.length ? 1 : 0;
  } finally {
    mailer.close();
    await store.close();
    await db.close();
  }
}

main().catch((err) => {
  const told =
    err instanceof RebuildError || err instanceof EmbeddedDatabaseInUseError || err instanceof ConfigError;
  // A database that is down or misnamed is the operator's most likely mistake: one line, no stack trace
  // (also for an unknown host, a refused login or no such database, as the service says them at start).
  if (!told && err instanceof EventStoreUnavailableError)
    console.error(
      `rebuild: the event store cannot be reached (${err.message}); is it running, and is EVENTSTORE_URL right?`,
    );
  else if (!told && isConnectFailure(err))
    console.error(
      `rebuild: the database cannot be reached (${(err as Error).message}); is it running, and is DATABASE_URL right?`,
    );
  else console.error(told ? `rebuild: ${err.message}` : err);
  process.exitCode = err instanceof RebuildBusyError || err instanceof EmbeddedDatabaseInUseError ? 3 : 2;
});
