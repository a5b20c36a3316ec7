import { loadConfig } from '../config';
import { migrate } from '../db/migrate';
import { openDatabase, openEventStore } from '../system';
import { UPCASTERS, createUpcasterRegistry, withUpcasting } from '../eventstore/upcasting';
import { createLogger } from '../log';
import { createMailer } from '../mail/mailer';
import { allProjections } from '../../projections';
import { RebuildError, rebuildReadModels } from '../rebuild/rebuild';
import { progressPrinter } from '../rebuild/progress';

/**
 * npm run rebuild [-- --verify] [-- <read model> …]: rebuilds read models from the event log next to the
 * live ones and swaps them in (or, with --verify, compares them row by row and exits 1 on a difference).
 * Safe while the service runs on PostgreSQL; embedded PGlite allows one process, so stop the service first.
 */
async function main() {
  const args = process.argv.slice(2);
  const verify = args.includes('--verify');
  const names = args.filter((a) => !a.startsWith('--'));
  const unknownFlag = args.find((a) => a.startsWith('--') && a !== '--verify');
  if (unknownFlag) throw new RebuildError(`unknown option ${unknownFlag} (only --verify)`);

  const config = loadConfig();
  const log = createLogger({ service: 'rebuild' });
  const db = await openDatabase(config);
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
      onProgress: progressPrinter(process.stderr),
    });
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
  console.error(err instanceof RebuildError ? `rebuild: ${err.message}` : err);
  process.exitCode = 2;
});
