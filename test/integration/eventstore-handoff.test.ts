import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createPgDatabase } from '../../src/db/pg';
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

  // The subscription's safety timer fires after 1 s: an event that arrives later than this came from it,
  // not from the wake-up that announced it.
  const BEFORE_THE_TIMER_MS = 500;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("hands out another process's events announced while the subscriber was busy, without waiting for the timer", async () => {
    const a = await createSqlEventStore(database.db);
    const b = await createSqlEventStore(database.db);
    try {
      let release!: () => void;
      const busy = new Promise<void>((r) => (release = r));
      let sawOther = 0;
      const sub = a.subscribe({
        from: START,
        handler: async (batch) => {
          if (batch.some((e) => e.type === 'Other')) sawOther = performance.now();
          if (batch.some((e) => e.type === 'Block')) await busy;
        },
      });
      await sleep(100);
      await a.append(`x-${randomUUID()}`, [{ type: 'Block', data: {} }]);
      await sleep(50); // the subscriber is in its handler
      await a.append(`x-${randomUUID()}`, [
        { type: 'Own1', data: {} },
        { type: 'Own2', data: {} },
      ]);
      await b.append(`y-${randomUUID()}`, [{ type: 'Other', data: {} }]);
      await sleep(100); // b's NOTIFY has reached a and spent its wake-up on the busy subscriber
      const released = performance.now();
      release();
      while (!sawOther && performance.now() - released < 3000) await sleep(5);
      await sub.stop();
      expect(sawOther).toBeGreaterThan(0);
      expect(sawOther - released).toBeLessThan(BEFORE_THE_TIMER_MS);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("goes on from a position inside one of its batches into another process's events at once", async () => {
    const a = await createSqlEventStore(database.db);
    const b = await createSqlEventStore(database.db);
    try {
      const keep = a.subscribe({ from: START, handler: async () => undefined }); // so a keeps its batches
      await sleep(50);
      await a.append(`s-${randomUUID()}`, [
        { type: 'E1', data: {} },
        { type: 'E2', data: {} },
        { type: 'E3', data: {} },
      ]);
      await b.append(`t-${randomUUID()}`, [{ type: 'F', data: {} }]);
      await a.append(`s-${randomUUID()}`, [{ type: 'E4', data: {} }]);
      await sleep(100);
      const [first] = await a.readAll(START);
      const seen: string[] = [];
      const started = performance.now();
      let done = 0;
      const sub = a.subscribe({
        from: first!.position, // inside a's first batch
        handler: async (batch) => {
          seen.push(...batch.map((e) => e.type));
          if (seen.length >= 4 && !done) done = performance.now();
        },
      });
      while (!done && performance.now() - started < 3000) await sleep(5);
      await sub.stop();
      await keep.stop();
      expect(seen).toEqual(['E2', 'E3', 'F', 'E4']);
      expect(done - started).toBeLessThan(BEFORE_THE_TIMER_MS);
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
      let arrived: (batch: RecordedEvent[]) => void = () => undefined;
      const sub = store.subscribe({
        from: START,
        handler: async (batch) => {
          seen.push(...batch);
          arrived(batch);
        },
      });
      // Let the subscription catch up with what earlier tests left in this log (several batches on a slow
      // machine), shown by its arrival of a marker appended now; count from there.
      const caughtUp = new Promise<void>(
        (r) => (arrived = (batch) => batch.some((e) => e.type === 'Marker') && r()),
      );
      await store.append(`marker-${randomUUID()}`, [{ type: 'Marker', data: {} }]);
      await caughtUp;
      await new Promise((r) => setTimeout(r, 50));
      seen.length = 0;
      const before = logReads();
      const started = Date.now();
      for (let i = 0; i < appends; i++) {
        const next = new Promise<void>((r) => (arrived = () => r()));
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

const describePg = process.env.DATABASE_URL ? describe : describe.skip;
describePg('SQL event store handing over its appends under another default isolation (PostgreSQL)', () => {
  let database: TestDatabase;
  beforeEach(async () => {
    database = await freshPostgres(process.env.DATABASE_URL!);
  });
  afterEach(async () => {
    await database.drop();
  });

  it('gives no head before the batch to a session in repeatable read (its snapshot predates the lock)', async () => {
    const store = await createSqlEventStore(database.db);
    await store.close();
    const client = new Client({ connectionString: database.url });
    await client.connect();
    try {
      const batch = JSON.stringify([
        [{ s: 'rr', e: 'any', ev: [{ id: randomUUID(), type: 'T', data: {}, metadata: {} }] }],
      ]);
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      const rr = await client.query('SELECT prev_head FROM es_append_returning($1::jsonb)', [batch]);
      await client.query('COMMIT');
      expect(rr.rows).toEqual([{ prev_head: null }]);
      const rc = await client.query('SELECT prev_head FROM es_append_returning($1::jsonb)', [
        batch.replace(/"id":"[^"]+"/, `"id":"${randomUUID()}"`),
      ]);
      expect(rc.rows).toEqual([{ prev_head: '1' }]);
    } finally {
      await client.end();
    }
  });

  it('hands every event to a subscriber when the database defaults to repeatable read', async () => {
    // The service's connections run READ COMMITTED whatever the database's default (src/db/pg.ts).
    const name = new URL(database.url!).pathname.slice(1);
    const admin = new Client({ connectionString: database.url });
    await admin.connect();
    await admin.query(`ALTER DATABASE "${name}" SET default_transaction_isolation = 'repeatable read'`);
    await admin.end();
    const dbA = createPgDatabase(database.url!, { max: 4 });
    const dbB = createPgDatabase(database.url!, { max: 4 });
    const a = await createSqlEventStore(dbA);
    const b = await createSqlEventStore(dbB);
    try {
      const seen: RecordedEvent[] = [];
      const sub = a.subscribe({ from: START, handler: async (batch) => void seen.push(...batch) });
      await new Promise((r) => setTimeout(r, 100));
      await Promise.all(
        [a, b].flatMap((store, w) =>
          Array.from({ length: 8 }, async (_, k) => {
            for (let i = 0; i < 20; i++) await store.append(`w${w}-${k}`, [{ type: 'T', data: { w, k, i } }]);
          }),
        ),
      );
      const log = await a.readAll(START, 10_000);
      expect(log).toHaveLength(320);
      for (let waited = 0; seen.length < log.length && waited < 5000; waited += 20)
        await new Promise((r) => setTimeout(r, 20));
      await sub.stop();
      expect(seen.map((e) => e.id)).toEqual(log.map((e) => e.id));
    } finally {
      await a.close();
      await b.close();
      await dbA.close();
      await dbB.close();
    }
  });
});
