import { randomUUID } from 'node:crypto';
import { appendInTransaction, createSqlEventStore } from '../../src/eventstore/sql';
import type { EventStore, RecordedEvent } from '../../src/eventstore/types';
import { freshPglite, freshPostgres, type TestDatabase } from '../support/services';

/**
 * The global-ordering gap (DESIGN section 4): a subscriber must never skip an event because a later
 * position committed first. These cases need real concurrent connections, so they run on PostgreSQL
 * when DATABASE_URL is set, and on PGlite (one connection) always.
 */
const targets: [string, () => Promise<TestDatabase>][] = [['PGlite', freshPglite]];
if (process.env.DATABASE_URL) targets.push(['PostgreSQL', () => freshPostgres(process.env.DATABASE_URL!)]);
else console.warn('eventstore-ordering: PostgreSQL cases skipped: DATABASE_URL is not set');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(targets)('SQL event store ordering on %s', (_name, open) => {
  let database: TestDatabase;
  let store: EventStore;
  beforeEach(async () => {
    database = await open();
    store = await createSqlEventStore(database.db);
  });
  afterEach(async () => {
    await store.close();
    await database.drop();
  });

  it('does not let a later append become visible while an earlier one is uncommitted', async () => {
    const head = await store.headPosition();
    let releaseFirst!: () => void;
    const gate = new Promise<void>((r) => (releaseFirst = r));
    const first = database.db.transaction(async (tx) => {
      await appendInTransaction(tx, `first-${randomUUID()}`, [{ type: 'First', data: {} }]);
      await gate; // hold the transaction open, as a slow writer would
    });
    await sleep(50);
    const second = store.append(`second-${randomUUID()}`, [{ type: 'Second', data: {} }]);
    await sleep(150);
    // A naive reader of `position > checkpoint` would see Second here and move past First forever.
    if (database.kind === 'postgres') expect(await store.readAll(head)).toEqual([]);
    releaseFirst();
    await Promise.all([first, second]);
    expect((await store.readAll(head)).map((e) => e.type)).toEqual(['First', 'Second']);
  });

  it('delivers every event exactly once, in log order, to a subscriber reading during concurrent appends', async () => {
    const writers = 8;
    const appendsEach = 25;
    const seen: RecordedEvent[] = [];
    const total = writers * appendsEach * 2;
    const done = new Promise<void>((resolve, reject) => {
      const sub = store.subscribe({
        from: { commit: -1n, prepare: -1n },
        batchSize: 7, // small batches: many reads interleave with the writers
        onError: reject,
        handler: async (batch) => {
          seen.push(...batch);
          if (seen.length >= total) {
            void sub.stop();
            resolve();
          }
        },
      });
    });
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let i = 0; i < appendsEach; i++)
          await store.append(`writer-${w}`, [
            { type: 'Tick', data: { w, i, part: 0 } },
            { type: 'Tick', data: { w, i, part: 1 } },
          ]);
      }),
    );
    await done;
    const log = await store.readAll({ commit: -1n, prepare: -1n }, 10_000);
    expect(log).toHaveLength(total);
    expect(seen.map((e) => e.id)).toEqual(log.map((e) => e.id));
    expect(new Set(seen.map((e) => e.id)).size).toBe(total);
    for (let w = 0; w < writers; w++) {
      const mine = seen.filter((e) => e.streamName === `writer-${w}`).map((e) => e.revision);
      expect(mine).toEqual(mine.map((_, i) => BigInt(i)));
    }
  });

  it('keeps 64-bit positions exact beyond 2^53', async () => {
    const big = 2n ** 53n + 1n;
    await database.db.query(`SELECT setval('es_events_position_seq', $1::bigint)`, [big.toString()]);
    const res = await store.append(`big-${randomUUID()}`, [{ type: 'Big', data: {} }]);
    expect(res.position.commit).toBe(big + 1n);
    const [e] = await store.readAll({ commit: big, prepare: big });
    expect(e!.position).toEqual({ commit: big + 1n, prepare: big + 1n });
    expect(await store.headPosition()).toEqual({ commit: big + 1n, prepare: big + 1n });
  });
});

const describePg = process.env.DATABASE_URL ? describe : describe.skip;
describePg('the hazard the append lock prevents (PostgreSQL; skipped without DATABASE_URL)', () => {
  it('a plain bigserial insert lets a later position commit first, so a naive reader skips one', async () => {
    const database = await freshPostgres(process.env.DATABASE_URL!);
    const store = await createSqlEventStore(database.db);
    try {
      const insert = (tx: { query: (s: string, p?: unknown[]) => Promise<unknown> }, name: string) =>
        tx.query(
          `INSERT INTO es_events (event_id, stream_name, revision, type, data, metadata)
           VALUES ($1, $2, 0, 'Raw', '{}', '{}')`,
          [randomUUID(), name],
        );
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const slow = database.db.transaction(async (tx) => {
        await insert(tx, 'slow'); // takes the lower position, commits last
        await gate;
      });
      await sleep(50);
      await database.db.transaction((tx) => insert(tx, 'fast'));
      const naive = await store.readAll({ commit: -1n, prepare: -1n });
      expect(naive.map((e) => e.streamName)).toEqual(['fast']);
      const checkpoint = naive[0]!.position;
      release();
      await slow;
      // The naive reader resumes after its checkpoint and never sees 'slow'.
      expect(await store.readAll(checkpoint)).toEqual([]);
    } finally {
      await store.close();
      await database.drop();
    }
  });
});
