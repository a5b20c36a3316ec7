/**
 * Event store figures: append throughput (one writer, and 16 concurrent writers on distinct streams, which
 * all queue on the append lock) and live subscription latency (append committed -> handler called).
 * Runs on embedded PGlite, and on PostgreSQL when DATABASE_URL is set. Usage: npm run bench
 */
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database';
import { createPgDatabase } from '../src/db/pg';
import { createPgliteDatabase } from '../src/db/pglite';
import { createSqlEventStore } from '../src/eventstore/sql';
import { Client } from 'pg';

const N = Number(process.env.BENCH_EVENTS ?? 2000);

async function bench(name: string, db: Database) {
  const store = await createSqlEventStore(db);
  const ev = { type: 'Bench', data: { payload: 'x'.repeat(200) } };

  let t = performance.now();
  for (let i = 0; i < N / 4; i++) await store.append(`one-${i % 50}`, [ev]);
  const sequential = (N / 4 / (performance.now() - t)) * 1000;

  t = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async (_, w) => {
      for (let i = 0; i < N / 16; i++) await store.append(`w${w}-${i % 20}`, [ev]);
    }),
  );
  const concurrent = (N / (performance.now() - t)) * 1000;

  const latencies: number[] = [];
  const head = await store.headPosition();
  let sentAt = 0;
  let got: () => void = () => undefined;
  const sub = store.subscribe({
    from: head,
    handler: async () => {
      latencies.push(performance.now() - sentAt);
      got();
    },
  });
  for (let i = 0; i < 200; i++) {
    const seen = new Promise<void>((r) => (got = r));
    sentAt = performance.now();
    await store.append(`lat-${randomUUID()}`, [ev]);
    await seen;
  }
  await sub.stop();
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.floor((latencies.length - 1) * p)]!.toFixed(2);
  console.log(
    `${name.padEnd(10)} append 1 writer: ${sequential.toFixed(0)} ev/s | 16 writers: ${concurrent.toFixed(0)} ev/s | ` +
      `subscription latency p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${pct(1)} ms`,
  );
  await store.close();
}

async function main() {
  const lite = await createPgliteDatabase();
  await bench('PGlite', lite);
  await lite.close();
  const server = process.env.DATABASE_URL;
  if (!server) return console.log('PostgreSQL: skipped (set DATABASE_URL to include it)');
  const name = `bench_${Date.now()}`;
  const admin = new Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  const pg = createPgDatabase(url.toString(), { max: 20 });
  try {
    await bench('PostgreSQL', pg);
  } finally {
    await pg.close();
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await admin.end();
  }
}

void main();
