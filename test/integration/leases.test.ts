import { randomUUID } from 'node:crypto';
import type { Database } from '../../src/db/database';
import { migrate } from '../../src/db/migrate';
import { createSqlEventStore } from '../../src/eventstore/sql';
import { LeaseLostError, createLocalLeases, createPgLeases, type Leases } from '../../src/leases';
import { createLogger } from '../../src/log';
import { createProjectionRunner, type Projection } from '../../projections/runner';
import { testDatabase, type TestDatabase } from '../support/services';

const log = createLogger({ test: 'leases' });
const NAMES = ['pm-a', 'pm-b'];

/** Polls until `f` is true; false after `ms` (a generous bound, not a timing claim). */
async function eventually(f: () => boolean | Promise<boolean>, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await f()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return f();
}

/** The database as one instance sees it; `cut()` makes every statement fail, as a lost network would. */
function severable(db: Database) {
  let cut = false;
  const guard = () => {
    if (cut) throw Object.assign(new Error('Connection terminated unexpectedly'), { code: '08006' });
  };
  const view: Database = {
    ...db,
    kind: db.kind,
    async query(sql, params) {
      guard();
      return db.query(sql, params);
    },
    transaction: (fn) => {
      guard();
      return db.transaction(fn);
    },
    framedTransaction: (first, fn) => {
      guard();
      return db.framedTransaction(first, fn);
    },
  };
  return { db: view, cut: () => (cut = true) };
}

describe('local leases (embedded PGlite: one process)', () => {
  it('holds every lease from start to stop', async () => {
    const leases = createLocalLeases({ instanceId: 'solo', names: NAMES });
    const seen: boolean[] = [];
    leases.watch('pm-a', (held) => seen.push(held));
    await leases.start();
    expect(leases.holds('pm-a')).toBe(true);
    expect((await leases.status()).map((l) => [l.name, l.owner, l.mine])).toEqual([
      ['pm-a', 'solo', true],
      ['pm-b', 'solo', true],
    ]);
    await leases.stop();
    expect(leases.holds('pm-a')).toBe(false);
    expect(seen).toEqual([true, false]);
  });
});

const describePg = process.env.DATABASE_URL ? describe : describe.skip;
describePg('leases in PostgreSQL (skipped without DATABASE_URL: PGlite is one process)', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await testDatabase();
    await migrate(database.db);
  });
  afterAll(async () => {
    await database.drop();
  });
  const keeper = (db: Database, instanceId: string, names = NAMES) =>
    createPgLeases(db, { instanceId, names, ttlMs: 1000, renewEveryMs: 100, log });

  it('gives each lease one owner, shows it, and hands it over at once when the owner stops', async () => {
    const names = [`x-${randomUUID()}`, `y-${randomUUID()}`];
    const a = keeper(database.db, 'instance-a', names);
    const b = keeper(database.db, 'instance-b', names);
    await a.start();
    await b.start();
    try {
      expect(names.map((n) => [a.holds(n), b.holds(n)])).toEqual([
        [true, false],
        [true, false],
      ]);
      const seen = (await b.status()).map((l) => [l.owner, l.mine]);
      expect(seen).toEqual([
        ['instance-a', false],
        ['instance-a', false],
      ]);
      // Renewals keep it with its owner for many lifetimes of the lease.
      await new Promise((r) => setTimeout(r, 2500));
      expect(names.every((n) => a.holds(n) && !b.holds(n))).toBe(true);
      await a.stop();
      expect(await eventually(() => names.every((n) => b.holds(n)))).toBe(true);
      expect((await b.status()).every((l) => l.owner === 'instance-b' && l.mine)).toBe(true);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('fences an owner cut off from the database, and another instance takes over once the lease expires', async () => {
    const names = [`z-${randomUUID()}`];
    const [name] = names as [string];
    const lost = severable(database.db);
    const a = keeper(lost.db, 'instance-a', names);
    const b = keeper(database.db, 'instance-b', names);
    const aSaw: boolean[] = [];
    a.watch(name, (held) => aSaw.push(held));
    await a.start();
    await b.start();
    try {
      expect(a.holds(name)).toBe(true);
      lost.cut();
      // Without renewals, `a` stops trusting its lease by its own clock; `b` takes it after expiry.
      expect(await eventually(() => !a.holds(name))).toBe(true);
      expect(await eventually(() => b.holds(name))).toBe(true);
      // Its watchers hear of it by the next attempt to renew.
      expect(await eventually(() => aSaw.length === 2)).toBe(true);
      expect(aSaw).toEqual([true, false]);
      // And the database refuses `a` as the lease's owner inside a transaction.
      await expect(database.db.transaction((tx) => a.fence(tx, name))).rejects.toBeInstanceOf(LeaseLostError);
      await database.db.transaction((tx) => b.fence(tx, name));
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('a renewal that comes back after the local deadline is reported as a loss and a new start', async () => {
    const names = [`late-${randomUUID()}`];
    const [name] = names as [string];
    let delayMs = 0;
    const slow: Database = {
      ...database.db,
      kind: database.db.kind,
      async query(sql, params) {
        if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
        return database.db.query(sql, params);
      },
    };
    const a = keeper(slow, 'instance-a', names);
    const seen: boolean[] = [];
    a.watch(name, (held) => seen.push(held));
    await a.start();
    try {
      delayMs = 1200; // longer than the lease: a stalled database or process
      expect(await eventually(() => !a.holds(name))).toBe(true);
      delayMs = 0;
      expect(await eventually(() => a.holds(name))).toBe(true);
      expect(seen).toEqual([true, false, true]);
    } finally {
      await a.stop();
    }
  });

  it('runs a process manager on one instance only, and the other resumes from its checkpoint after a takeover', async () => {
    const store = await createSqlEventStore(database.db);
    await database.db.query('CREATE TABLE reacted (event_id uuid, instance text)');
    const lease = `pm-${randomUUID()}`;
    const manager = (instance: string): Projection => ({
      name: `manager-${lease}`,
      lease,
      handles: ['Numbered'],
      async react(e) {
        await database.db.query('INSERT INTO reacted (event_id, instance) VALUES ($1, $2)', [e.id, instance]);
      },
    });
    const lostA = severable(database.db);
    const leasesA = keeper(lostA.db, 'instance-a', [lease]);
    const leasesB = keeper(database.db, 'instance-b', [lease]);
    await leasesA.start();
    await leasesB.start();
    const runners = [
      createProjectionRunner(store, database.db, [manager('a')], log, { leases: leasesA }),
      createProjectionRunner(store, database.db, [manager('b')], log, { leases: leasesB }),
    ];
    const leasesOf: Leases[] = [leasesA, leasesB];
    try {
      await Promise.all(runners.map((r) => r.start()));
      expect(runners.map((r) => r.status()[0]!.state)).toEqual(['running', 'standby']);
      let last;
      for (let n = 1; n <= 20; n++) last = await store.append(`n-${n}`, [{ type: 'Numbered', data: { n } }]);
      expect(await runners[0]!.waitFor(last!.position, 10_000)).toBe(true);
      // Instance a loses the database: b takes the lease over and carries on from a's checkpoint.
      lostA.cut();
      const saved = await database.db.query<{ c: string }>(
        'SELECT commit_position::text AS c FROM projection_checkpoints WHERE name = $1',
        [`manager-${lease}`],
      );
      const savedAt = BigInt(saved.rows[0]?.c ?? '-1');
      expect(await eventually(() => leasesB.holds(lease))).toBe(true);
      for (let n = 21; n <= 30; n++) last = await store.append(`n-${n}`, [{ type: 'Numbered', data: { n } }]);
      expect(await eventually(() => runners[1]!.status()[0]!.state === 'running')).toBe(true);
      expect(await runners[1]!.waitFor(last!.position, 10_000)).toBe(true);
      expect(runners[0]!.status()[0]!.state).toBe('standby');
      const rows = await database.db.query<{ n: string; instance: string }>(
        "SELECT count(DISTINCT event_id)::text AS n, string_agg(DISTINCT instance, ',' ORDER BY instance) AS instance FROM reacted",
      );
      expect(rows.rows[0]).toEqual({ n: '30', instance: 'a,b' });
      // Reactions are at least once: b repeats only what a reacted to after its last saved checkpoint
      // (written at most every 200 ms while reacting), never what the checkpoint covers.
      const twice = await database.db.query<{ p: string }>(
        `SELECT e.position::text AS p FROM reacted r JOIN es_events e ON e.event_id = r.event_id
         GROUP BY e.position HAVING count(*) > 1`,
      );
      for (const row of twice.rows) expect(BigInt(row.p)).toBeGreaterThan(savedAt);
    } finally {
      await Promise.all(runners.map((r) => r.stop()));
      await Promise.all(leasesOf.map((l) => l.stop()));
      await store.close();
    }
  }, 30_000);
});
