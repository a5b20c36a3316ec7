import { sqlLiteral, type Database, type Queryable } from '../src/db/database';
import { recordingQueryable } from '../src/db/recordedBatch';
import { isDatabaseBusy, isDatabaseUnavailable } from '../src/db/unavailable';
import type { EventStore, Position, RecordedEvent, Subscription } from '../src/eventstore/types';
import { START, comparePositions } from '../src/eventstore/types';
import type { Logger } from '../src/log';
import { LeaseLostError, type Leases } from '../src/leases';
import { limiter } from '../src/limiter';

/**
 * A read model (`apply`: runs inside the transaction that moves its checkpoint) or a process manager
 * (`react`: effects outside any read-model transaction, e.g. appending follow-up events or sending mail;
 * at-least-once, so every effect must be idempotent, keyed by the causing event).
 */
export interface Projection {
  name: string;
  /** Event types it reads; the others only move its checkpoint. */
  handles: readonly string[];
  apply?(tx: Queryable, event: RecordedEvent): Promise<void>;
  react?(event: RecordedEvent): Promise<void>;
  /**
   * A process manager whose reactions to unrelated events are independent names, per event, what orders
   * it (a booking, a recipient): the events of a batch that share a key are reacted to in log order, the
   * others side by side, so their appends share commits instead of each waiting for its own. Without it,
   * one event after the other.
   */
  orderedBy?(event: RecordedEvent): string[];
  /**
   * A process manager names the lease it runs under: with several instances of the service only the
   * instance holding it runs the projection (read models need none: their checkpoint row decides).
   */
  lease?: string;
}

/** `standby`: a process manager whose lease another instance holds. */
export type ProjectionState = 'starting' | 'running' | 'retrying' | 'failed' | 'stopped' | 'standby';

export interface ProjectionStatus {
  name: string;
  state: ProjectionState;
  /** Last event applied here (null before the first one, or while on standby). */
  position: { commit: string; prepare: string } | null;
  /** `live`: fed by the process's shared subscription; `catch-up`: reading the log from its own position. */
  mode: 'live' | 'catch-up';
  /** Events handed over by the shared subscription and not applied yet. */
  queued: number;
  lease?: { name: string; held: boolean };
  error?: string;
  failedEvent?: { id: string; type: string; streamName: string; position: string };
}

/** Connection-level and concurrency failures pass; anything else applied to the same event fails again. */
export function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return (
    // The database away: down, restarting, out of connections, no connection within its timeout.
    isDatabaseUnavailable(err) ||
    code === '40001' || // serialization failure
    code === '40P01' || // deadlock
    // The server gave up on the statement, not on the event (statement_timeout, e.g. while a rebuild's swap
    // holds the checkpoint row; lock_timeout; disk full). Before, three of these in a row stopped the projection.
    isDatabaseBusy(err) ||
    (err as { transient?: unknown })?.transient === true || // a side effect that may pass (e.g. mail 4xx)
    // A process manager that lost optimistic-concurrency races on a busy stream: trying later succeeds.
    (err as Error)?.name === 'ConcurrencyConflictError' ||
    // node-postgres reports a connection lost mid-query without a code.
    /connection error|Connection refused/i.test((err as Error)?.message ?? '') ||
    isTransientEventStoreError(err)
  );
}

/**
 * EventStoreDB's client names every error plain 'Error' and says what happened in `type`: a node that is
 * down or restarting, a deadline, a follower that is not the leader, a stream the server cancelled, an
 * aborted (timed out) call. All pass once the cluster answers again.
 */
const ESDB_TRANSIENT_TYPES = ['unavailable', 'deadline-exceeded', 'not-leader', 'cancelled', 'timeout'];
function isTransientEventStoreError(err: unknown): boolean {
  const type = (err as { type?: unknown })?.type;
  return typeof type === 'string' && ESDB_TRANSIENT_TYPES.includes(type);
}

/** Irrelevant events a projection may pass before it must write its checkpoint anyway. */
const SKIP_SAVE_EVERY = 1000;
/** How often a process manager writes its checkpoint while it keeps reacting (see applyBatch). */
const PM_SAVE_EVERY_MS = 200;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (p: Position) => ({ commit: p.commit.toString(), prepare: p.prepare.toString() });
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export interface RunnerOptions {
  /** Attempts for an event that fails with a non-transient error before the projection stops. */
  poisonAttempts?: number;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** Longest wait between attempts to read the log again after losing it (the log comes back fast). */
  maxResubscribeBackoffMs?: number;
  batchSize?: number;
  /**
   * Events the shared subscription may hold for one projection. A projection further behind than this
   * (slow, retrying) leaves the shared feed and reads the log on its own until it has caught up.
   */
  queueLimit?: number;
  /** How often (ms) the checkpoint rows are compared with what was committed to them (PostgreSQL only). */
  auditEveryMs?: number;
  /** Who runs the process managers (projections with a `lease`); without it they run here. */
  leases?: Leases;
}

export interface ProjectionRunner {
  start(): Promise<void>;
  stop(): Promise<void>;
  status(): ProjectionStatus[];
  /**
   * Resolves true once every named projection has applied `position`; false on timeout or when one of
   * them failed. Without names: every projection running here (process managers on standby, which
   * another instance runs, are not waited for).
   */
  waitFor(position: Position, timeoutMs: number, names?: string[]): Promise<boolean>;
}

interface CheckpointRow {
  name: string;
  c: string;
  p: string;
  /** Whether the process manager's lease was still this instance's (true for read models). */
  fenced: boolean;
}

/**
 * Locks checkpoint rows, in name order (as the rebuild does) so that two transactions locking several never
 * deadlock, and turns synchronous commit off for the transaction: read models need not wait for the disk.
 * Parameterless, to travel with BEGIN; projection names are the code's own.
 */
const lockSql = (names: string[], fence: string | null = null) =>
  `SELECT set_config('synchronous_commit', 'off', true), name, commit_position::text AS c,
     prepare_position::text AS p, ${fence ?? 'true'} AS fenced
   FROM projection_checkpoints WHERE name IN (${names.map(sqlLiteral).join(', ')}) ORDER BY name FOR UPDATE`;

/** Moves checkpoints; parameterless, to travel with COMMIT (positions are bigints, names the code's own). */
const saveSql = (moves: { name: string; at: Position }[]) =>
  `UPDATE projection_checkpoints AS k SET commit_position = v.c, prepare_position = v.p, updated_at = now()
   FROM (VALUES ${moves
     .map(
       (m) =>
         `(${sqlLiteral(m.name)}, ${m.at.commit.toString()}::numeric, ${m.at.prepare.toString()}::numeric)`,
     )
     .join(', ')}) AS v(name, c, p) WHERE k.name = v.name`;

/**
 * The checkpoints a one-round-trip group expects, locked by the function of migration 3 (src/db/migrations/
 * core.ts), with synchronous commit off as in `lockSql`. Parameterless: names are the code's own.
 */
const expectSql = (rows: CheckpointRow[]) =>
  `SELECT set_config('synchronous_commit', 'off', true), rm_lock_expected_checkpoints(
     ARRAY[${rows.map((r) => sqlLiteral(r.name)).join(', ')}]::text[],
     ARRAY[${rows.map((r) => r.c).join(', ')}]::numeric[], ARRAY[${rows.map((r) => r.p).join(', ')}]::numeric[])`;

const joinSql = (...statements: string[]) => statements.filter(Boolean).join(';\n');

/** How long a consumer whose checkpoint another instance moved locks and reads it before each change. */
const CONTENDED_MS = 5000;

/** A shared read-model transaction failed: each of its read models applies the batch alone. */
class GroupFailed extends Error {
  constructor(readonly reason: unknown) {
    super(`shared projection transaction failed: ${message(reason)}`);
  }
}

/** Thrown inside a consumer when it was stopped or lost its lease: not a failure of the projection. */
class Deactivated extends Error {}

/**
 * A checkpoint row found behind what this instance committed to it: PostgreSQL lost acknowledged
 * read-model commits (they are not synchronous: a server crash loses the last moments of them, the row
 * and the read model's changes together). The consumer reads the log again from the row.
 */
class CheckpointBehind extends Error {
  constructor(
    readonly c: Consumer,
    readonly row: Position,
  ) {
    super(`checkpoint of ${c.p.name} found behind what was committed to it`);
  }
}

interface Consumer {
  p: Projection;
  state: ProjectionState;
  error?: string;
  failedEvent?: ProjectionStatus['failedEvent'];
  /** Last event applied (in memory; the checkpoint row may lag for batches the projection ignores). */
  at: Position | null;
  mode: 'live' | 'catch-up';
  queue: RecordedEvent[][];
  queued: number;
  /** Ends the consumer's wait for its queue. */
  wake?: () => void;
  /** Whether it may run here: always for read models; while the lease is held for process managers. */
  active: boolean;
  /** Bumped on every activation and deactivation, so a loop from an earlier activation ends. */
  generation: number;
  loop?: Promise<void>;
  /** Events seen since it last wrote its checkpoint, none of which it handles. */
  unsaved: number;
  /** Its checkpoint row exists (it is never deleted), so the insert-if-absent can be skipped. */
  rowExists: boolean;
  /** When it last wrote its checkpoint (performance.now()). */
  savedAt: number;
  /** The last position this instance knows it committed to the row (or read from it at start). */
  committed?: Position;
  /**
   * Whether the row holds `committed` as far as this instance knows (false after a transaction whose
   * outcome is unknown, or a refusal): a shared transaction then states it instead of reading the row first
   * (see inOneRoundTrip).
   */
  rowKnown: boolean;
  /** Its row, found behind `committed` by the audit (see auditCheckpoints): rewound at its next turn. */
  lost?: Position;
  /** Until when (performance.now()) another instance is taken to move its checkpoint too: no guessing. */
  contendedUntil: number;
}

/**
 * Runs every projection of the process from ONE subscription to the log (the shared feed), fanned out to
 * a bounded queue per projection. Each projection keeps its own checkpoint and applies at its own pace:
 * one that starts, restarts, falls more than `queueLimit` events behind or comes back from a failure of
 * the store reads the log from its own position (catch-up) and rejoins the feed once it has reached it.
 * So a slow or stuck projection never holds back the others, and the log is read once while all keep up.
 */
/** Reactions of one process manager running side by side at most (see `orderedBy`). */
const REACT_CONCURRENCY = 32;

export function createProjectionRunner(
  store: EventStore,
  db: Database,
  projections: Projection[],
  log: Logger,
  opts: RunnerOptions = {},
): ProjectionRunner {
  const {
    poisonAttempts = 3,
    baseBackoffMs = 50,
    maxBackoffMs = 5000,
    maxResubscribeBackoffMs = 1000,
    batchSize = 200,
    queueLimit = 5000,
    auditEveryMs = 2000,
    leases,
  } = opts;
  const backoff = (attempt: number, max = maxBackoffMs) => Math.min(max, baseBackoffMs * 2 ** (attempt - 1));
  const consumers: Consumer[] = projections.map((p) => ({
    p,
    state: 'starting',
    at: null,
    mode: 'catch-up',
    queue: [],
    queued: 0,
    active: false,
    generation: 0,
    unsaved: 0,
    rowExists: false,
    savedAt: 0,
    contendedUntil: 0,
    rowKnown: false,
  }));
  const waiters = new Set<() => void>();
  const unwatch: (() => void)[] = [];
  let stopping = false;
  const notify = () => [...waiters].forEach((w) => w());

  // ---- the shared feed -------------------------------------------------------------------------------
  /** Every event up to here has been handed out by the feed or predates it: the feed brings only later ones. */
  let feedLast: Position = START;
  /** Counts hand-outs, so a consumer knows whether the feed moved while it read the log itself. */
  let fanOuts = 0;
  let feed: Subscription | undefined;

  const fanOut = (events: RecordedEvent[]) => {
    fanOuts++;
    feedLast = events[events.length - 1]!.position;
    for (const c of consumers) {
      if (!c.active || c.mode !== 'live' || c.state === 'failed') continue;
      if (c.queued + events.length > queueLimit) {
        // Too far behind to buffer: it reads the log on its own from where it is.
        log.warn('projection left the shared feed to catch up on its own', {
          projection: c.p.name,
          queued: c.queued,
        });
        c.mode = 'catch-up';
        c.queue = [];
        c.queued = 0;
      } else {
        c.queue.push(events);
        c.queued += events.length;
      }
      c.wake?.();
    }
  };

  /** A feed that ends on an error resumes after what it handed out last, with backoff; nothing is lost. */
  const subscribeFeed = (attempt: number) => {
    feed = store.subscribe({
      from: feedLast,
      batchSize,
      handler: async (events) => {
        fanOut(events);
        attempt = 1;
      },
      onError: (err) => {
        if (stopping) return;
        log.warn('shared subscription lost; resubscribing', { error: message(err), attempt });
        setTimeout(
          () => {
            if (!stopping) subscribeFeed(attempt + 1);
          },
          backoff(attempt, maxResubscribeBackoffMs),
        );
      },
    });
  };

  // ---- one projection ------------------------------------------------------------------------------
  const loadCheckpoint = async (name: string): Promise<Position | null> => {
    const res = await db.query<{ c: string; p: string }>(
      'SELECT commit_position::text AS c, prepare_position::text AS p FROM projection_checkpoints WHERE name = $1',
      [name],
    );
    const row = res.rows[0];
    return row ? { commit: BigInt(row.c), prepare: BigInt(row.p) } : null;
  };

  const ensureActive = (c: Consumer, generation: number) => {
    if (stopping || c.generation !== generation) throw new Deactivated();
    if (c.p.lease && leases && !leases.holds(c.p.lease)) throw new LeaseLostError(c.p.lease);
  };

  /** Its checkpoint row, created once (rows are never deleted but by a rebuild, handled when locking). */
  const ensureRow = async (c: Consumer) => {
    if (c.rowExists) return;
    await db.query(
      `INSERT INTO projection_checkpoints (name, commit_position, prepare_position) VALUES ($1, -1, -1)
       ON CONFLICT (name) DO NOTHING`,
      [c.p.name],
    );
    c.rowExists = true;
  };

  /**
   * Applies the events after each projection's stored checkpoint and says where each checkpoint moves,
   * inside a transaction that locked the rows (`locked`): another instance of the service may run the same
   * read models, and the locked row says what is already applied, so each event lands once whoever gets
   * there first. A row missing (a rebuild starts its projection over) is created again, from the start.
   */
  const applyLocked = async (
    tx: Queryable,
    locked: CheckpointRow[],
    batches: { c: Consumer; events: RecordedEvent[]; mine: RecordedEvent[] }[],
    writes: Queryable = tx,
  ): Promise<{ save: string; rows: { c: Consumer; at: Position }[] }> => {
    const rows = new Map(locked.map((r) => [r.name, r]));
    const moves: { name: string; at: Position }[] = [];
    const after: { c: Consumer; at: Position }[] = [];
    for (const { c, events, mine } of batches) {
      let stored = rows.get(c.p.name);
      if (!stored) {
        await tx.query(
          `INSERT INTO projection_checkpoints (name, commit_position, prepare_position) VALUES ($1, -1, -1)
           ON CONFLICT (name) DO NOTHING`,
          [c.p.name],
        );
        stored = (await tx.query<CheckpointRow>(lockSql([c.p.name]))).rows[0]!;
      }
      const done = { commit: BigInt(stored.c), prepare: BigInt(stored.p) };
      if (rows.has(c.p.name) && c.committed && comparePositions(done, c.committed) < 0)
        throw new CheckpointBehind(c, done);
      const last = events[events.length - 1]!.position;
      if (comparePositions(last, done) <= 0) {
        after.push({ c, at: done });
        continue;
      }
      if (c.p.apply)
        for (const e of mine) if (comparePositions(e.position, done) > 0) await c.p.apply(writes, e);
      moves.push({ name: c.p.name, at: last });
      after.push({ c, at: last });
    }
    return { save: moves.length ? saveSql(moves) : '', rows: after };
  };

  /** Once a transaction that locked checkpoints committed: where each of its rows stands now. */
  const remember = (rows: { c: Consumer; at: Position }[]) =>
    rows.forEach((r) => {
      r.c.committed = r.at;
      r.c.rowKnown = true;
    });

  /**
   * A consumer finds a lost commit when it next locks its row, which for a read model that rarely gets
   * events (or a process manager) may be long after PostgreSQL came back. So the rows are also read every
   * `auditEveryMs` and compared with what each consumer had committed before the read was sent; one found
   * behind is rewound at its next turn. One small statement per interval; PGlite cannot lose commits while
   * the process runs.
   */
  let auditing = false;
  const auditCheckpoints = async () => {
    if (auditing || stopping || db.kind !== 'pg') return;
    auditing = true;
    try {
      const before = consumers.map((c) => ({ c, committed: c.committed }));
      const { rows } = await db.query<{ name: string; c: string; p: string }>(
        'SELECT name, commit_position::text AS c, prepare_position::text AS p FROM projection_checkpoints',
        [],
        { name: 'checkpoints_audit' },
      );
      const found = new Map(rows.map((r) => [r.name, { commit: BigInt(r.c), prepare: BigInt(r.p) }]));
      for (const { c, committed } of before) {
        const row = found.get(c.p.name);
        if (!c.active || !committed || !row || comparePositions(row, committed) >= 0) continue;
        c.lost = row;
        c.wake?.();
      }
    } catch {
      // The database is away: the next interval tries again.
    } finally {
      auditing = false;
    }
  };
  let auditTimer: NodeJS.Timeout | undefined;

  /** Applies again what a lost commit undid: from the row on, read from the log (see CheckpointBehind). */
  const rewind = (c: Consumer, row: Position) => {
    log.warn(
      'checkpoint found behind what this instance committed (PostgreSQL lost commits); re-reading the log from it',
      {
        projection: c.p.name,
        row: fmt(row),
        committed: c.committed ? fmt(c.committed) : null,
      },
    );
    c.at = row;
    c.committed = row;
    c.rowKnown = true;
    c.mode = 'catch-up';
    c.queue = [];
    c.queued = 0;
    c.unsaved = 0;
  };
  /** Once such a transaction failed: whether its rows moved is not known (`committed` stays as it was). */
  const forget = (cs: Consumer[]) => cs.forEach((c) => (c.rowKnown = false));

  /**
   * Batches applied in one transaction that first locks (and reads) their checkpoint rows with `lock`;
   * `guard` runs on the locked rows before anything is applied. Afterwards each consumer knows what its row
   * holds, or, if the transaction failed, that it does not.
   */
  const applyUnderLock = async (
    lock: string,
    batches: { c: Consumer; events: RecordedEvent[]; mine: RecordedEvent[] }[],
    recording: ReturnType<typeof recordingQueryable> | null,
    guard?: (tx: Queryable, locked: CheckpointRow[]) => Promise<void>,
  ) => {
    let rows: { c: Consumer; at: Position }[] = [];
    await db
      .framedTransaction<CheckpointRow, void>(lock, async (tx, locked) => {
        await guard?.(tx, locked);
        const applied = await applyLocked(tx, locked, batches, recording?.tx ?? tx);
        rows = applied.rows;
        return { value: undefined, last: joinSql(recording?.take() ?? '', applied.save) };
      })
      .catch((err: unknown) => {
        forget(batches.map((b) => b.c));
        throw err;
      });
    remember(rows);
  };

  // ---- read models applied together ----------------------------------------------------------------
  // The shared feed wakes every live read model with the same events at once. Instead of one transaction
  // each (four round trips and a commit apiece), those that reach this point in the same turn of the event
  // loop share one: their checkpoint rows locked by one statement that travels with BEGIN, the new
  // positions written by one that travels with COMMIT. Should anything in it fail, nothing of it stays and
  // each read model applies the batch again in a transaction of its own, where a failure is its own.
  interface Member {
    c: Consumer;
    generation: number;
    events: RecordedEvent[];
    mine: RecordedEvent[];
    resolve: () => void;
    reject: (err: unknown) => void;
  }
  let forming: Member[] = [];
  const runGroup = async () => {
    const members = forming.filter((m) => {
      try {
        ensureActive(m.c, m.generation);
        return true;
      } catch (err) {
        m.reject(err);
        return false;
      }
    });
    forming = [];
    if (members.length === 0) return;
    try {
      if (!(await inOneRoundTrip(members))) {
        // On PostgreSQL the read models' statements are recorded and sent with the checkpoints' and the
        // COMMIT (src/db/recordedBatch.ts: one parse and plan per statement text, runs of the same INSERT
        // as one multi-row INSERT): two round trips for the whole group, however many events it applies.
        // Read models only write; one that reads a result fails the group and applies alone.
        await applyUnderLock(
          lockSql(members.map((m) => m.c.p.name)),
          members,
          db.kind === 'pg' ? recordingQueryable() : null,
        );
      }
      members.forEach((m) => m.resolve());
    } catch (err) {
      forget(members.map((m) => m.c));
      log.warn('shared read-model transaction failed; each read model applies the batch alone', {
        projections: members.map((m) => m.c.p.name),
        error: message(err),
      });
      members.forEach((m) => m.reject(new GroupFailed(err)));
    }
  };
  /**
   * The group in one round trip instead of two, on PostgreSQL, while this instance knows what each of its
   * checkpoint rows holds (it wrote them last): instead of locking and reading them first, the transaction
   * states them (`rm_lock_expected_checkpoints` locks the rows in name order and fails with RM001 if one
   * moved) and carries the read models' statements and the new positions, all one implicit transaction.
   * False, with nothing changed, when it does not apply or a row had moved (another instance of the
   * service applies the same read models): the caller then locks and reads the rows first, and the
   * consumers stop guessing for a while.
   */
  const inOneRoundTrip = async (members: Member[]): Promise<boolean> => {
    const now = performance.now();
    if (db.kind !== 'pg' || members.some(({ c }) => !c.rowKnown || !c.committed || c.contendedUntil > now))
      return false;
    const expected: CheckpointRow[] = members.map(({ c }) => ({
      name: c.p.name,
      c: c.committed!.commit.toString(),
      p: c.committed!.prepare.toString(),
      fenced: true,
    }));
    const recording = recordingQueryable();
    const { save, rows } = await applyLocked(recording.tx, expected, members, recording.tx);
    try {
      await db.query(joinSql(expectSql(expected), recording.take(), save));
    } catch (err) {
      if ((err as { code?: unknown })?.code !== 'RM001') throw err;
      for (const { c } of members) {
        c.rowKnown = false;
        c.contendedUntil = performance.now() + CONTENDED_MS; // from the refusal: a long lock wait uses none of it
      }
      return false;
    }
    remember(rows);
    return true;
  };

  const applyInGroup = (c: Consumer, generation: number, events: RecordedEvent[], mine: RecordedEvent[]) =>
    new Promise<void>((resolve, reject) => {
      if (forming.length === 0) setImmediate(() => void runGroup());
      forming.push({ c, generation, events, mine, resolve, reject });
    });

  /**
   * A process manager's reactions to a batch, in log order; with `orderedBy`, in log order per key and side
   * by side across keys (at most REACT_CONCURRENCY at once). All of them are settled before this returns,
   * so a failure (thrown after) leaves no reaction of the batch running when it is retried one by one.
   */
  const reactAll = async (c: Consumer, generation: number, events: RecordedEvent[]) => {
    const { p } = c;
    const react = async (e: RecordedEvent) => {
      ensureActive(c, generation);
      await p.react!(e);
    };
    if (!p.orderedBy || events.length < 2) {
      for (const e of events) await react(e);
      return;
    }
    const tails = new Map<string, Promise<unknown>>();
    const slots = limiter(REACT_CONCURRENCY);
    const runs = events.map((e) => {
      const keys = [...new Set(p.orderedBy!(e))];
      const before = keys.map((k) => tails.get(k)).filter((t) => t !== undefined);
      // Started once the earlier events of its keys have taken effect. One that failed holds back the rest
      // of its keys (they fail with it, not run): the batch fails as a whole and is retried one by one in
      // log order, and a later event's effect (a cancellation mail) must not come before an earlier one's.
      const run = Promise.all(before).then(() => slots(() => react(e)));
      keys.forEach((k) => tails.set(k, run));
      return run;
    });
    const outcomes = await Promise.allSettled(runs);
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) throw failed.reason;
  };

  /**
   * One transaction: the events' effects and the checkpoint commit together or not at all. A batch the
   * projection has nothing to do with only moves its position in memory (most batches, for most
   * projections); the checkpoint catches up with its next real change, or every SKIP_SAVE_EVERY events,
   * so a restart re-reads at most that many irrelevant events. `alone`: never in a shared transaction.
   */
  const applyBatch = async (c: Consumer, generation: number, events: RecordedEvent[], alone = false) => {
    const { p } = c;
    const mine = events.filter((e) => p.handles.includes(e.type));
    const skipped = c.unsaved + events.length;
    if (mine.length === 0 && skipped < SKIP_SAVE_EVERY) {
      c.unsaved = skipped;
      return;
    }
    // Reactions run before the checkpoint moves: a crash in between repeats them, never loses them. A
    // process manager checks its lease before each one, so an instance that lost it stops acting.
    if (p.react) await reactAll(c, generation, mine);
    // A process manager's effects are idempotent, keyed by their causing event, and stored elsewhere: its
    // checkpoint only shortens the re-reading after a restart, so it is written at most every
    // PM_SAVE_EVERY_MS (or SKIP_SAVE_EVERY events) instead of once per batch.
    if (
      p.react &&
      !p.apply &&
      skipped < SKIP_SAVE_EVERY &&
      performance.now() - c.savedAt < PM_SAVE_EVERY_MS
    ) {
      c.unsaved = skipped;
      return;
    }
    await ensureRow(c);
    let shared = false;
    if (!alone && !p.react && !p.lease)
      shared = await applyInGroup(c, generation, events, mine).then(
        () => true,
        (err: unknown) => {
          if (err instanceof GroupFailed) return false;
          throw err;
        },
      );
    // Read models need not wait for the disk: a crash loses the change and its checkpoint together, and
    // the events (which are durable) are applied again (also while this process runs on: CheckpointBehind).
    // Only the event store's commits must be durable.
    if (!shared)
      await applyUnderLock(
        lockSql([p.name], p.lease && leases ? leases.fenceCondition(p.lease) : null),
        [{ c, events, mine }],
        null,
        // A process manager acts only while its lease is this instance's, checked in the same statement
        // that locks its checkpoint (or on its own when the row had to be made again).
        async (tx, locked) => {
          if (!p.lease || !leases) return;
          if (!leases.holds(p.lease) || locked[0]?.fenced === false) throw new LeaseLostError(p.lease);
          if (!locked[0]) await leases.fence(tx, p.lease);
        },
      );
    c.unsaved = 0;
    c.savedAt = performance.now();
  };

  const applied = (c: Consumer, position: Position) => {
    c.at = position;
    if (c.state === 'retrying' || c.state === 'starting') c.state = 'running';
    delete c.error;
    notify();
  };

  /** Stopped, lease lost, or PostgreSQL lost commits: nothing a retry of the events one by one would mend. */
  const notTheBatchsFault = (err: unknown) =>
    err instanceof Deactivated || err instanceof LeaseLostError || err instanceof CheckpointBehind;

  /** A failing batch is retried event by event, so a poison event is named and its predecessors land. */
  const handleBatch = async (c: Consumer, generation: number, events: RecordedEvent[]) => {
    try {
      await applyBatch(c, generation, events);
    } catch (batchErr) {
      if (notTheBatchsFault(batchErr)) throw batchErr;
      log.warn('projection batch failed, applying its events one by one', {
        projection: c.p.name,
        error: message(batchErr),
      });
      for (const e of events) {
        for (let attempt = 1; ; attempt++) {
          try {
            await applyBatch(c, generation, [e], true);
            break;
          } catch (err) {
            if (notTheBatchsFault(err)) throw err;
            if (!isTransient(err) && attempt >= poisonAttempts) {
              c.failedEvent = {
                id: e.id,
                type: e.type,
                streamName: e.streamName,
                position: e.position.commit.toString(),
              };
              throw err;
            }
            ensureActive(c, generation);
            c.state = 'retrying';
            c.error = message(err);
            log.warn('projection retry', { projection: c.p.name, eventId: e.id, attempt, error: c.error });
            await sleep(backoff(attempt));
          }
        }
        applied(c, e.position);
      }
    }
    applied(c, events[events.length - 1]!.position);
  };

  /** The next events for a consumer: from its queue when live, from the log when catching up. */
  const nextBatch = async (c: Consumer, generation: number): Promise<RecordedEvent[] | null> => {
    for (let attempt = 1; ; attempt++) {
      ensureActive(c, generation);
      if (c.lost) return null; // rewound first (consume)
      if (c.mode === 'live') {
        if (c.queue.length) {
          // Everything queued meanwhile, up to a batch, goes in one transaction: a projection that fell a
          // little behind catches up in bigger steps instead of one transaction per feed batch.
          const events: RecordedEvent[] = [];
          while (c.queue.length && (events.length === 0 || events.length + c.queue[0]!.length <= batchSize)) {
            const next = c.queue.shift()!;
            c.queued -= next.length;
            events.push(...next);
          }
          const at = c.at ?? START;
          return events.filter((e) => comparePositions(e.position, at) > 0);
        }
        await new Promise<void>((resolve) => (c.wake = resolve));
        c.wake = undefined;
        continue;
      }
      const at = c.at ?? START;
      // Caught up with the feed: everything it hands out from now on is new to this projection.
      if (comparePositions(at, feedLast) >= 0) {
        c.mode = 'live';
        continue;
      }
      const before = fanOuts;
      try {
        const events = await store.readAll(at, batchSize);
        if (events.length) return events;
        // Nothing after `at` in the log, and the feed handed out nothing meanwhile: join it.
        if (fanOuts === before) c.mode = 'live';
        continue;
      } catch (err) {
        ensureActive(c, generation);
        c.state = 'retrying';
        c.error = message(err);
        log.warn('projection could not read the log; trying again', {
          projection: c.p.name,
          error: c.error,
          attempt,
        });
        await sleep(backoff(attempt, maxResubscribeBackoffMs));
      }
    }
  };

  const consume = async (c: Consumer, generation: number) => {
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          const from = await loadCheckpoint(c.p.name);
          c.rowExists = from !== null;
          c.at = from;
          c.committed = from ?? undefined;
          c.rowKnown = from !== null;
          break;
        } catch (err) {
          ensureActive(c, generation);
          c.state = 'retrying';
          c.error = message(err);
          await sleep(backoff(attempt));
        }
      }
      ensureActive(c, generation);
      c.mode = 'catch-up';
      c.unsaved = 0;
      c.state = 'running';
      delete c.error;
      notify();
      for (;;) {
        const lost = c.lost;
        c.lost = undefined;
        if (lost && c.committed && comparePositions(lost, c.committed) < 0) rewind(c, lost);
        const events = await nextBatch(c, generation);
        if (events?.length)
          await handleBatch(c, generation, events).catch((err: unknown) => {
            if (!(err instanceof CheckpointBehind)) throw err;
            rewind(c, err.row);
          });
      }
    } catch (err) {
      if (err instanceof Deactivated) return;
      if (err instanceof LeaseLostError) {
        log.warn('process manager lost its lease; it stops acting here', { projection: c.p.name });
        if (c.generation === generation) {
          c.active = false;
          c.state = 'standby';
          notify();
          // The keeper reports the loss and any new start; should it still hold the lease a moment later
          // (the database refused a fence the keeper did not see), start again from the checkpoint.
          setTimeout(() => {
            if (!stopping && !c.active && c.p.lease && leases?.holds(c.p.lease)) activate(c);
          }, 1000).unref();
        }
        return;
      }
      c.state = 'failed';
      c.error = message(err);
      log.error('projection stopped on an event it cannot apply', {
        projection: c.p.name,
        error: c.error,
        failedEvent: c.failedEvent,
      });
      notify();
    }
  };

  const activate = (c: Consumer) => {
    if (stopping || c.active) return;
    c.active = true;
    c.state = 'starting';
    delete c.failedEvent;
    const generation = ++c.generation;
    const previous = c.loop ?? Promise.resolve();
    // A previous activation's loop ends first, so two loops never apply the same projection here.
    c.loop = previous.then(() => consume(c, generation));
  };

  const deactivate = (c: Consumer, state: ProjectionState) => {
    c.generation++;
    c.active = false;
    c.queue = [];
    c.queued = 0;
    c.mode = 'catch-up';
    if (c.state !== 'failed') c.state = state;
    c.wake?.();
    notify();
  };

  return {
    async start() {
      feedLast = await store.headPosition();
      subscribeFeed(1);
      auditTimer = setInterval(() => void auditCheckpoints(), auditEveryMs);
      auditTimer.unref();
      for (const c of consumers) {
        const lease = c.p.lease;
        if (lease && leases) {
          c.state = 'standby';
          unwatch.push(leases.watch(lease, (held) => (held ? activate(c) : deactivate(c, 'standby'))));
        } else activate(c);
      }
      // Started once every projection running here knows its checkpoint.
      await new Promise<void>((resolve) => {
        const check = () => {
          if (consumers.every((c) => !c.active || c.state !== 'starting')) {
            waiters.delete(check);
            resolve();
          }
        };
        waiters.add(check);
        check();
      });
    },
    async stop() {
      stopping = true;
      clearInterval(auditTimer);
      unwatch.forEach((u) => u());
      await feed?.stop();
      for (const c of consumers) deactivate(c, 'stopped');
      await Promise.all(consumers.map((c) => c.loop));
      notify();
    },
    status() {
      return consumers.map((c) => ({
        name: c.p.name,
        state: c.state,
        position: c.at ? fmt(c.at) : null,
        mode: c.mode,
        queued: c.queued,
        ...(c.p.lease && leases ? { lease: { name: c.p.lease, held: leases.holds(c.p.lease) } } : {}),
        ...(c.error ? { error: c.error } : {}),
        ...(c.failedEvent ? { failedEvent: c.failedEvent } : {}),
      }));
    },
    waitFor(position, timeoutMs, names) {
      const targets = names
        ? names.map((n) => consumers.find((c) => c.p.name === n))
        : consumers.filter((c) => c.active || c.state === 'failed');
      const reached = () =>
        targets.every(
          (c) =>
            c &&
            ((!c.active && c.state === 'standby') ||
              (c.at !== null && comparePositions(c.at, position) >= 0)),
        );
      if (reached()) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const done = (ok: boolean) => {
          clearTimeout(timer);
          waiters.delete(check);
          resolve(ok);
        };
        const check = () => {
          if (reached()) done(true);
          else if (targets.some((c) => !c || c.state === 'failed')) done(false);
        };
        const timer = setTimeout(() => done(false), timeoutMs);
        waiters.add(check);
      });
    },
  };
}
