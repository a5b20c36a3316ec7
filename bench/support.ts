/** Helpers shared by the benchmarks: throwaway databases, percentiles, and the printed table. */
import fs from 'node:fs';
import os from 'node:os';
import { Client } from 'pg';

/** A database of its own on the server of `serverUrl`; `drop` removes it. */
export async function scratchDatabase(serverUrl: string, prefix: string) {
  const name = `${prefix}_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export const percentile = (xs: number[], p: number): number =>
  xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!;

export const median = (xs: number[]): number => percentile(xs, 0.5);

/** Where the figures were taken, printed above them. */
export function machine(): string {
  const cpus = os.cpus();
  return `${new Date().toISOString().slice(0, 10)}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'cpu'}, load ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}, node ${process.version}`;
}

export interface Row {
  figure: string;
  project: string;
  peer: string;
  ratio?: number;
  bar?: number;
}

/** A markdown table (pasted into README as is): figure, project, peer, ratio, bar and whether it holds. */
export function printTable(title: string, rows: Row[]) {
  console.log(`\n${title}\n`);
  console.log('| figure | project | peer | ratio | bar |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) {
    const ratio = r.ratio === undefined ? '' : `${r.ratio.toFixed(2)}×`;
    const bar =
      r.bar === undefined
        ? ''
        : `≥ ${r.bar}× ${r.ratio !== undefined && r.ratio >= r.bar ? 'met' : 'NOT met'}`;
    console.log(`| ${r.figure} | ${r.project} | ${r.peer} | ${ratio} | ${bar} |`);
  }
}

/** CPU milliseconds (user + system) the processes have used so far, from /proc (Linux); 0 elsewhere. */
export function cpuMs(pids: number[]): number {
  const tick = 100; // USER_HZ on Linux
  let total = 0;
  for (const pid of pids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += ((Number(fields[11]) + Number(fields[12])) * 1000) / tick; // utime, stime
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** The server processes of one database (the connections a service holds open). */
export async function backendPids(url: string): Promise<number[]> {
  const c = new Client({ connectionString: url });
  await c.connect();
  const res = await c.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  await c.end();
  return res.rows.map((r) => r.pid);
}
