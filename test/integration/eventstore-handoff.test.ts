import { randomUUID } from 'node:crypto';
import { createSqlEventStore } from '../../src/eventstore/sql';
import type { Database } from '../../src/db/database';
import { type EventStore, type RecordedEvent, START } from '../../src/eventstore/types';
import { freshPglite, freshPostgres, type TestDatabase } from '../support/services';

/**
 * A SQL store hands its own appended events to its subscribers as the append wrote them, without reading
 * the log back: they must be exactly what a read returns, in log order, and whatever another process wrote
 * in between must still be read from the log.
 */
const targets: [string, () => Promise<TestDatabase>][] = [['PGlite', freshPglite]];
if (process.env.DATABASE_URL) targets.push(['PostgreSQL', () => freshPostgres(process.env.DATABASE_URL!)]);

/** The database, counting the log reads subscribers make. */
function counting(db: Database): { db: Database; logReads: () => number } {
  let reads = 0;
  return {
    db: {
      ...db,
      query: (sql, params, opts) => {
        if (opts?.name === 'es_read_all') reads++;
        return db.query(sql, params, opts);
      },
    },
    logReads: () => reads,
  };
}

/** Subscribes from `from` and resolves once `count` events arrived (all of them, in arrival order). */
function collect(store: EventStore, from: RecordedEvent['position'], count: number, batchSize = 200) {
  const seen: RecordedEvent[] = [];
  let stop: () => Promise<void> = async () => undefined;
  const done = new Promise<RecordedEvent[]>((resolve, reject) => {
    const sub = store.subscribe({
      from,
      batchSize,
      onError: reject,
      handler: async (batch) => {
        seen.push(...batch);
        if (seen.length >= count) resolve(seen);
      },
    });
    stop = () => sub.stop();
  });
  return { done, seen, stop: () => stop() };
}

describe.each(targets)('SQL event store handing its own appends to its subscribers, on %s', (_name, open) => {
  let database: TestDatabase;
  beforeEach(async () => {
    database = await open();
  });
  afterEach(async () => {
    await database.drop();
  });

  it('hands out exactly what a read of the log returns: data, metadata, times, positions', async () => {
    const store = await createSqlEventStore(database.db);
    try {
      const odd = {
        zeta: 1,
        a: { longerKey: [3, { y: 'ü', b: null }], k: 1.5 },
        big: 1e21,
        small: -0.000001,
        text: 'line\nbreak "quoted" \\ €𝄞',
        empty: {},
      };
      const s = `odd-${randomUUID()}`;
      const sub = collect(store, START, 7);
      await store.append(s, [
        { type: 'One', data: odd, metadata: { correlationId: 'c-1', z: true, a: [1] } },
        { type: 'Two', data: [odd, 2] },
      ]);
      // A batch with a refused group, a multi-stream group and a plain append together.
      const results = await Promise.allSettled([
        store.append(s, [{ type: 'Stale', data: {} }], { expectedRevision: 0n }),
        store.appendMany!([
          { streamName: `m1-${randomUUID()}`, events: [{ type: 'M1', data: { n: 1 } }] },
          {
            streamName: `m2-${randomUUID()}`,
            events: [
              { type: 'M2', data: { n: 2 } },
              { type: 'M3', data: { n: 3 } },
            ],
          },
        ]),
        store.append(s, [{ type: 'Three', data: { n: 4 } }], { expectedRevision: 1n }),
        store.append(`p-${randomUUID()}`, [{ type: 'Four', data: 'plain string' }]),
      ]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
      const handed = await sub.done;
      await sub.stop();
      const log = await store.readAll(START, 100);
      expect(log.map((e) => e.type)).toEqual(['One', 'Two', 'M1', 'M2', 'M3', 'Three', 'Four']);
      expect(handed).toEqual(log);
      // Same keys in the same order (jsonb's), not only equal values.
      expect(handed.map((e) => JSON.stringify([e.data, e.metadata]))).toEqual(
        log.map((e) => JSON.stringify([e.data, e.metadata])),
      );
      expect(handed.map((e) => e.createdAt.toISOString())).toEqual(log.map((e) => e.createdAt.toISOString()));
    } finally {
      await store.close();
    }
  });

  it('reads the log for what another process appended between its own batches: all, once, in order', async () => {
    const a = await createSqlEventStore(database.db);
    const b = await createSqlEventStore(database.db);
    try {
      const rounds = 40;
      const total = rounds * 4;
      // Small batches, so a subscriber also stops inside a batch of its own and goes on from there.
      const sub = collect(a, START, total, 3);
      await Promise.all(
        [a, b].map(async (store, w) => {
          for (let i = 0; i < rounds; i++)
            await store.append(`w${w}-${i % 3}`, [
              { type: 'Tick', data: { w, i, part: 0 } },
              { type: 'Tick', data: { w, i, part: 1 } },
            ]);
        }),
      );
      const seen = await sub.done;
      await sub.stop();
      const log = await a.readAll(START, 10_000);
      expect(log).toHaveLength(total);
      expect(seen.map((e) => e.id)).toEqual(log.map((e) => e.id));
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('serves a subscriber that keeps up from memory: no log read per append, none for its own NOTIFY', async () => {
    const { db, logReads } = counting(database.db);
    const store = await createSqlEventStore(db);
    try {
      const appends = 60;
      const seen: RecordedEvent[] = [];
      let arrived: () => void = () => undefined;
      const sub = store.subscribe({
        from: START,
        handler: async (batch) => {
          seen.push(...batch);
          arrived();
        },
      });
      // Let the subscription start (its first read finds the empty log), then count from there.
      await new Promise((r) => setTimeout(r, 100));
      const before = logReads();
      const started = Date.now();
      for (let i = 0; i < appends; i++) {
        const next = new Promise<void>((r) => (arrived = r));
        await store.append(`s-${i % 5}`, [{ type: 'Tick', data: { i } }]);
        await next;
        // Time for the append's NOTIFY to come back: it must not send the subscriber to read.
        await new Promise((r) => setTimeout(r, 5));
      }
      await sub.stop();
      expect(seen.map((e) => (e.data as { i: number }).i)).toEqual([...Array(appends).keys()]);
      // Only the subscription's idle timer (one read a second while nothing wakes it) may read the log.
      const seconds = Math.ceil((Date.now() - started) / 1000);
      expect(logReads() - before).toBeLessThanOrEqual(seconds);
    } finally {
      await store.close();
    }
  });
});
