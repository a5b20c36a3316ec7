import type { Database, Queryable } from '../src/db/database';
import type { EventStore, Position, RecordedEvent, Subscription } from '../src/eventstore/types';
import { START, comparePositions } from '../src/eventstore/types';
import type { Logger } from '../src/log';

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
}

export type ProjectionState = 'starting' | 'running' | 'retrying' | 'failed' | 'stopped';

export interface ProjectionStatus {
  name: string;
  state: ProjectionState;
  position: { commit: string; prepare: string } | null;
  error?: string;
  failedEvent?: { id: string; type: string; streamName: string; position: string };
}

/** Connection-level and concurrency failures pass; anything else applied to the same event fails again. */
export function isTransient(err: unknown): boolean {
  const e = err as { code?: string };
  const code = typeof e?.code === 'string' ? e.code : '';
  return (
    code.startsWith('08') || // connection exceptions
    code === '40001' || // serialization failure
    code === '40P01' || // deadlock
    code === '57P01' || // admin shutdown
    code === '53300' || // too many connections
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'].includes(code) ||
    (err as { transient?: unknown })?.transient === true || // a side effect that may pass (e.g. mail 4xx)
    // A process manager that lost optimistic-concurrency races on a busy stream: trying later succeeds.
    (err as Error)?.name === 'ConcurrencyConflictError' ||
    // node-postgres reports a dropped connection without a code.
    /Connection terminated|connection error|Connection refused/i.test((err as Error)?.message ?? '') ||
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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (p: Position) => ({ commit: p.commit.toString(), prepare: p.prepare.toString() });

export interface RunnerOptions {
  /** Attempts for an event that fails with a non-transient error before the projection stops. */
  poisonAttempts?: number;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** Longest wait between attempts to resubscribe after a lost subscription (the log comes back fast). */
  maxResubscribeBackoffMs?: number;
  batchSize?: number;
}

export interface ProjectionRunner {
  start(): Promise<void>;
  stop(): Promise<void>;
  status(): ProjectionStatus[];
  /** Resolves true once every named projection (all when omitted) has applied `position`; false on timeout. */
  waitFor(position: Position, timeoutMs: number, names?: string[]): Promise<boolean>;
}

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
  } = opts;
  const states = new Map<string, ProjectionStatus & { at: Position | null }>();
  const waiters = new Set<() => void>();
  const subs = new Map<string, Subscription>();
  let stopping = false;

  const notify = () => [...waiters].forEach((w) => w());

  const loadCheckpoint = async (name: string): Promise<Position> => {
    const res = await db.query<{ c: string; p: string }>(
      'SELECT commit_position::text AS c, prepare_position::text AS p FROM projection_checkpoints WHERE name = $1',
      [name],
    );
    const row = res.rows[0];
    return row ? { commit: BigInt(row.c), prepare: BigInt(row.p) } : START;
  };

  /** Events seen since each projection last wrote its checkpoint, none of which it handles. */
  const unsaved = new Map<string, number>();

  /**
   * One transaction: the events' effects and the checkpoint commit together or not at all. A batch the
   * projection has nothing to do with only moves its position in memory (most batches, for most
   * projections); the checkpoint catches up with its next real change, or every SKIP_SAVE_EVERY events,
   * so a restart re-reads at most that many irrelevant events.
   */
  const applyBatch = async (p: Projection, events: RecordedEvent[]) => {
    const mine = events.filter((e) => p.handles.includes(e.type));
    const skipped = (unsaved.get(p.name) ?? 0) + events.length;
    if (mine.length === 0 && skipped < SKIP_SAVE_EVERY) {
      unsaved.set(p.name, skipped);
      return;
    }
    // Reactions run before the checkpoint moves: a crash in between repeats them, never loses them.
    if (p.react) for (const e of mine) await p.react(e);
    await db.transaction(async (tx) => {
      // Read models need not wait for the disk: a crash loses the change and its checkpoint together,
      // and the events (which are durable) are applied again. Only the event store's commits must be.
      await tx.query('SET LOCAL synchronous_commit TO OFF');
      // Another instance of the service may run the same projection: the checkpoint row, locked for the
      // transaction, says what is already applied, so each event lands once whoever gets there first.
      await tx.query(
        `INSERT INTO projection_checkpoints (name, commit_position, prepare_position) VALUES ($1, -1, -1)
         ON CONFLICT (name) DO NOTHING`,
        [p.name],
      );
      const stored = (
        await tx.query<{ c: string; p: string }>(
          `SELECT commit_position::text AS c, prepare_position::text AS p FROM projection_checkpoints
           WHERE name = $1 FOR UPDATE`,
          [p.name],
        )
      ).rows[0]!;
      const done = { commit: BigInt(stored.c), prepare: BigInt(stored.p) };
      const last = events[events.length - 1]!.position;
      if (comparePositions(last, done) <= 0) return;
      if (p.apply) for (const e of mine) if (comparePositions(e.position, done) > 0) await p.apply(tx, e);
      await tx.query(
        `UPDATE projection_checkpoints SET commit_position = $2::numeric, prepare_position = $3::numeric,
           updated_at = now() WHERE name = $1`,
        [p.name, last.commit.toString(), last.prepare.toString()],
      );
    });
    unsaved.set(p.name, 0);
  };

  /** A failing batch is retried event by event, so a poison event is named and its predecessors land. */
  const handleBatch = async (p: Projection, events: RecordedEvent[]) => {
    const st = states.get(p.name)!;
    try {
      await applyBatch(p, events);
    } catch (batchErr) {
      log.warn('projection batch failed, applying its events one by one', {
        projection: p.name,
        error: batchErr instanceof Error ? batchErr.message : String(batchErr),
      });
      for (const e of events) {
        for (let attempt = 1; ; attempt++) {
          try {
            await applyBatch(p, [e]);
            break;
          } catch (err) {
            const transient = isTransient(err);
            if (!transient && attempt >= poisonAttempts) {
              st.failedEvent = {
                id: e.id,
                type: e.type,
                streamName: e.streamName,
                position: e.position.commit.toString(),
              };
              throw err;
            }
            if (stopping) throw err;
            st.state = 'retrying';
            st.error = err instanceof Error ? err.message : String(err);
            log.warn('projection retry', { projection: p.name, eventId: e.id, attempt, error: st.error });
            await sleep(Math.min(maxBackoffMs, baseBackoffMs * 2 ** (attempt - 1)));
          }
        }
        st.at = e.position;
      }
    }
    st.at = events[events.length - 1]!.position;
    st.state = 'running';
    delete st.error;
    notify();
  };

  const run = async (p: Projection) => {
    const st = states.get(p.name)!;
    const from = await loadCheckpoint(p.name);
    st.at = from === START ? null : from;
    st.state = 'running';
    notify();
    subscribeFrom(p, from, 1);
  };

  /**
   * A subscription that ends on a transient error (the database or event store went away for a moment) is
   * started again from the last position applied, with backoff; any other error stops the projection.
   */
  const subscribeFrom = (p: Projection, from: Position, attempt: number) => {
    const st = states.get(p.name)!;
    subs.set(
      p.name,
      store.subscribe({
        from,
        batchSize,
        handler: async (events) => {
          await handleBatch(p, events);
          attempt = 1;
        },
        onError: (err) => {
          if (stopping) return;
          st.error = err instanceof Error ? err.message : String(err);
          if (isTransient(err)) {
            st.state = 'retrying';
            log.warn('projection subscription lost; resubscribing', {
              projection: p.name,
              error: st.error,
              attempt,
            });
            // From the last event applied, never from where this subscription started: it may have
            // delivered (and we applied) events before it broke.
            setTimeout(
              () => {
                if (!stopping) subscribeFrom(p, st.at ?? START, attempt + 1);
              },
              Math.min(maxResubscribeBackoffMs, baseBackoffMs * 2 ** (attempt - 1)),
            );
            return;
          }
          st.state = 'failed';
          log.error('projection stopped on an event it cannot apply', {
            projection: p.name,
            error: st.error,
            failedEvent: st.failedEvent,
          });
          notify();
        },
      }),
    );
  };

  return {
    async start() {
      for (const p of projections)
        states.set(p.name, { name: p.name, state: 'starting', position: null, at: null });
      await Promise.all(projections.map(run));
    },
    async stop() {
      stopping = true;
      await Promise.all([...subs.values()].map((s) => s.stop()));
      for (const st of states.values()) if (st.state !== 'failed') st.state = 'stopped';
      notify();
    },
    status() {
      return [...states.values()].map(({ at, ...rest }) => ({ ...rest, position: at ? fmt(at) : null }));
    },
    waitFor(position, timeoutMs, names) {
      const targets = (names ?? projections.map((p) => p.name)).map((n) => states.get(n));
      const reached = () =>
        targets.every((st) => st && st.at !== null && comparePositions(st.at, position) >= 0);
      if (reached()) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const done = (ok: boolean) => {
          clearTimeout(timer);
          waiters.delete(check);
          resolve(ok);
        };
        const check = () => {
          if (reached()) done(true);
          else if (targets.some((st) => st?.state === 'failed')) done(false);
        };
        const timer = setTimeout(() => done(false), timeoutMs);
        waiters.add(check);
      });
    },
  };
}
