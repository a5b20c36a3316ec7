/**
 * Rebuild throughput: a generated log of BENCH_REBUILD_EVENTS (default 200,000) events of the real types
 * (profiles, addresses, payments with their status moves, notifications), replayed into shadow tables and
 * swapped in, as `npm run rebuild` does. PostgreSQL only (DATABASE_URL; the target is >= 20,000 events/s);
 * the database is created for the run and dropped after it.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { Client } from 'pg';
import type { Database } from '../src/db/database';
import { createPgDatabase } from '../src/db/pg';
import { migrate } from '../src/db/migrate';
import { createSqlEventStore } from '../src/eventstore/sql';
import { allProjections } from '../projections';
import { rebuildReadModels } from '../src/rebuild/rebuild';
import { progressPrinter } from '../src/rebuild/progress';
import { createLogger } from '../src/log';
import { createMailer } from '../src/mail/mailer';
import { insertGeneratedLog } from '../test/support/generatedLog';

const TOTAL = Number(process.env.BENCH_REBUILD_EVENTS ?? 200_000);

/** CPU time (ms) of each PostgreSQL backend serving this database, from /proc; null when not readable. */
async function backendCpuMs(db: Database): Promise<Map<number, number> | null> {
  const pids = await db.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database()',
  );
  const out = new Map<number, number>();
  for (const { pid } of pids.rows) {
    try {
      const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      out.set(pid, (Number(fields[11]) + Number(fields[12])) * 10); // utime + stime, in ticks of 10 ms
    } catch {
      return null; // another machine, or not Linux
    }
  }
  return out;
}

async function main() {
  const server = process.env.DATABASE_URL;
  if (!server) {
    console.log('rebuild    skipped: set DATABASE_URL to a PostgreSQL server (the figure is for PostgreSQL)');
    return;
  }
  const name = `bench_rebuild_${randomUUID().slice(0, 8)}`;
  const admin = new Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  const db = createPgDatabase(url.toString(), { max: 16 });
  try {
    await migrate(db);
    const store = await createSqlEventStore(db);
    // Written in bulk (the figure measured is the rebuild, not the appends): a few thousand events per
    // INSERT, in the shape and order the store itself writes them.
    await insertGeneratedLog(db, TOTAL);
    const log = createLogger({ service: 'bench' });
    const mailer = createMailer({ mailFrom: 'bench@example.com', dataDir: '/tmp' });
    const projections = allProjections({ store, db, mailer, log, clock: () => new Date() });
    const cpuBefore = process.cpuUsage();
    const pgBefore = await backendCpuMs(db);
    const result = await rebuildReadModels({
      db,
      store,
      projections,
      onProgress: progressPrinter(process.stderr),
    });
    const nodeCpu = process.cpuUsage(cpuBefore);
    const pgAfter = await backendCpuMs(db);
    const pgCpu =
      pgAfter && pgBefore
        ? [...pgAfter].reduce((t, [pid, ms]) => t + ms - (pgBefore.get(pid) ?? 0), 0)
        : null;
    const verify = await rebuildReadModels({ db, store, projections, verify: true });
    const rate = (n: number, ms: number) => Math.round(n / (ms / 1000)).toLocaleString('en-US');
    console.log(
      `rebuild    ${result.events.toLocaleString('en-US')} events, ${result.readModels.length} read models: ` +
        `${(result.ms / 1000).toFixed(1)} s, ${rate(result.events, result.ms)} events/s (target >= 20,000) | ` +
        `--verify ${(verify.ms / 1000).toFixed(1)} s, ${verify.differences.length} differences`,
    );
    // CPU time is what a shared machine's load does not change much: the rebuild's own process and the
    // PostgreSQL backends of its database (read from /proc when the server runs on this machine).
    const cpu = (nodeCpu.user + nodeCpu.system) / 1000 + (pgCpu ?? 0);
    console.log(
      `rebuild    CPU: node ${((nodeCpu.user + nodeCpu.system) / 1e6).toFixed(1)} s` +
        (pgCpu === null
          ? ' (PostgreSQL backends not visible from here)'
          : `, PostgreSQL backends ${(pgCpu / 1000).toFixed(1)} s: ` +
            `${rate(result.events, cpu)} events per CPU-second; load average ${os
              .loadavg()
              .map((l) => l.toFixed(1))
              .join(' ')}`),
    );
    mailer.close();
    await store.close();
  } finally {
    await db.close();
    if (process.env.BENCH_KEEP) console.log(`kept database ${name}`);
    else await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
