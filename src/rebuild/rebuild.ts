import { randomUUID } from 'node:crypto';
import { escapeLiteral } from 'pg';
import type { Database, Queryable } from '../db/database';
import {
  START,
  comparePositions,
  type EventStore,
  type Position,
  type RecordedEvent,
} from '../eventstore/types';
import type { Projection } from '../../projections/runner';
import { READ_MODEL_TABLES } from './tables';
import { BUMP_EVERYTHING, withoutBumps } from '../readModels/readVersions';
import { recordingQueryable } from '../db/recordedBatch';
import {
  compareTable,
  createShadowTable,
  ident,
  setLogged,
  swapTables,
  type TableDifference,
} from './shadow';

/**
 * Rebuilding read models from the log, and proving them.
 *
 * The shadow schema holds empty copies of the chosen read models' tables. Events are replayed into it
 * with each page in one transaction per read model whose `search_path` is the shadow schema alone, so the
 * projections' own SQL (unqualified table names) writes there unchanged, while the service keeps serving
 * (and updating) the live tables. Only `apply` runs: process managers (anything with `react`) are never
 * part of a rebuild, so nothing is mailed, notified or settled again.
 *
 * The end, in one transaction: lock the read models' checkpoint rows (the runner takes the same lock to
 * apply anything, so the live tables stop moving), replay into the shadow what was appended since it was
 * filled (up to the head read under the lock), move the live tables out and the shadow's in, and set the
 * checkpoints to that head. A runner blocked on the lock then finds the new checkpoint and carries on from
 * there on the new tables, so no event is lost or applied twice across the swap.
 *
 * `verify` replays each read model up to its own checkpoint (re-read under the lock, so the live table is
 * exactly that fold) and compares the two tables row by row instead of swapping.
 */

export class RebuildError extends Error {
  override name = 'RebuildError';
}

/** Another rebuild (or verify) holds the rebuild lock of this database and schema. */
export class RebuildBusyError extends RebuildError {
  override name = 'RebuildBusyError';
}

export interface RebuildProgress {
  phase: 'replay' | 'catch-up' | 'swap' | 'compare' | 'done';
  /** Events read from the log so far. */
  events: number;
  position: Position;
  /** Where the replay stops (the head when it started). */
  target: Position;
  first: Position | null;
}

export interface RebuildOptions {
  db: Database;
  store: EventStore;
  /** Candidates: every projection the service runs (process managers are left out here). */
  projections: Projection[];
  /** Read models to rebuild; all when empty or omitted. */
  names?: string[];
  verify?: boolean;
  /** Events per read and per transaction. */
  pageSize?: number;
  onProgress?: (p: RebuildProgress) => void;
}

export interface RebuildResult {
  readModels: string[];
  events: number;
  /** Position the read models were rebuilt (or verified) up to; per read model for verify. */
  positions: Record<string, { commit: string; prepare: string } | null>;
  differences: TableDifference[];
  /** Shadow schemas left by an interrupted rebuild (a killed process), dropped before this one started. */
  leftovers: string[];
  ms: number;
}

/** Read models of the given projections: those that `apply` and never `react`. */
export function readModelsOf(projections: Projection[], names: string[] = []): Projection[] {
  const models = projections.filter((p) => p.apply && !p.react);
  for (const m of models)
    if (!READ_MODEL_TABLES[m.name])
      throw new RebuildError(`read model ${m.name} has no tables listed in src/rebuild/tables.ts`);
  if (!names.length) return models;
  // A name given twice is one read model (its shadow tables cannot be created twice).
  return [...new Set(names)].map((n) => {
    const m = models.find((x) => x.name === n);
    if (m) return m;
    const known = projections.find((x) => x.name === n);
    throw new RebuildError(
      known
        ? `${n} is a process manager: it acts on events and is never replayed`
        : `unknown read model ${n}; read models: ${models.map((x) => x.name).join(', ')}`,
    );
  });
}

const fmt = (p: Position | null) =>
  p ? { commit: p.commit.toString(), prepare: p.prepare.toString() } : null;
const max = (ps: Position[]) => ps.reduce((a, b) => (comparePositions(a, b) >= 0 ? a : b), START);

/**
 * Applies the model's events of `events` after `after` and up to `upTo`, in `tx`. On PostgreSQL the
 * statements go in one round trip (see batch.ts); `oneByOne` runs them singly and names a failing event.
 */
async function applyEvents(
  tx: Queryable,
  model: Projection,
  events: RecordedEvent[],
  after: Position,
  upTo: Position,
  mode: 'batched' | 'oneByOne',
  /** Batched only: statements sent ahead of the page's, in the same round trip. */
  prefix = '',
) {
  const mine = events.filter(
    (e) =>
      model.handles.includes(e.type) &&
      comparePositions(e.position, after) > 0 &&
      comparePositions(e.position, upTo) <= 0,
  );
  if (!mine.length) return;
  if (mode === 'batched') {
    const recorder = recordingQueryable();
    // Replayed without the version bumps of the cached reads: the swap bumps everything instead.
    const replay = withoutBumps(recorder.tx);
    for (const e of mine) await model.apply!(replay, e);
    const sql = recorder.take();
    if (sql) await tx.query(prefix + sql);
    return;
  }
  for (const e of mine)
    try {
      await model.apply!(withoutBumps(tx), e);
    } catch (err) {
      throw new RebuildError(
        `read model ${model.name} failed on event ${e.id} (${e.type}, ${e.streamName}@${e.revision}, ` +
          `position ${e.position.commit}): ${err instanceof Error ? err.message : String(err)}`,
      );
    }
}

const RETRY = Symbol('retry');
const LOCKS_BUSY = Symbol('locks busy');
/** How long the swap waits for the live tables' locks before it starts the round over. */
const SWAP_LOCK_WAIT_MS = 200;

/** Key of the advisory lock one rebuild or verify holds per database and live schema (see withRebuildLock). */
export const REBUILD_LOCK = 7150003;
/** What a rebuild's shadow schema is named and labelled with, so a later one can find it if it is left over. */
const SHADOW_NAME = /^(rebuild|retired)_[0-9a-f]{12}$/;
const shadowLabel = (live: string) => `rebuild shadow of ${live}`;

/** PGlite runs in one process: the rebuilds running in it, per database. */
const runningInProcess = new WeakSet<Database>();

/**
 * One rebuild or verify at a time per database and live schema. On PostgreSQL the holder keeps a
 * transaction open on one pooled connection with `pg_try_advisory_xact_lock`; a second one fails at once
 * with RebuildBusyError (naming the holder's backend) rather than waiting behind it. The lock ends with the
 * holder's connection, so a rebuild killed with SIGKILL releases it as soon as PostgreSQL sees the socket
 * close. Under the lock, shadow schemas of this live schema are leftovers of an interrupted rebuild (every
 * rebuild creates its own only while holding the lock): they are dropped before the new one starts.
 * Embedded PGlite opens in one process at a time, so there an in-process flag is the whole lock.
 */
async function withRebuildLock<T>(
  db: Database,
  run: (live: string, leftovers: string[]) => Promise<T>,
): Promise<T> {
  const live = (await db.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]!.s;
  const dropLeftovers = async () => {
    const found = await db.query<{ name: string }>(
      `SELECT nspname AS name FROM pg_namespace
       WHERE nspname ~ '^(rebuild|retired)_[0-9a-f]{12}$'
         AND coalesce(obj_description(oid, 'pg_namespace'), $1) = $1
       ORDER BY nspname`,
      [shadowLabel(live)],
    );
    const names = found.rows.map((r) => r.name).filter((n) => SHADOW_NAME.test(n));
    for (const n of names) await db.query(`DROP SCHEMA IF EXISTS ${ident(n)} CASCADE`);
    return names;
  };
  if (db.kind === 'pglite') {
    if (runningInProcess.has(db)) throw new RebuildBusyError('a rebuild is already running in this process');
    runningInProcess.add(db);
    try {
      return await run(live, await dropLeftovers());
    } finally {
      runningInProcess.delete(db);
    }
  }
  return db.transaction(async (lock) => {
    const got = await lock.query<{ ok: boolean }>(
      'SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS ok',
      [REBUILD_LOCK, live],
    );
    if (!got.rows[0]!.ok) {
      const holder = await db.query<{ pid: number; since: string | null; app: string }>(
        `SELECT a.pid, to_char(a.xact_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS since,
                a.application_name AS app
         FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objsubid = 2
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
         LIMIT 1`,
        [REBUILD_LOCK],
      );
      const h = holder.rows[0];
      throw new RebuildBusyError(
        `another rebuild or verify is running on this database (schema ${live}` +
          (h ? `, PostgreSQL backend ${h.pid}${h.since ? ` since ${h.since}` : ''}` : '') +
          '); run this one when it has finished',
      );
    }
    return run(live, await dropLeftovers());
  });
}

/**
 * Rebuilds (or with `verify`, proves) the read models; one at a time per database (withRebuildLock), and
 * after dropping what an interrupted one left behind.
 */
export async function rebuildReadModels(opts: RebuildOptions): Promise<RebuildResult> {
  const models = readModelsOf(opts.projections, opts.names);
  return withRebuildLock(opts.db, (live, leftovers) => runRebuild(opts, models, live, leftovers));
}

async function runRebuild(
  opts: RebuildOptions,
  models: Projection[],
  live: string,
  leftovers: string[],
): Promise<RebuildResult> {
  const { db, store, verify = false, pageSize = 2000, onProgress } = opts;
  const started = performance.now();
  const tables = models.flatMap((m) => READ_MODEL_TABLES[m.name]!);
  const tag = randomUUID().replace(/-/g, '').slice(0, 12);
  const shadow = `rebuild_${tag}`;
  const retired = `retired_${tag}`;
  // PGlite runs in process (no round trip to save) and its query() takes one statement at a time.
  const mode = db.kind === 'pg' ? 'batched' : 'oneByOne';
  // On embedded PGlite the log is in the same single connection, which our open transaction holds: the log
  // cannot be read under the lock there (see the final step).
  const readUnderLock = store.kind !== 'pglite';
  const onShadow = async (tx: Queryable) => {
    await tx.query(`SELECT set_config('search_path', $1, true)`, [ident(shadow)]);
  };

  /** The read models' checkpoints (START when none yet); under `FOR UPDATE` when locking. */
  const checkpoints = async (q: Queryable, lock: boolean) => {
    const rows = await q.query<{ name: string; c: string; p: string }>(
      `SELECT name, commit_position::text AS c, prepare_position::text AS p FROM projection_checkpoints
       WHERE name = ANY($1::text[]) ORDER BY name ${lock ? 'FOR UPDATE' : ''}`,
      [models.map((m) => m.name)],
    );
    const out = new Map<string, Position>(models.map((m) => [m.name, START]));
    for (const r of rows.rows) out.set(r.name, { commit: BigInt(r.c), prepare: BigInt(r.p) });
    return out;
  };
  /** Where each read model's replay should end: the head for a rebuild, its checkpoint for a verify. */
  const wanted = async (q: Queryable) => (verify ? checkpoints(q, false) : allAt(await store.headPosition()));
  const allAt = (p: Position) => new Map(models.map((m) => [m.name, p]));

  let events = 0;
  let first: Position | null = null;
  let position = START;
  let target = START;
  const report = (phase: RebuildProgress['phase']) =>
    onProgress?.({ phase, events, position, target, first });

  /**
   * Reads the log after `from` up to `upTo` in pages (the next read overlaps this page's apply); `applied`
   * runs once a page is applied and counted, so progress never shows a page before its events.
   */
  const replay = async (
    from: Position,
    upTo: Position,
    apply: (page: RecordedEvent[]) => Promise<void>,
    applied?: () => void,
  ) => {
    let next = store.readAll(from, pageSize);
    for (;;) {
      const raw = await next;
      const page = raw.filter((e) => comparePositions(e.position, upTo) <= 0);
      const done = page.length < raw.length || raw.length < pageSize;
      if (!done) next = store.readAll(raw[raw.length - 1]!.position, pageSize);
      if (page.length) {
        first ??= page[0]!.position;
        await apply(page);
        if (comparePositions(page[page.length - 1]!.position, position) > 0) {
          events += page.filter((e) => comparePositions(e.position, position) > 0).length;
          position = page[page.length - 1]!.position;
        }
        applied?.();
      }
      if (done) return;
    }
  };
  const minOf = (ps: Iterable<Position>) => [...ps].reduce((a, b) => (comparePositions(a, b) <= 0 ? a : b));

  /** What the shadow holds: each read model's events up to this position. */
  const built = new Map<string, Position>(models.map((m) => [m.name, START]));
  /** Brings every shadow table from where it is to `to`, one transaction per read model and page. */
  const catchUp = async (to: Map<string, Position>) => {
    target = max([...to.values()]);
    const applyPage = async (page: RecordedEvent[]) => {
      await Promise.all(
        models.map(async (m) => {
          // The log is the durable copy: no need to wait for each page's commit to reach the disk.
          const settings =
            `SELECT set_config('search_path', ${escapeLiteral(ident(shadow))}, true);\n` +
            'SET LOCAL synchronous_commit TO OFF;\n';
          const inShadow = (how: 'batched' | 'oneByOne') =>
            db.transaction(async (tx) => {
              if (how === 'batched') {
                // The settings travel with the page's statements: one round trip in the transaction.
                await applyEvents(tx, m, page, built.get(m.name)!, to.get(m.name)!, how, settings);
                return;
              }
              await onShadow(tx);
              await tx.query('SET LOCAL synchronous_commit TO OFF');
              await applyEvents(tx, m, page, built.get(m.name)!, to.get(m.name)!, how);
            });
          if (!page.some((e) => m.handles.includes(e.type))) return;
          // A failed batch is run again statement by statement, which names the event that fails.
          if (mode === 'oneByOne') await inShadow('oneByOne');
          else await inShadow('batched').catch(() => inShadow('oneByOne'));
        }),
      );
    };
    await replay(minOf(built.values()), target, applyPage, () => report(phaseNow));
    for (const m of models)
      if (comparePositions(to.get(m.name)!, built.get(m.name)!) > 0) built.set(m.name, to.get(m.name)!);
  };
  let phaseNow: RebuildProgress['phase'] = 'replay';
  let swapLockMisses = 0;

  // Created with its label in one transaction: an unlabelled shadow counts as anyone's leftover (one killed
  // before it was labelled), so a rebuild of another live schema could drop it between the two.
  await db.transaction(async (tx) => {
    await tx.query(`CREATE SCHEMA ${ident(shadow)}`);
    await tx.query(`COMMENT ON SCHEMA ${ident(shadow)} IS ${escapeLiteral(shadowLabel(live))}`);
  });
  try {
    await db.transaction(async (tx) => {
      for (const t of tables) await createShadowTable(tx, live, shadow, t);
    });
    report('replay');
    for (let round = 1; ; round++) {
      // Outside any lock: the whole log the first time, then whatever was appended meanwhile.
      await catchUp(await wanted(db));
      if (round === 1 && !verify) await setLogged(db, shadow, tables);
      phaseNow = 'catch-up';
      const outcome = await db
        .transaction(async (tx): Promise<RebuildResult | typeof RETRY> => {
          // From here until commit the runner cannot apply anything to these read models (it takes the
          // same row locks), so the live tables stand still.
          const served = await checkpoints(tx, true);
          let end: Map<string, Position>;
          report('catch-up');
          if (readUnderLock) {
            end = verify ? served : allAt(await store.headPosition());
            target = max([...end.values()]);
            await onShadow(tx);
            await replay(minOf(built.values()), target, async (page) => {
              for (const m of models)
                await applyEvents(tx, m, page, built.get(m.name)!, end.get(m.name)!, mode);
            });
            await tx.query(`SELECT set_config('search_path', $1, true)`, [ident(live)]);
          } else {
            // The log cannot be read here; if the live read models moved past the shadow, catch up again.
            end = built;
            const moved = models.some((m) =>
              verify
                ? comparePositions(served.get(m.name)!, built.get(m.name)!) !== 0
                : comparePositions(served.get(m.name)!, built.get(m.name)!) > 0,
            );
            if (moved) return RETRY;
          }

          const differences: TableDifference[] = [];
          if (verify) {
            report('compare');
            for (const t of tables) {
              const d = await compareTable(tx, live, shadow, t);
              if (d) differences.push(d);
            }
          } else {
            report('swap');
            // Every live table at once, waiting briefly: a reader holding one of them while it waits for
            // another would otherwise deadlock with the swap (PostgreSQL then aborts one of the two, maybe
            // the reader, which would answer 500). Giving up well before deadlock_timeout (1 s) leaves the
            // reader alone; the round starts over.
            await tx.query(`SET LOCAL lock_timeout = '${SWAP_LOCK_WAIT_MS}ms'`);
            await tx.query(
              `LOCK TABLE ${[...tables]
                .sort()
                .map((t) => `${ident(live)}.${ident(t)}`)
                .join(', ')} IN ACCESS EXCLUSIVE MODE`,
            );
            await tx.query(`SET LOCAL lock_timeout = 0`);
            await swapTables(tx, live, shadow, retired, tables);
            // Every cached read (queries/availability.ts, queries/coachProfile.ts) is computed again.
            await tx.query(BUMP_EVERYTHING);
            for (const m of models) {
              const at = end.get(m.name)!;
              await tx.query(
                `INSERT INTO projection_checkpoints (name, commit_position, prepare_position)
               VALUES ($1, $2::numeric, $3::numeric)
               ON CONFLICT (name) DO UPDATE SET commit_position = EXCLUDED.commit_position,
                 prepare_position = EXCLUDED.prepare_position, updated_at = now()`,
                [m.name, at.commit.toString(), at.prepare.toString()],
              );
            }
            await tx.query(`DROP SCHEMA ${ident(retired)} CASCADE`);
          }
          report('done');
          return {
            readModels: models.map((m) => m.name),
            events,
            positions: Object.fromEntries(models.map((m) => [m.name, fmt(end.get(m.name)!)])),
            differences,
            leftovers,
            ms: performance.now() - started,
          };
        })
        .catch((err: unknown): typeof LOCKS_BUSY => {
          if ((err as { code?: string }).code === '55P03') return LOCKS_BUSY; // lock_timeout
          throw err;
        });
      if (outcome === LOCKS_BUSY) swapLockMisses++;
      else if (outcome !== RETRY) return outcome;
      if (round >= 50)
        throw new RebuildError(
          swapLockMisses
            ? `could not lock the live tables for the swap (${swapLockMisses} tries); try again when quieter`
            : 'the live read models kept moving; try again when quieter',
        );
      if (outcome === LOCKS_BUSY) await new Promise((r) => setTimeout(r, 20 * round));
    }
  } finally {
    await db.query(`DROP SCHEMA IF EXISTS ${ident(shadow)} CASCADE`);
  }
}
