/**
 * Event store figures. On PostgreSQL (DATABASE_URL), the project's store and Emmett's PostgreSQL store
 * (the peer) append the same events to the same server, one event per new stream, with 1 and with 16
 * concurrent writers, alternating rounds so both see the same machine load; the medians and their ratio
 * are printed. Then live subscription latency (append committed -> handler called). On embedded PGlite
 * the project's own figures only. Usage: npm run bench (BENCH_ROUNDS, BENCH_EVENTS to change the sizes).
 */
import { randomUUID } from 'node:crypto';
import { getPostgreSQLEventStore } from '@event-driven-io/emmett-postgresql';
import { STREAM_DOES_NOT_EXIST } from '@event-driven-io/emmett';
import type { Database } from '../src/db/database';
import { createPgDatabase } from '../src/db/pg';
import { createPgliteDatabase } from '../src/db/pglite';
import { createSqlEventStore } from '../src/eventstore/sql';
import type { EventStore } from '../src/eventstore/types';
import { machine, median, percentile, printTable, scratchDatabase, type Row } from './support';

const N = Number(process.env.BENCH_EVENTS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const payload = { payload: 'x'.repeat(200) };

type AppendNew = () => Promise<unknown>;

/** Appends per second: `writers` loops, each appending one event to a new stream, N events in all. */
async function rate(append: AppendNew, writers: number, total: number): Promise<number> {
  const t = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async () => {
      for (let i = 0; i < total / writers; i++) await append();
    }),
  );
  return (total / (performance.now() - t)) * 1000;
}

const ours =
  (store: EventStore): AppendNew =>
  () =>
    store.append(`bench-${randomUUID()}`, [{ type: 'Bench', data: payload }], {
      expectedRevision: 'no_stream',
    });

async function subscriptionLatency(store: EventStore) {
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
    await ours(store)();
    await seen;
  }
  await sub.stop();
  return `p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p99 ${percentile(latencies, 0.99).toFixed(1)} ms`;
}

async function pglite() {
  const db: Database = await createPgliteDatabase();
  const store = await createSqlEventStore(db);
  const one = await rate(ours(store), 1, N / 4);
  const many = await rate(ours(store), 16, N);
  const lat = await subscriptionLatency(store);
  await store.close();
  await db.close();
  return { one, many, lat };
}

async function main() {
  console.log(`Event store benchmark: ${machine()}`);
  const lite = await pglite();
  const rows: Row[] = [];
  const server = process.env.DATABASE_URL;
  if (!server) {
    console.log('PostgreSQL and Emmett: skipped (set DATABASE_URL to include them)');
  } else {
    const mine = await scratchDatabase(server, 'bench_es');
    const peer = await scratchDatabase(server, 'bench_emmett');
    const db = createPgDatabase(mine.url, { max: 20 });
    const store = await createSqlEventStore(db);
    const emmett = getPostgreSQLEventStore(peer.url);
    const theirs: AppendNew = () =>
      emmett.appendToStream(`bench-${randomUUID()}`, [{ type: 'Bench', data: payload }], {
        expectedStreamVersion: STREAM_DOES_NOT_EXIST,
      });
    try {
      // Warm-up: schemas, pools, JIT.
      await rate(ours(store), 16, 200);
      await rate(theirs, 16, 200);
      const r = {
        ours1: [] as number[],
        theirs1: [] as number[],
        ours16: [] as number[],
        theirs16: [] as number[],
      };
      for (let round = 0; round < ROUNDS; round++) {
        r.ours1.push(await rate(ours(store), 1, N / 4));
        r.theirs1.push(await rate(theirs, 1, N / 4));
        r.ours16.push(await rate(ours(store), 16, N));
        r.theirs16.push(await rate(theirs, 16, N));
      }
      const lat = await subscriptionLatency(store);
      const row = (figure: string, a: number[], b: number[], bar: number): Row => ({
        figure,
        project: `${median(a).toFixed(0)}/s`,
        peer: `Emmett ${median(b).toFixed(0)}/s`,
        ratio: median(a) / median(b),
        bar,
      });
      rows.push(row('PG appends, 16 writers (one event, new stream each)', r.ours16, r.theirs16, 2));
      rows.push(row('PG appends, 1 writer', r.ours1, r.theirs1, 1));
      rows.push({ figure: 'PG live subscription latency', project: lat, peer: '' });
      console.log(
        `rounds (ours/Emmett): 1 writer ${r.ours1.map((x, i) => `${x.toFixed(0)}/${r.theirs1[i]!.toFixed(0)}`).join(', ')}; ` +
          `16 writers ${r.ours16.map((x, i) => `${x.toFixed(0)}/${r.theirs16[i]!.toFixed(0)}`).join(', ')}`,
      );
    } finally {
      await emmett.close();
      await store.close();
      await db.close();
      await mine.drop();
      await peer.drop();
    }
  }
  rows.push({ figure: 'PGlite appends, 16 writers', project: `${lite.many.toFixed(0)}/s`, peer: '' });
  rows.push({ figure: 'PGlite appends, 1 writer', project: `${lite.one.toFixed(0)}/s`, peer: '' });
  rows.push({ figure: 'PGlite live subscription latency', project: lite.lat, peer: '' });
  printTable('Event store (medians; PGlite carries no bar)', rows);
}

void main();
