import { randomUUID } from 'node:crypto';
import type { Database } from '../../src/db/database';
import { migrate } from '../../src/db/migrate';
import { createPgDatabase } from '../../src/db/pg';
import { createSqlEventStore } from '../../src/eventstore/sql';
import type { EventStore } from '../../src/eventstore/types';
import { createLogger } from '../../src/log';
import { createProjectionRunner, type Projection } from '../../projections/runner';
import { testDatabase, type TestDatabase } from '../support/services';

const log = createLogger({ test: 'runner' });
const itPg = process.env.DATABASE_URL ? it : it.skip;

/** Checkpoint rows at the log's head: these projections start with what is appended next. */
const startAtHead = async (db: Database, store: EventStore, names: string[]) => {
  const head = await store.headPosition();
  for (const name of names)
    await db.query(
      `INSERT INTO projection_checkpoints (name, commit_position, prepare_position) VALUES ($1, $2, $2)`,
      [name, head.commit.toString()],
    );
};

describe('projection runner', () => {
  let database: TestDatabase;
  let store: EventStore;
  beforeAll(async () => {
    database = await testDatabase();
    await migrate(database.db);
    store = await createSqlEventStore(database.db);
    await database.db.query(
      'CREATE TABLE seen (event_id uuid, projection text, n int, PRIMARY KEY (projection, event_id))',
    );
  });
  afterAll(async () => {
    await store.close();
    await database.drop();
  });

  /** Writes one row per event; the row is inserted before `fail` may throw, to prove the rollback. */
  const recorder = (
    name: string,
    fail: (n: number, attempt: number) => Error | null = () => null,
  ): Projection => {
    const attempts = new Map<number, number>();
    return {
      name,
      handles: ['Numbered'],
      async apply(tx, e) {
        const n = (e.data as { n: number }).n;
        await tx.query('INSERT INTO seen (event_id, projection, n) VALUES ($1, $2, $3)', [e.id, name, n]);
        const attempt = (attempts.get(n) ?? 0) + 1;
        attempts.set(n, attempt);
        const err = fail(n, attempt);
        if (err) throw err;
      },
    };
  };
  const rows = async (name: string) =>
    (
      await database.db.query<{ n: number }>('SELECT n FROM seen WHERE projection = $1 ORDER BY n', [name])
    ).rows.map((r) => r.n);
  const appendNumbered = async (from: number, to: number) => {
    let last;
    for (let n = from; n <= to; n++)
      last = await store.append(`num-${randomUUID()}`, [{ type: 'Numbered', data: { n } }]);
    return last!.position;
  };

  it('applies events once, moves the checkpoint with them, and lets a command wait for its position', async () => {
    const runner = createProjectionRunner(store, database.db, [recorder('ok')], log);
    await runner.start();
    const pos = await appendNumbered(1, 5);
    expect(await runner.waitFor(pos, 3000, ['ok'])).toBe(true);
    expect(await rows('ok')).toEqual([1, 2, 3, 4, 5]);
    const cp = await database.db.query<{ c: string }>(
      "SELECT commit_position::text AS c FROM projection_checkpoints WHERE name = 'ok'",
    );
    expect(BigInt(cp.rows[0]!.c)).toBe(pos.commit);
    await runner.stop();
    // Restarted, it resumes after its checkpoint: no event is applied twice (the primary key would refuse).
    const again = createProjectionRunner(store, database.db, [recorder('ok')], log);
    await again.start();
    const pos2 = await appendNumbered(6, 6);
    expect(await again.waitFor(pos2, 3000, ['ok'])).toBe(true);
    expect(await rows('ok')).toEqual([1, 2, 3, 4, 5, 6]);
    await again.stop();
  });

  // PostgreSQL only: on PGlite (one connection, one instance) no other instance can move a checkpoint.
  itPg(
    'a checkpoint another instance moved meanwhile: the read model reads it and applies only what came after (skipped without DATABASE_URL)',
    async () => {
      const name = 'moved-a';
      await startAtHead(database.db, store, [name]);
      // Holds the application of event 802 until the other instance has applied it.
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      let reached!: () => void;
      const atGate = new Promise<void>((r) => (reached = r));
      const projection = recorder(name);
      const gated: Projection = {
        ...projection,
        async apply(tx, e) {
          if ((e.data as { n: number }).n === 802) {
            reached();
            await gate;
          }
          await projection.apply!(tx, e);
        },
      };
      let refused = 0;
      const counted: Database = {
        ...database.db,
        kind: database.db.kind,
        query: async (sql, params, opts) => {
          try {
            return await database.db.query(sql, params, opts);
          } catch (err) {
            if ((err as { code?: string }).code === 'RM001') refused++;
            throw err;
          }
        },
      };
      const runner = createProjectionRunner(store, counted, [gated], log);
      await runner.start();
      try {
        while (runner.status().some((st) => st.mode !== 'live')) await new Promise((r) => setTimeout(r, 10));
        expect(await runner.waitFor(await appendNumbered(801, 801), 10_000)).toBe(true);
        const stream = `num-${randomUUID()}`;
        const e802 = await store.append(stream, [{ type: 'Numbered', data: { n: 802 } }]);
        await atGate;
        // The other instance applies 802 and moves the checkpoint past it.
        const [event] = (await store.readStream(stream)).events;
        await database.db.query('INSERT INTO seen (event_id, projection, n) VALUES ($1, $2, 802)', [
          event!.id,
          name,
        ]);
        await database.db.query(
          'UPDATE projection_checkpoints SET commit_position = $2, prepare_position = $3 WHERE name = $1',
          [name, e802.position.commit.toString(), e802.position.prepare.toString()],
        );
        open();
        const end = await appendNumbered(803, 803);
        expect(await runner.waitFor(end, 10_000)).toBe(true);
        expect((await rows(name)).filter((n) => n > 800)).toEqual([801, 802, 803]);
        expect(runner.status()[0]!.state).toBe('running');
        expect(refused).toBe(1);
      } finally {
        open();
        await runner.stop();
      }
    },
  );

  it('a checkpoint found behind what it committed (PostgreSQL lost commits): applies the log again from it', async () => {
    const name = 'lost-commits';
    await startAtHead(database.db, store, [name]);
    const runner = createProjectionRunner(store, database.db, [recorder(name)], log);
    await runner.start();
    try {
      while (runner.status().some((st) => st.mode !== 'live')) await new Promise((r) => setTimeout(r, 10));
      const first = await appendNumbered(901, 901);
      const end = await appendNumbered(902, 903);
      expect(await runner.waitFor(end, 10_000)).toBe(true);
      expect((await rows(name)).filter((n) => n > 900)).toEqual([901, 902, 903]);
      // What a crash of PostgreSQL does to read-model commits it acknowledged but had not flushed yet
      // (synchronous commit is off for them): gone, the rows and the checkpoint together.
      await database.db.query('DELETE FROM seen WHERE projection = $1 AND n IN (902, 903)', [name]);
      await database.db.query(
        'UPDATE projection_checkpoints SET commit_position = $2, prepare_position = $3 WHERE name = $1',
        [name, first.commit.toString(), first.prepare.toString()],
      );
      const last = await appendNumbered(904, 904);
      expect(await runner.waitFor(last, 10_000)).toBe(true);
      expect((await rows(name)).filter((n) => n > 900)).toEqual([901, 902, 903, 904]);
      expect(runner.status()[0]!.state).toBe('running');
      const saved = await database.db.query<{ c: string }>(
        'SELECT commit_position::text AS c FROM projection_checkpoints WHERE name = $1',
        [name],
      );
      expect(saved.rows[0]!.c).toBe(last.commit.toString());
    } finally {
      await runner.stop();
    }
  });

  itPg(
    "a lost commit is applied again without waiting for the read model's next event (the rows are audited; skipped without DATABASE_URL)",
    async () => {
      const name = 'lost-quiet';
      await startAtHead(database.db, store, [name]);
      const runner = createProjectionRunner(store, database.db, [recorder(name)], log, { auditEveryMs: 50 });
      await runner.start();
      try {
        while (runner.status().some((st) => st.mode !== 'live')) await new Promise((r) => setTimeout(r, 10));
        const first = await appendNumbered(951, 951);
        expect(await runner.waitFor(await appendNumbered(952, 953), 10_000)).toBe(true);
        // A crash of PostgreSQL takes back 952 and 953; no event of this read model follows.
        await database.db.query('DELETE FROM seen WHERE projection = $1 AND n IN (952, 953)', [name]);
        await database.db.query(
          'UPDATE projection_checkpoints SET commit_position = $2, prepare_position = $3 WHERE name = $1',
          [name, first.commit.toString(), first.prepare.toString()],
        );
        const restored = async () => (await rows(name)).filter((n) => n > 950).join(',') === '951,952,953';
        for (let i = 0; i < 200 && !(await restored()); i++) await new Promise((r) => setTimeout(r, 25));
        expect((await rows(name)).filter((n) => n > 950)).toEqual([951, 952, 953]);
        expect(runner.status()[0]!.state).toBe('running');
      } finally {
        await runner.stop();
      }
    },
  );

  it('retries transient errors with backoff and then carries on', async () => {
    const transient = Object.assign(new Error('could not serialize access'), { code: '40001' });
    const p = recorder('flaky', (n, attempt) => (n === 8 && attempt <= 2 ? transient : null));
    const runner = createProjectionRunner(store, database.db, [p], log, { baseBackoffMs: 5 });
    const pos = await appendNumbered(7, 9);
    await runner.start();
    const reached = await runner.waitFor(pos, 5000, ['flaky']);
    expect(reached).toBe(true);
    expect(await rows('flaky')).toEqual(expect.arrayContaining([7, 8, 9]));
    expect(runner.status().find((s) => s.name === 'flaky')!.state).toBe('running');
    await runner.stop();
  });

  itPg(
    'a statement the server cancels (statement_timeout while a rebuild holds the checkpoint row) is retried, not taken for a poison event',
    async () => {
      await startAtHead(database.db, store, ['patient']);
      // The service's connections under a server-side statement_timeout (a DBA's setting on the role, say).
      const url = new URL(database.url!);
      url.searchParams.set('options', '-c statement_timeout=150');
      const timed = createPgDatabase(url.toString(), { max: 4 });
      // A rebuild's swap holds the read model's checkpoint row for longer than that (57014 for the runner).
      let locked!: () => void;
      const held = new Promise<void>((r) => (locked = r));
      const rebuild = database.db.transaction(async (tx) => {
        await tx.query(`SELECT 1 FROM projection_checkpoints WHERE name = 'patient' FOR UPDATE`);
        locked();
        await new Promise((r) => setTimeout(r, 1500));
      });
      await held;
      const pos = await appendNumbered(301, 302);
      const runner = createProjectionRunner(store, timed, [recorder('patient')], log, { baseBackoffMs: 5 });
      try {
        await runner.start();
        await rebuild;
        expect(await runner.waitFor(pos, 10_000, ['patient'])).toBe(true);
        expect(runner.status().find((s) => s.name === 'patient')!.state).toBe('running');
        expect(await rows('patient')).toEqual([301, 302]);
      } finally {
        await runner.stop();
        await timed.close();
      }
    },
  );

  it('stops loudly on a poison event: earlier events land, the poison and later ones do not', async () => {
    const before = await store.headPosition();
    const p = recorder('poisoned', (n) =>
      n === 102 ? new TypeError('cannot read property of undefined') : null,
    );
    // Start after the events of the other cases so only 101..103 matter here.
    await database.db.query(
      `INSERT INTO projection_checkpoints (name, commit_position, prepare_position) VALUES ('poisoned', $1, $1)`,
      [before.commit.toString()],
    );
    const pos = await appendNumbered(101, 103);
    const runner = createProjectionRunner(store, database.db, [p], log, {
      baseBackoffMs: 5,
      poisonAttempts: 2,
    });
    await runner.start();
    expect(await runner.waitFor(pos, 3000, ['poisoned'])).toBe(false);
    const status = runner.status().find((s) => s.name === 'poisoned')!;
    expect(status.state).toBe('failed');
    expect(status.error).toMatch(/cannot read property/);
    expect(status.failedEvent).toMatchObject({ type: 'Numbered' });
    // The poison's own insert was rolled back with its transaction: nothing half-written.
    expect(await rows('poisoned')).toEqual([101]);
    await runner.stop();
  });

  // ---- process managers reacting side by side (orderedBy) ----

  /** A process manager recording when it starts and ends each reaction (each takes a few milliseconds). */
  const timedReactor = (name: string, fail: (n: number, attempt: number) => boolean = () => false) => {
    const log: { n: number; key: string; start: number; end: number }[] = [];
    const attempts = new Map<number, number>();
    let running = 0;
    let most = 0;
    const p: Projection = {
      name,
      handles: ['Keyed'],
      orderedBy: (e) => [(e.data as { key: string }).key],
      async react(e) {
        const { n, key } = e.data as { n: number; key: string };
        const attempt = (attempts.get(n) ?? 0) + 1;
        attempts.set(n, attempt);
        running++;
        most = Math.max(most, running);
        const start = performance.now();
        await new Promise((r) => setTimeout(r, 5 + (n % 3)));
        running--;
        if (fail(n, attempt)) throw new Error(`reaction ${n} failed`);
        log.push({ n, key, start, end: performance.now() });
      },
    };
    return { p, log, attempts, most: () => most };
  };
  const keys = ['a', 'b', 'a', 'c', 'b', 'a', 'd', 'c', 'a', 'b', 'e', 'a'];
  /** The events in one append, so the runner gets them as one batch. */
  const appendKeyed = () =>
    store.append(
      `keyed-${randomUUID()}`,
      keys.map((key, n) => ({ type: 'Keyed', data: { n, key } })),
    );
  const startAt = async (name: string) => {
    await startAtHead(database.db, store, [name]);
  };

  it('reacts in log order per key and side by side across keys, each event once', async () => {
    const r = timedReactor('keyed');
    await startAt('keyed');
    const { position } = await appendKeyed();
    const runner = createProjectionRunner(store, database.db, [r.p], log);
    await runner.start();
    expect(await runner.waitFor(position, 5000, ['keyed'])).toBe(true);
    await runner.stop();
    expect(r.log.map((x) => x.n).sort((x, y) => x - y)).toEqual(keys.map((_, n) => n));
    for (const key of new Set(keys)) {
      const mine = r.log.filter((x) => x.key === key).sort((x, y) => x.start - y.start);
      expect(mine.map((x) => x.n)).toEqual(keys.flatMap((k, n) => (k === key ? [n] : [])));
      // Each starts only once the one before it (same key) has ended.
      mine.slice(1).forEach((x, i) => expect(x.start).toBeGreaterThanOrEqual(mine[i]!.end));
    }
    expect(r.most()).toBeGreaterThan(1);
  });

  it('a failed reaction fails the batch only once all of it settled; retried one by one, every event is reacted to', async () => {
    const r = timedReactor('keyed-failing', (n, attempt) => n === 4 && attempt === 1);
    await startAt('keyed-failing');
    const { position } = await appendKeyed();
    const runner = createProjectionRunner(store, database.db, [r.p], log, { baseBackoffMs: 5 });
    await runner.start();
    expect(await runner.waitFor(position, 5000, ['keyed-failing'])).toBe(true);
    await runner.stop();
    expect(new Set(r.log.map((x) => x.n))).toEqual(new Set(keys.map((_, n) => n)));
    expect(r.attempts.get(4)).toBe(2);
    // Nothing of the failed batch was still running when it was taken up again one by one.
    const failedAt = Math.min(...r.log.filter((x) => r.attempts.get(x.n)! > 1).map((x) => x.start));
    const firstRound = r.log.filter((x) => x.start < failedAt);
    firstRound.forEach((x) => expect(x.end).toBeLessThanOrEqual(failedAt));
  });

  it('a failed reaction holds back the later events of its keys: no effect of a key ever comes before an earlier one', async () => {
    // Event 4 (key b) fails once; event 9 (key b too) must not take effect before 4 has.
    const r = timedReactor('keyed-failing-order', (n, attempt) => n === 4 && attempt === 1);
    await startAt('keyed-failing-order');
    const { position } = await appendKeyed();
    const runner = createProjectionRunner(store, database.db, [r.p], log, { baseBackoffMs: 5 });
    await runner.start();
    expect(await runner.waitFor(position, 5000, ['keyed-failing-order'])).toBe(true);
    await runner.stop();
    for (const key of new Set(keys)) {
      // The first time each event of the key took effect, in the order they took effect.
      const firsts: number[] = [];
      for (const x of r.log.filter((y) => y.key === key).sort((a, b) => a.end - b.end))
        if (!firsts.includes(x.n)) firsts.push(x.n);
      expect(firsts).toEqual(keys.flatMap((k, n) => (k === key ? [n] : [])));
    }
  });
});

describe('projection runner: one subscription per process, fanned out', () => {
  let database: TestDatabase;
  let store: EventStore;
  let subscriptions = 0;
  /** The store as the runner sees it, counting the subscriptions it opens. */
  let counted: EventStore;
  beforeAll(async () => {
    database = await testDatabase();
    await migrate(database.db);
    store = await createSqlEventStore(database.db);
    counted = Object.assign(Object.create(store) as EventStore, {
      subscribe: (o: Parameters<EventStore['subscribe']>[0]) => {
        subscriptions++;
        return store.subscribe(o);
      },
    });
    await database.db.query('CREATE TABLE seen (projection text, n int, PRIMARY KEY (projection, n))');
  });
  afterAll(async () => {
    await store.close();
    await database.drop();
  });

  /**
   * `before` runs as the projection's reaction, outside its transaction, like a process manager waiting
   * on a slow mail server (inside it, PGlite's one connection would wait with it).
   */
  const recorder = (name: string, before?: (n: number) => Promise<void>): Projection => ({
    name,
    handles: ['Numbered'],
    async react(e) {
      await before?.((e.data as { n: number }).n);
    },
    async apply(tx, e) {
      const n = (e.data as { n: number }).n;
      await tx.query('INSERT INTO seen (projection, n) VALUES ($1, $2)', [name, n]);
    },
  });
  const rows = async (name: string) =>
    (
      await database.db.query<{ n: number }>('SELECT n FROM seen WHERE projection = $1 ORDER BY n', [name])
    ).rows.map((r) => r.n);
  const append = async (from: number, to: number) => {
    let last;
    for (let n = from; n <= to; n++)
      last = await store.append(`fan-${n}`, [{ type: 'Numbered', data: { n } }]);
    return last!.position;
  };
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

  it('reads the log once for every projection, and a stuck one holds back none of the others', async () => {
    // Events from before the start: every projection catches up on them from its own checkpoint.
    await append(1, 10);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const stuck = recorder('stuck', (n) => (n === 12 ? gate : Promise.resolve()));
    const runner = createProjectionRunner(counted, database.db, [recorder('a'), recorder('b'), stuck], log, {
      queueLimit: 5,
    });
    subscriptions = 0;
    await runner.start();
    try {
      const mid = await append(11, 30);
      // `a` and `b` get there while `stuck` waits on event 12.
      expect(await runner.waitFor(mid, 10_000, ['a', 'b'])).toBe(true);
      expect(await rows('a')).toEqual(range(1, 30));
      expect(await rows('b')).toEqual(range(1, 30));
      const st = runner.status().find((s) => s.name === 'stuck')!;
      expect(st.position?.commit).not.toBe(mid.commit.toString());
      // More than its queue holds arrived meanwhile: it left the shared feed.
      expect(st.mode).toBe('catch-up');
      expect(st.queued).toBe(0);
      release();
      const end = await append(31, 35);
      expect(await runner.waitFor(end, 10_000)).toBe(true);
      expect(await rows('stuck')).toEqual(range(1, 35));
      expect(await rows('a')).toEqual(range(1, 35));
      // Caught up, it is back on the feed; and the whole time the process held one subscription.
      const more = await append(36, 37);
      expect(await runner.waitFor(more, 10_000)).toBe(true);
      expect(runner.status().map((s) => [s.name, s.state, s.mode])).toEqual([
        ['a', 'running', 'live'],
        ['b', 'running', 'live'],
        ['stuck', 'running', 'live'],
      ]);
      expect(subscriptions).toBe(1);
    } finally {
      release();
      await runner.stop();
    }
  });

  it('a failed projection holds back none of the others', async () => {
    await startAtHead(database.db, store, ['fine', 'broken']);
    const broken = recorder('broken', async (n) => {
      if (n === 102) throw new TypeError('no such field');
    });
    const runner = createProjectionRunner(store, database.db, [recorder('fine'), broken], log, {
      baseBackoffMs: 5,
      poisonAttempts: 2,
    });
    await runner.start();
    try {
      const end = await append(101, 120);
      expect(await runner.waitFor(end, 10_000, ['fine'])).toBe(true);
      expect(await rows('fine')).toEqual(expect.arrayContaining(range(101, 120)));
      expect(runner.status().find((s) => s.name === 'broken')!.state).toBe('failed');
      expect(await runner.waitFor(end, 1000)).toBe(false);
      expect((await rows('broken')).filter((n) => n > 100)).toEqual([101]);
    } finally {
      await runner.stop();
    }
  });
  it('applies a batch to every live read model in one shared transaction', async () => {
    const names = ['group-a', 'group-b', 'group-c'];
    await startAtHead(database.db, store, names);
    let transactions = 0;
    let oneRoundTrip = 0;
    const counted: Database = {
      ...database.db,
      kind: database.db.kind,
      // On PostgreSQL the group states its checkpoints and goes as one statement (one round trip).
      query: (sql, params, opts) => {
        if (sql.includes('rm_lock_expected_checkpoints')) {
          transactions++;
          oneRoundTrip++;
        }
        return database.db.query(sql, params, opts);
      },
      transaction: (fn) => {
        transactions++;
        return database.db.transaction(fn);
      },
      framedTransaction: (first, fn) => {
        transactions++;
        return database.db.framedTransaction(first, fn);
      },
    };
    // Read models (no reaction): they may share a transaction.
    const readModel = (name: string): Projection => ({
      name,
      handles: ['Numbered'],
      async apply(tx, e) {
        await tx.query('INSERT INTO seen (projection, n) VALUES ($1, $2)', [
          name,
          (e.data as { n: number }).n,
        ]);
      },
    });
    const runner = createProjectionRunner(store, counted, names.map(readModel), log);
    await runner.start();
    try {
      // Once caught up, all three are fed by the shared subscription.
      while (runner.status().some((st) => st.mode !== 'live')) await new Promise((r) => setTimeout(r, 10));
      transactions = 0;
      const end = await store.append(`num-${randomUUID()}`, [{ type: 'Numbered', data: { n: 500 } }]);
      expect(await runner.waitFor(end.position, 10_000)).toBe(true);
      for (const name of names) expect(await rows(name)).toContain(500);
      expect(transactions).toBe(1);
      expect(oneRoundTrip).toBe(database.db.kind === 'pg' ? 1 : 0);
      const saved = await database.db.query<{ c: string }>(
        'SELECT commit_position::text AS c FROM projection_checkpoints WHERE name = ANY($1::text[])',
        [names],
      );
      expect(saved.rows.map((r) => r.c)).toEqual(names.map(() => end.position.commit.toString()));
    } finally {
      await runner.stop();
    }
  });

  it('a shared transaction refused by the database at its COMMIT: each read model applies alone', async () => {
    // The refused statement is recorded and only reaches PostgreSQL with the COMMIT (recordedBatch): the
    // whole group is undone there, and then each read model applies the batch in its own transaction.
    await database.db.query('CREATE TABLE strict_seen (n int PRIMARY KEY CHECK (n <> 703))');
    const names = ['strict-a', 'strict-b'];
    await startAtHead(database.db, store, names);
    const fine: Projection = {
      name: 'strict-a',
      handles: ['Numbered'],
      async apply(tx, e) {
        await tx.query('INSERT INTO seen (projection, n) VALUES ($1, $2)', [
          'strict-a',
          (e.data as { n: number }).n,
        ]);
      },
    };
    const refused: Projection = {
      name: 'strict-b',
      handles: ['Numbered'],
      async apply(tx, e) {
        await tx.query('INSERT INTO strict_seen (n) VALUES ($1)', [(e.data as { n: number }).n]);
      },
    };
    const runner = createProjectionRunner(store, database.db, [fine, refused], log, {
      baseBackoffMs: 5,
      poisonAttempts: 2,
    });
    await runner.start();
    try {
      while (runner.status().some((st) => st.mode !== 'live')) await new Promise((r) => setTimeout(r, 10));
      const end = await append(701, 705);
      expect(await runner.waitFor(end, 10_000, ['strict-a'])).toBe(true);
      expect((await rows('strict-a')).filter((n) => n > 700)).toEqual([701, 702, 703, 704, 705]);
      const refusedStatus = () => runner.status().find((st) => st.name === 'strict-b')!;
      for (let i = 0; i < 200 && refusedStatus().state !== 'failed'; i++)
        await new Promise((r) => setTimeout(r, 10));
      expect(refusedStatus()).toMatchObject({ state: 'failed', failedEvent: { type: 'Numbered' } });
      // What came before the refused event landed; it and what followed did not.
      const strict = await database.db.query<{ n: number }>('SELECT n FROM strict_seen ORDER BY n');
      expect(strict.rows.map((r) => r.n)).toEqual([701, 702]);
    } finally {
      await runner.stop();
    }
  });
});

describe('projection runner with two instances of the service', () => {
  it('applies each event once when two runners run the same projection on one database', async () => {
    const database = await testDatabase();
    await migrate(database.db);
    const store = await createSqlEventStore(database.db);
    await database.db.query('CREATE TABLE seen (event_id uuid PRIMARY KEY, n int)');
    // The primary key refuses a second application: a double apply would stop the projection.
    const projection = (): Projection => ({
      name: 'shared',
      handles: ['Numbered'],
      async apply(tx, e) {
        await tx.query('INSERT INTO seen (event_id, n) VALUES ($1, $2)', [e.id, (e.data as { n: number }).n]);
      },
    });
    // Each runner also runs two read models that share its transactions: the checkpoint rows are locked
    // in one order everywhere, so the two instances never deadlock.
    const other = (name: string): Projection => ({
      name,
      handles: ['Numbered'],
      apply: async () => undefined,
    });
    const a = createProjectionRunner(store, database.db, [other('x'), projection(), other('y')], log, {
      batchSize: 3,
    });
    const b = createProjectionRunner(store, database.db, [other('y'), projection(), other('x')], log, {
      batchSize: 5,
    });
    try {
      await Promise.all([a.start(), b.start()]);
      let last;
      for (let n = 1; n <= 60; n++)
        last = await store.append(`n-${n % 7}`, [{ type: 'Numbered', data: { n } }]);
      expect(await a.waitFor(last!.position, 10_000)).toBe(true);
      expect(await b.waitFor(last!.position, 10_000)).toBe(true);
      const rows = await database.db.query<{ n: number }>('SELECT n FROM seen ORDER BY n');
      expect(rows.rows.map((r) => r.n)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
      expect([...a.status(), ...b.status()].map((s) => s.state)).toEqual(Array(6).fill('running'));
    } finally {
      await a.stop();
      await b.stop();
      await store.close();
      await database.drop();
    }
  });
});

const describePg = process.env.DATABASE_URL ? describe : describe.skip;
describePg('projection runner when PostgreSQL drops its connections (skipped without DATABASE_URL)', () => {
  it('resubscribes after the server terminates every connection, and applies what came after', async () => {
    const database = await testDatabase();
    await migrate(database.db);
    const store = await createSqlEventStore(database.db);
    await database.db.query('CREATE TABLE seen (event_id uuid PRIMARY KEY, n int)');
    const runner = createProjectionRunner(
      store,
      database.db,
      [
        {
          name: 'survivor',
          handles: ['Numbered'],
          async apply(tx, e) {
            await tx.query('INSERT INTO seen (event_id, n) VALUES ($1, $2)', [
              e.id,
              (e.data as { n: number }).n,
            ]);
          },
        },
      ],
      log,
      { baseBackoffMs: 20 },
    );
    try {
      await runner.start();
      const first = await store.append('s', [{ type: 'Numbered', data: { n: 1 } }]);
      expect(await runner.waitFor(first.position, 5000)).toBe(true);
      // What a failover or an operator's restart of PostgreSQL does to every open connection.
      await database.db.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
      );
      let last;
      for (let n = 2; n <= 5; n++) {
        for (let attempt = 0; ; attempt++) {
          try {
            last = await store.append('s', [{ type: 'Numbered', data: { n } }]);
            break;
          } catch (err) {
            if (attempt > 5) throw err; // the pool replaces a connection it finds dead
          }
        }
      }
      expect(await runner.waitFor(last!.position, 10_000)).toBe(true);
      const rows = await database.db.query<{ n: number }>('SELECT n FROM seen ORDER BY n');
      expect(rows.rows.map((r) => r.n)).toEqual([1, 2, 3, 4, 5]);
    } finally {
      await runner.stop();
      await store.close();
      await database.drop();
    }
  }, 30_000);
});
