import { fork } from 'node:child_process';
import path from 'node:path';
import { allProjections } from '../../projections';
import {
  RebuildBusyError,
  RebuildError,
  readModelsOf,
  rebuildReadModels,
  type RebuildProgress,
} from '../../src/rebuild/rebuild';
import { progressPrinter } from '../../src/rebuild/progress';
import { READ_MODEL_TABLES } from '../../src/rebuild/tables';
import { eventually, marketplace } from '../support/marketplace';
import { startSmtpServer } from '../support/smtp';
import { startTestSystem, type TestSystem } from '../support/system';
import { MAX_ADDRESSES } from '../../commands/addresses/decider';

const now = new Date('2026-12-01T08:00:00Z');
const SLOTS = ['2026-12-02T10:00:00', '2026-12-02T12:00:00', '2026-12-03T10:00:00'];
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;

const projections = () => {
  const { store, db, mailer, log, clock } = t.system.deps;
  return allProjections({ store, db, mailer, log, clock });
};
const rebuild = (
  opts: {
    verify?: boolean;
    names?: string[];
    pageSize?: number;
    onProgress?: (p: RebuildProgress) => void;
  } = {},
) =>
  rebuildReadModels({
    db: t.system.deps.db,
    store: t.system.deps.store,
    projections: projections(),
    ...opts,
  });
const settled = async () =>
  expect(await t.system.runner.waitFor(await t.system.deps.store.headPosition(), 10_000)).toBe(true);

/** What the API answers about the workload, to compare before and after a rebuild. */
let answers: () => Promise<unknown[]>;

beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestSystem({ clock: () => now, env: { SMTP_URL: smtp.url } });
  m = marketplace(t);
  // A varied workload: profiles, a schedule, a service, addresses, bookings, an approval, a cancellation.
  const coach = await m.coach();
  const serviceId = await m.offering(coach, { sessionCancellationHours: 1 });
  const clients = [await m.client(), await m.client()];
  const sessions: { id: string; paymentId: string }[] = [];
  for (const [i, c] of clients.entries()) {
    await t.request('POST', '/api/v1/nav/addreses', {
      token: c.token,
      body: { lat: 52.5 + i, lng: 13.4, name: `Home ${i}`, address: 'Alexanderplatz 1', isDefault: true },
    });
    const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: c.token,
      body: { slots: [SLOTS[i]] },
    });
    expect(res.status).toBe(200);
    sessions.push(res.body[0]);
  }
  expect(
    (await t.request('POST', `/api/v1/session/${sessions[0]!.id}/approve`, { token: coach.token })).status,
  ).toBe(200);
  // A move: its replay writes only (a batched rebuild reads no result), as every read model's apply must.
  expect(
    (
      await t.request('POST', `/api/v1/session/${sessions[0]!.id}/reschedule`, {
        token: coach.token,
        body: { slot: '2026-12-02T14:00:00' },
      })
    ).status,
  ).toBe(200);
  expect(
    (
      await t.request('POST', `/api/v1/session/${sessions[1]!.id}/cancel`, {
        token: clients[1]!.token,
        body: { reason: 'ill' },
      })
    ).status,
  ).toBe(200);
  await settled();
  answers = async () =>
    Promise.all([
      t.request('GET', `/api/v1/coach/${coach.id}/profile`),
      t.request('GET', `/api/v1/service/${serviceId}/availability?from_date=2026-12-02&to_date=2026-12-03`),
      ...sessions.map((s) => t.request('GET', `/api/v1/session/${s.id}`, { token: coach.token })),
      ...sessions.map((s) => t.request('GET', `/api/v1/payment/${s.paymentId}`, { token: m.admin() })),
      ...clients.map((c) => t.request('GET', '/api/v1/nav/addreses', { token: c.token })),
      ...clients.map((c) => t.request('GET', '/api/v1/notification', { token: c.token })),
    ]).then((rs) => rs.map((r) => [r.status, r.body]));
  // Every mail of the workload has gone out before the rebuilds start.
  await eventually(
    async () => smtp.received.length,
    (n) => n >= 4,
  );
}, 60_000);
afterAll(async () => {
  await t.close();
  await smtp.close();
});

describe('npm run rebuild (rebuildReadModels)', () => {
  it('lists every read model the service runs, and refuses process managers and unknown names', () => {
    const models = readModelsOf(projections());
    expect(models.map((p) => p.name).sort()).toEqual(Object.keys(READ_MODEL_TABLES).sort());
    expect(() => readModelsOf(projections(), ['email-process'])).toThrow(/process manager/);
    expect(() => readModelsOf(projections(), ['nope'])).toThrow(RebuildError);
    // A name given twice is one read model (twice, its shadow tables were created twice: a raw SQL error).
    expect(readModelsOf(projections(), ['sessions', 'payments', 'sessions']).map((p) => p.name)).toEqual([
      'sessions',
      'payments',
    ]);
  });

  it('--verify finds the live read models equal to the log, and names the rows that differ', async () => {
    const clean = await rebuild({ verify: true });
    expect(clean.differences).toEqual([]);
    expect(clean.events).toBeGreaterThan(20);

    const { db } = t.system.deps;
    await db.query(`UPDATE sessions SET state = 'bogus' WHERE state = 'approved'`);
    await db.query(`DELETE FROM addresses WHERE name = 'Home 1'`);
    const dirty = await rebuild({ verify: true });
    expect(dirty.differences.map((d) => d.table).sort()).toEqual(['addresses', 'sessions']);
    const sessions = dirty.differences.find((d) => d.table === 'sessions')!;
    expect(sessions.onlyLive).toEqual([expect.objectContaining({ state: 'bogus' })]);
    expect(sessions.onlyRebuilt).toEqual([expect.objectContaining({ state: 'approved' })]);
    const addresses = dirty.differences.find((d) => d.table === 'addresses')!;
    expect([addresses.onlyLive, addresses.onlyRebuilt]).toEqual([
      [],
      [expect.objectContaining({ name: 'Home 1' })],
    ]);
    // A verify changes nothing.
    expect((await db.query(`SELECT 1 FROM sessions WHERE state = 'bogus'`)).rowCount).toBe(1);
  });

  it('rebuilds the named read models and swaps them in: tables, indexes and checkpoints', async () => {
    const { db, store } = t.system.deps;
    const result = await rebuild({ names: ['sessions', 'addresses'] });
    expect(result.readModels).toEqual(['sessions', 'addresses']);
    expect((await db.query(`SELECT 1 FROM sessions WHERE state = 'bogus'`)).rowCount).toBe(0);
    expect((await rebuild({ verify: true })).differences).toEqual([]);
    // The migrations' index names survive the swap; no shadow or retired schema is left behind.
    const indexes = await db.query<{ indexname: string }>(
      `SELECT indexname FROM pg_indexes WHERE tablename = 'sessions' AND schemaname = current_schema() ORDER BY 1`,
    );
    expect(indexes.rows.map((r) => r.indexname)).toEqual(
      expect.arrayContaining([
        'sessions_pkey',
        'sessions_group',
        'sessions_payment',
        'sessions_client',
        'sessions_coach',
      ]),
    );
    const schemas = await db.query(`SELECT 1 FROM pg_namespace WHERE nspname ~ '^(rebuild|retired)_'`);
    expect(schemas.rowCount).toBe(0);
    const head = await store.headPosition();
    const cp = await db.query<{ c: string }>(
      `SELECT commit_position::text AS c FROM projection_checkpoints WHERE name = 'sessions'`,
    );
    expect(BigInt(cp.rows[0]!.c)).toBe(head.commit);
  });

  it('on a terminal, draws its bar page by page from the first page, each page counted once applied', async () => {
    // A small log on a terminal failed the rebuild with "RangeError: Invalid count value: -1": the first
    // page was reported before it was counted (position still before the first event), a negative bar.
    const bars: string[] = [];
    const seen: RebuildProgress[] = [];
    const print = progressPrinter({ isTTY: true, write: (s: string) => bars.push(s) > 0 }, { everyMs: 0 });
    const result = await rebuild({
      pageSize: 1,
      onProgress: (p) => {
        seen.push({ ...p });
        print(p);
      },
    });
    expect(result.events).toBeGreaterThan(0);
    const replayed = seen.filter((p) => p.phase === 'replay' && p.first);
    expect(replayed.length).toBeGreaterThan(1);
    // Every report after the first page names a page applied: at or past the first event, one more each.
    expect(replayed.filter((p) => p.position.commit < p.first!.commit)).toEqual([]);
    expect(replayed.map((p) => p.events)).toEqual(replayed.map((_, i) => i + 1));
    expect(bars.filter((b) => !/\[#*-*\] (\d|[1-9]\d|100)%/.test(b) && b !== '\n')).toEqual([]);
  });

  it('a full rebuild while requests are served changes no answer, loses no event and sends no e-mail', async () => {
    await settled();
    const before = await answers();
    const mails = smtp.received.length;
    // Commands keep arriving during the rebuild (small pages make it last); each must land in the result.
    const writer = marketplace(t);
    const extra = await writer.client();
    let writing = true;
    const written: string[] = [];
    const writes = (async () => {
      // At most what one user may keep: a slow rebuild (a loaded machine) must not run into that limit.
      for (let i = 0; (writing && i < MAX_ADDRESSES - 10) || i < 3; i++) {
        const res = await t.request('POST', '/api/v1/nav/addreses', {
          token: extra.token,
          body: { lat: 1, lng: 2, name: `During ${i}`, address: 'Somewhere 1' },
        });
        expect(res.status === 200 ? 200 : res.body).toBe(200);
        written.push(`During ${i}`);
      }
    })();
    const seen: RebuildProgress[] = [];
    const result = await rebuild({ pageSize: 5, onProgress: (p) => seen.push(p) });
    writing = false;
    await writes;
    expect(result.readModels).toHaveLength(Object.keys(READ_MODEL_TABLES).length);
    expect(seen.map((p) => p.phase)).toEqual(expect.arrayContaining(['replay', 'catch-up', 'swap', 'done']));
    await settled();
    const listed = await t.request('GET', '/api/v1/nav/addreses?limit=200', { token: extra.token });
    expect(listed.body.map((a: { name: string }) => a.name).sort()).toEqual([...written].sort());
    expect(await answers()).toEqual(before);
    expect((await rebuild({ verify: true })).differences).toEqual([]);
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.received.length).toBe(mails);
  });
});

const itPg = process.env.DATABASE_URL ? it : it.skip;
/** `npm run rebuild` as its own process (src/cli/rebuild.ts, as the built CLI runs it) on the service's database. */
function rebuildCli(args: string[]): Promise<{ code: number | null; out: string }> {
  const out: string[] = [];
  const child = fork(path.join(__dirname, '../../src/cli/rebuild.ts'), args, {
    execArgv: ['-r', path.join(__dirname, '../support/register-ts.cjs')],
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: t.database.url,
      // The log the service writes: EventStoreDB (or its double) when the tests run on it.
      ...(t.config.eventStoreUrl ? { EVENTSTORE_URL: t.config.eventStoreUrl } : {}),
      DATA_DIR: t.config.dataDir,
      SMTP_URL: smtp.url,
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  child.stdout!.on('data', (d: Buffer) => out.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => out.push(d.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out: out.join('') })));
}

describe('npm run rebuild from outside, next to the running service (skipped without DATABASE_URL)', () => {
  itPg(
    '--verify exits 0 with progress; a full rebuild while requests are served changes no answer and mails nothing',
    async () => {
      await settled();
      const verify = await rebuildCli(['--verify']);
      expect([verify.code, verify.out]).toEqual([
        0,
        expect.stringContaining('live read models match the log'),
      ]);
      expect(verify.out).toMatch(/rebuild replay: [\d,]+\/[\d,]+ events {2}[\d,]+ ev\/s {2}ETA \d+s/);
      expect(verify.out).toContain('rebuild done:');

      const before = await answers();
      const mails = smtp.received.length;
      // Reads keep being served while the other process rebuilds and swaps the tables under them.
      let reading = true;
      const served: unknown[][] = [];
      const reads = (async () => {
        while (reading) served.push(await answers());
      })();
      const full = await rebuildCli([]);
      reading = false;
      await reads;
      expect([full.code, full.out]).toEqual([0, expect.stringMatching(/rebuilt .*: \d+ events in/)]);
      expect(served.length).toBeGreaterThan(0);
      for (const answer of served) expect(answer).toEqual(before);
      expect(await answers()).toEqual(before);
      await new Promise((r) => setTimeout(r, 300));
      expect(smtp.received.length).toBe(mails);
    },
    120_000,
  );
});

describe('one rebuild at a time, and what an interrupted one left behind', () => {
  it('refuses a second rebuild or verify while one runs (RebuildBusyError), on PostgreSQL and PGlite', async () => {
    const runs = await Promise.allSettled([rebuild({ pageSize: 5 }), rebuild({ verify: true })]);
    expect(runs.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = runs.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(RebuildBusyError);
    // Once it is over, the next one runs.
    expect((await rebuild({ verify: true })).differences).toEqual([]);
  });

  it('drops the shadow schemas of an interrupted rebuild of this schema, and only those', async () => {
    const { db } = t.system.deps;
    const live = (await db.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]!.s;
    const stale = 'rebuild_0123456789ab';
    const foreign = 'rebuild_ba9876543210';
    await db.query(`CREATE SCHEMA ${stale}`);
    await db.query(`COMMENT ON SCHEMA ${stale} IS 'rebuild shadow of ${live}'`);
    await db.query(`CREATE TABLE ${stale}.sessions (id text)`);
    await db.query(`CREATE SCHEMA ${foreign}`);
    await db.query(`COMMENT ON SCHEMA ${foreign} IS 'rebuild shadow of some_other_schema'`);
    try {
      const result = await rebuild({ verify: true });
      expect(result.leftovers).toEqual([stale]);
      expect(result.differences).toEqual([]);
      const left = await db.query<{ n: string }>(
        `SELECT nspname AS n FROM pg_namespace WHERE nspname ~ '^rebuild_' ORDER BY 1`,
      );
      expect(left.rows.map((r) => r.n)).toEqual([foreign]);
    } finally {
      await db.query(`DROP SCHEMA IF EXISTS ${foreign} CASCADE`);
      await db.query(`DROP SCHEMA IF EXISTS ${stale} CASCADE`);
    }
  });
});

describe('the swap under concurrent reads', () => {
  it('never fails or changes a read, even one that joins several read models (no deadlock with the swap)', async () => {
    await settled();
    const before = await answers();
    let reading = true;
    const wrong: unknown[] = [];
    let reads = 0;
    // Several readers at once, each answer touching several tables in one statement (coach profile,
    // availability): a swap that locked the tables one by one deadlocked with them.
    const readers = Array.from({ length: 6 }, async () => {
      while (reading) {
        const now = await answers();
        reads++;
        if (JSON.stringify(now) !== JSON.stringify(before)) wrong.push(now);
      }
    });
    try {
      for (let i = 0; i < 5; i++) expect((await rebuild()).readModels.length).toBeGreaterThan(10);
    } finally {
      reading = false;
      await Promise.all(readers);
    }
    expect(reads).toBeGreaterThan(0);
    expect(wrong.slice(0, 1)).toEqual([]);
  }, 120_000);
});

describe('rebuild progress', () => {
  const at = (
    events: number,
    commit: number,
    phase: RebuildProgress['phase'] = 'replay',
  ): RebuildProgress => ({
    phase,
    events,
    position: { commit: BigInt(commit), prepare: BigInt(commit) },
    target: { commit: 1000n, prepare: 1000n },
    first: { commit: 1n, prepare: 1n },
  });
  it('draws a bar with done/total, events/s and ETA on a terminal', () => {
    let clock = 0;
    const written: string[] = [];
    const print = progressPrinter(
      { isTTY: true, write: (s: string) => written.push(s) > 0 },
      { now: () => clock },
    );
    clock = 1000;
    print(at(500, 500));
    expect(written.at(-1)).toMatch(
      /\r.*replay +\[#{15}-{15}\] 50% {2}500\/1,000 events {2}500 ev\/s {2}ETA 1s/,
    );
  });
  it('draws an empty bar, never throws, for a position before the first event read', () => {
    // EventStoreDB positions are byte offsets: the first event may be far past 0.
    const written: string[] = [];
    const print = progressPrinter(
      { isTTY: true, write: (s: string) => written.push(s) > 0 },
      { now: () => 0 },
    );
    print({
      phase: 'replay',
      events: 0,
      position: { commit: -1n, prepare: -1n },
      target: { commit: 1000n, prepare: 1000n },
      first: { commit: 900n, prepare: 900n },
    });
    expect(written.at(-1)).toMatch(/replay +\[-{30}\] 0% {2}0\/0 events/);
  });
  it('writes plain lines, not too often, when not a terminal', () => {
    let clock = 0;
    const written: string[] = [];
    const print = progressPrinter(
      { isTTY: false, write: (s: string) => written.push(s) > 0 },
      { now: () => clock, everyMs: 2000 },
    );
    clock = 1000;
    print(at(100, 100));
    clock = 1500;
    print(at(200, 200)); // too soon: skipped
    clock = 4000;
    print(at(1000, 1000, 'done'));
    expect(written).toEqual([
      'rebuild replay: 100/1,000 events  100 ev/s  ETA 9s\n',
      'rebuild done: 1,000/1,000 events  250 ev/s  ETA 0s\n',
    ]);
  });
});
