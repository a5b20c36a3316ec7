import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { Client } from 'pg';
import { createPgDatabase } from '../../src/db/pg';
import type { Database, QueryOptions } from '../../src/db/database';
import { createSqlEventStore } from '../../src/eventstore/sql';
import { type EventStore, type RecordedEvent, START } from '../../src/eventstore/types';
import { freshPglite, freshPostgres, type TestDatabase } from '../support/services';

/**
 * The SQL store when connections fail: an append whose answer is lost after its commit is not written
 * twice (and is answered as written), and a subscriber that misses notifications (its LISTEN connection
 * killed, or a NOTIFY lost) still gets every event of the log, once, in order, and soon.
 */
const targets: [string, () => Promise<TestDatabase>][] = [['PGlite', freshPglite]];
if (process.env.DATABASE_URL) targets.push(['PostgreSQL', () => freshPostgres(process.env.DATABASE_URL!)]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const lost = () => new Error('Connection terminated unexpectedly');

/** The database with its appends' answers lost as `fate` says: after the statement ran, or instead of it. */
function lossy(db: Database, fate: (call: number) => 'answer lost' | 'not sent' | 'ok'): Database {
  let calls = 0;
  return {
    ...db,
    query: async <R>(sql: string, params?: unknown[], opts?: QueryOptions) => {
      if (opts?.name !== 'es_append_returning') return db.query<R>(sql, params, opts);
      const f = fate(++calls);
      if (f === 'not sent') throw lost();
      const res = await db.query<R>(sql, params, opts);
      if (f === 'answer lost') throw lost();
      return res;
    },
  };
}

describe.each(targets)('SQL event store appends whose answers are lost, on %s', (_name, open) => {
  let database: TestDatabase;
  beforeEach(async () => {
    database = await open();
  });
  afterEach(async () => {
    await database.drop();
  });

  it('answers a batch that committed before its answer was lost as written, and writes nothing twice', async () => {
    const store = await createSqlEventStore(lossy(database.db, (n) => (n === 1 ? 'answer lost' : 'ok')));
    try {
      const results = await Promise.all([
        store.append('s1', [{ type: 'T', data: { n: 1 } }]),
        store.append('s2', [
          { type: 'T', data: { n: 2 } },
          { type: 'U', data: {} },
        ]),
        store.append('s3', [{ type: 'T', data: { n: 3 } }], { expectedRevision: 'no_stream' }),
      ]);
      const log = await store.readAll(START, 100);
      expect(log.map((e) => `${e.streamName}@${e.revision}`)).toEqual(['s1@0', 's2@0', 's2@1', 's3@0']);
      expect(results.map((r) => r.nextRevision)).toEqual([0n, 1n, 0n]);
      expect(results.map((r) => r.position.commit)).toEqual(
        [log[0]!, log[2]!, log[3]!].map((e) => e.position.commit),
      );
    } finally {
      await store.close();
    }
  });

  it('answers an appendMany (with a condition) that committed before its answer was lost, once', async () => {
    const plain = await createSqlEventStore(database.db);
    await plain.append('kept', [{ type: 'K', data: {} }]);
    const store = await createSqlEventStore(lossy(database.db, (n) => (n === 1 ? 'answer lost' : 'ok')));
    try {
      const results = await store.appendMany!([
        { streamName: 'hold', events: [{ type: 'H', data: {} }], expectedRevision: 'no_stream' },
        { streamName: 'kept', condition: true, expectedRevision: 0n },
      ]);
      expect(results.map((r) => r.nextRevision)).toEqual([0n, 0n]);
      const log = await store.readAll(START, 100);
      expect(log.map((e) => e.streamName)).toEqual(['kept', 'hold']);
      expect(results[1]!.position).toEqual(log[1]!.position);
    } finally {
      await store.close();
      await plain.close();
    }
  });

  it('answers each append of a recovered appendMany with its own last position, as a plain answer does', async () => {
    const store = await createSqlEventStore(lossy(database.db, (n) => (n === 1 ? 'answer lost' : 'ok')));
    try {
      const r = await store.appendMany!([
        {
          streamName: 'r1',
          events: [
            { type: 'A', data: {} },
            { type: 'A', data: {} },
          ],
        },
        { streamName: 'r2', events: [{ type: 'B', data: {} }] },
      ]);
      const log = await store.readAll(START, 100);
      expect(r.map((x) => x.position.commit)).toEqual([log[1]!.position.commit, log[2]!.position.commit]);
      expect(r.map((x) => x.nextRevision)).toEqual([1n, 0n]);
    } finally {
      await store.close();
    }
  });

  it('answers as written a recovered append whose caller gave its id in another uuid spelling', async () => {
    const store = await createSqlEventStore(lossy(database.db, (n) => (n === 1 ? 'answer lost' : 'ok')));
    try {
      const id = randomUUID();
      await store.append('x', [{ id: `{${id.replace(/-/g, '').toUpperCase()}}`, type: 'X', data: {} }]);
      expect((await store.readAll(START, 100)).map((e) => e.id)).toEqual([id]);
    } finally {
      await store.close();
    }
  });

  it('checks the log when the resend loses its answer too', async () => {
    const store = await createSqlEventStore(
      lossy(database.db, (n) => (n <= 2 ? (n === 1 ? 'not sent' : 'answer lost') : 'ok')),
    );
    try {
      const r = await store.append('twice', [{ type: 'T', data: {} }], { expectedRevision: 'no_stream' });
      expect(r.nextRevision).toBe(0n);
      expect((await store.readAll(START, 100)).map((e) => e.streamName)).toEqual(['twice']);
    } finally {
      await store.close();
    }
  });

  it('sends a batch whose statement never reached the server again, with the same events, once', async () => {
    const store = await createSqlEventStore(lossy(database.db, (n) => (n === 1 ? 'not sent' : 'ok')));
    try {
      const ids: string[] = [randomUUID(), randomUUID()];
      await Promise.all([
        store.append('a', [{ id: ids[0], type: 'A', data: {} }], { expectedRevision: 'no_stream' }),
        store.append('b', [{ id: ids[1], type: 'B', data: {} }]),
        store.append('c', [{ type: 'C', data: {} }], { expectedRevision: 'no_stream' }),
      ]);
      const log = await store.readAll(START, 100);
      expect(log.map((e) => e.streamName).sort()).toEqual(['a', 'b', 'c']);
      expect(log.filter((e) => ids.includes(e.id))).toHaveLength(2);
    } finally {
      await store.close();
    }
  });

  it('answers as written an append that committed late, after the log was asked and found nothing', async () => {
    // The first attempt's statement runs only once the store has looked for its events (a backend still
    // committing after its client gave up): the resend is then refused, and that refusal is checked.
    let late: (() => Promise<unknown>) | undefined;
    const db = database.db;
    const racing: Database = {
      ...db,
      query: async <R>(sql: string, params?: unknown[], opts?: QueryOptions) => {
        if (opts?.name === 'es_append_returning' && !late) {
          late = () => db.query(sql, params, opts);
          throw lost();
        }
        const res = await db.query<R>(sql, params, opts);
        if (sql.includes('event_id = ANY') && late) {
          const commit = late;
          late = async () => undefined;
          await commit();
        }
        return res;
      },
    };
    const store = await createSqlEventStore(racing);
    try {
      const results = await Promise.all([
        store.append('x', [{ type: 'X', data: {} }], { expectedRevision: 'no_stream' }),
        store.append('y', [{ type: 'Y', data: {} }]),
      ]);
      const log = await store.readAll(START, 100);
      expect(log.map((e) => `${e.streamName}@${e.revision}`).sort()).toEqual(['x@0', 'y@0']);
      expect(results.map((r) => r.nextRevision)).toEqual([0n, 0n]);
    } finally {
      await store.close();
    }
  });

  it('still refuses a stale append sent again (its events are not in the log): nothing is written', async () => {
    const plain = await createSqlEventStore(database.db);
    await plain.append('busy', [{ type: 'First', data: {} }]);
    const store = await createSqlEventStore(lossy(database.db, (n) => (n === 1 ? 'not sent' : 'ok')));
    try {
      const refused = await store
        .append('busy', [{ type: 'Second', data: {} }], { expectedRevision: 'no_stream' })
        .catch((e: unknown) => e);
      expect((refused as Error).name).toBe('WrongExpectedRevisionError');
      expect((await store.readAll(START, 100)).map((e) => e.type)).toEqual(['First']);
    } finally {
      await store.close();
      await plain.close();
    }
  });
});

const describePg = process.env.DATABASE_URL ? describe : describe.skip;

/** Subscribes from the start; notes when each event arrived. */
function watch(store: EventStore) {
  const seen: RecordedEvent[] = [];
  const at = new Map<string, number>();
  const sub = store.subscribe({
    from: START,
    handler: async (batch) => {
      for (const e of batch) at.set(e.id, performance.now());
      seen.push(...batch);
    },
  });
  return { seen, at, sub };
}

/** How long after `since` the event `id` arrived (Infinity: not within `ms`). */
async function arrival(w: ReturnType<typeof watch>, id: string, since: number, ms: number) {
  while (!w.at.has(id) && performance.now() - since < ms) await sleep(5);
  return w.at.has(id) ? w.at.get(id)! - since : Infinity;
}

describePg('SQL event store subscribers when notifications are lost (PostgreSQL, two processes)', () => {
  let database: TestDatabase;
  let pools: Database[] = [];
  let admin: Client;
  const processDb = () => {
    const d = createPgDatabase(database.url!, { max: 4 });
    pools.push(d);
    return d;
  };
  const listenPids = async () =>
    (
      await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN es_events'`,
      )
    ).rows.map((r) => r.pid);
  beforeEach(async () => {
    database = await freshPostgres(process.env.DATABASE_URL!);
    admin = new Client({ connectionString: database.url });
    await admin.connect();
    pools = [];
  });
  afterEach(async () => {
    await admin.end();
    for (const d of pools) await d.close().catch(() => undefined);
    await database.drop();
  });

  it("gets another process's event within its 1 s timer when every NOTIFY is lost", async () => {
    const deaf: Database = { ...processDb(), listen: async () => async () => undefined };
    const a = await createSqlEventStore(deaf);
    const b = await createSqlEventStore(processDb());
    try {
      const w = watch(a);
      await a.append('a-1', [{ type: 'A', data: {} }]);
      await sleep(1300); // the timer has read the log's (empty) tail at least once since
      const id = randomUUID();
      const appended = performance.now();
      await b.append('b-1', [{ id, type: 'B', data: {} }]);
      expect(await arrival(w, id, appended, 3000)).toBeLessThan(1500);
      await w.sub.stop();
      expect(w.seen.map((e) => e.id)).toEqual((await a.readAll(START, 100)).map((e) => e.id));
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('wakes its subscribers once LISTEN is back after its connection was killed: an event of the gap arrives', async () => {
    const a = await createSqlEventStore(processDb());
    const b = await createSqlEventStore(processDb());
    try {
      const w = watch(a);
      await sleep(200);
      const [pid] = await listenPids();
      expect(pid).toBeDefined();
      await a.append('a-1', [{ type: 'A', data: {} }]);
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      const id = randomUUID();
      const appended = performance.now();
      await b.append('b-1', [{ id, type: 'B', data: {} }]); // its NOTIFY may find nobody listening
      expect(await arrival(w, id, appended, 3000)).toBeLessThan(500);
      const after = randomUUID();
      const t = performance.now();
      await b.append('b-1', [{ id: after, type: 'B2', data: {} }]);
      expect(await arrival(w, after, t, 3000)).toBeLessThan(500); // notifications work again
      await w.sub.stop();
      expect(w.seen.map((e) => e.id)).toEqual((await a.readAll(START, 100)).map((e) => e.id));
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('gets every event once, in order, while its LISTEN connection is killed again and again', async () => {
    const a = await createSqlEventStore(processDb());
    const b = await createSqlEventStore(processDb());
    try {
      const w = watch(a);
      await sleep(200);
      let running = true;
      const killer = (async () => {
        while (running) {
          await sleep(150);
          for (const pid of await listenPids()) await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        }
      })();
      await Promise.all(
        [a, b].flatMap((store, s) =>
          Array.from({ length: 4 }, async (_, k) => {
            for (let i = 0; i < 50; i++) {
              await store.append(`p${s}-${k}`, [{ type: 'T', data: { s, k, i } }]);
              await sleep(Math.random() * 10);
            }
          }),
        ),
      );
      running = false;
      await killer;
      const log = await a.readAll(START, 10_000);
      expect(log).toHaveLength(400);
      for (let t = 0; w.seen.length < log.length && t < 10_000; t += 20) await sleep(20);
      await w.sub.stop();
      expect(w.seen.map((e) => e.id)).toEqual(log.map((e) => e.id));
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('makes one LISTEN connection when the socket dies during LISTEN, and still closes', async () => {
    // A TCP proxy in front of PostgreSQL that cuts the connection (no error from the server) at its first LISTEN.
    const target = new URL(database.url!);
    let cut = false;
    const proxy = net.createServer((c) => {
      const s = net.connect(Number(target.port || 5432), target.hostname);
      c.on('data', (buf) => {
        if (!cut && buf.includes('LISTEN ')) {
          cut = true;
          c.destroy();
          s.destroy();
          return;
        }
        s.write(buf);
      });
      s.on('data', (b) => c.write(b));
      for (const [a, b] of [
        [c, s],
        [s, c],
      ] as const) {
        a.on('error', () => b.destroy());
        a.on('close', () => b.destroy());
      }
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const via = new URL(database.url!);
    via.hostname = '127.0.0.1';
    via.port = String((proxy.address() as net.AddressInfo).port);
    const db = createPgDatabase(via.toString(), { max: 4 });
    try {
      const wakes: string[] = [];
      const unlisten = await db.listen('es_events', (x) => wakes.push(x));
      await sleep(1500);
      expect(cut).toBe(true);
      expect(await listenPids()).toHaveLength(1);
      await admin.query(`NOTIFY es_events, '42'`);
      await sleep(100);
      expect(wakes.filter((w) => w === '42')).toHaveLength(1);
      await unlisten();
      const closed = await Promise.race([db.close().then(() => 'closed'), sleep(3000).then(() => 'hung')]);
      expect(closed).toBe('closed');
    } finally {
      proxy.close();
    }
  });

  it("takes in another process's NOTIFY while its own batch waits for the append lock", async () => {
    const a = await createSqlEventStore(processDb());
    const b = await createSqlEventStore(processDb());
    const x = new Client({ connectionString: database.url });
    const y = new Client({ connectionString: database.url });
    await x.connect();
    await y.connect();
    try {
      const w = watch(a);
      await a.append('a-0', [{ type: 'A0', data: {} }]);
      await sleep(200);
      // x holds the append lock while b queues behind it; then y takes it for 2 s and a's batch waits.
      await x.query('BEGIN');
      await x.query('SELECT pg_advisory_xact_lock(7150002)');
      const id = randomUUID();
      const bDone = b.append('b-1', [{ id, type: 'B', data: {} }]);
      await sleep(100);
      await y.query('BEGIN');
      const yHolds = y.query('SELECT pg_advisory_xact_lock(7150002), pg_sleep(2)');
      await sleep(100);
      const aDone = a.append('a-1', [{ type: 'A1', data: {} }]);
      await sleep(100);
      await x.query('COMMIT'); // b commits and notifies; y takes the lock; a's batch waits behind y
      const committed = performance.now();
      await bDone;
      expect(await arrival(w, id, committed, 3000)).toBeLessThan(300);
      await yHolds;
      await y.query('COMMIT');
      await aDone;
      await sleep(200);
      await w.sub.stop();
      expect(w.seen.map((e) => e.id)).toEqual((await a.readAll(START, 100)).map((e) => e.id));
    } finally {
      await x.end();
      await y.end();
      await a.close();
      await b.close();
    }
  });
});
