import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/database';
import {
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type Position,
  type RecordedEvent,
  type SubscribeOptions,
  type Subscription,
  START,
  WrongExpectedRevisionError,
} from './types';

/**
 * Event store on PostgreSQL (node-postgres or PGlite).
 *
 * The global-ordering gap: with concurrent transactions a bigserial can commit out of order, and a reader
 * that saw position 11 before 10 committed would skip 10 forever. Appends therefore take one
 * transaction-scoped advisory lock, so positions are handed out and committed in the same order; PostgreSQL
 * makes a commit visible before it releases the transaction's locks, so whoever sees N+1 also sees N.
 * The price is one append at a time per database, which a booking workload does not come near.
 */
const APPEND_LOCK = 7150002;
const CHANNEL = 'es_events';

export const eventStoreSchema = `
CREATE TABLE IF NOT EXISTS es_streams (
  stream_name text PRIMARY KEY,
  revision bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS es_events (
  position bigserial PRIMARY KEY,
  event_id uuid NOT NULL UNIQUE,
  stream_name text NOT NULL,
  revision bigint NOT NULL,
  type text NOT NULL,
  data jsonb NOT NULL,
  metadata jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (stream_name, revision)
);
CREATE INDEX IF NOT EXISTS es_events_correlation ON es_events ((metadata->>'correlationId'))`;

interface EventRow {
  position: string;
  event_id: string;
  stream_name: string;
  revision: string;
  type: string;
  data: unknown;
  metadata: Record<string, unknown>;
  created_at: Date | string;
}

const toRecorded = (r: EventRow): RecordedEvent => {
  const p = BigInt(r.position);
  return {
    id: r.event_id,
    type: r.type,
    streamName: r.stream_name,
    revision: BigInt(r.revision),
    position: { commit: p, prepare: p },
    data: r.data,
    metadata: r.metadata ?? {},
    createdAt: new Date(r.created_at),
  };
};

const COLUMNS = 'position, event_id, stream_name, revision, type, data, metadata, created_at';

/** Appends inside a caller's transaction; the adapter's append is this plus BEGIN/COMMIT. */
export async function appendInTransaction(
  tx: Queryable,
  streamName: string,
  events: NewEvent[],
  expected: ExpectedRevision = 'any',
): Promise<AppendResult> {
  if (events.length === 0) throw new Error('append needs at least one event');
  await tx.query('SELECT pg_advisory_xact_lock($1)', [APPEND_LOCK]);
  const current = await tx.query<{ revision: string }>(
    'SELECT revision FROM es_streams WHERE stream_name = $1',
    [streamName],
  );
  const actual: bigint | 'no_stream' = current.rows[0] ? BigInt(current.rows[0].revision) : 'no_stream';
  if (expected !== 'any' && expected !== actual)
    throw new WrongExpectedRevisionError(streamName, expected, actual);

  const first = actual === 'no_stream' ? 0n : actual + 1n;
  const params: unknown[] = [];
  const values = events.map((e, i) => {
    params.push(e.id ?? randomUUID(), streamName, String(first + BigInt(i)), e.type, JSON.stringify(e.data));
    params.push(JSON.stringify(e.metadata ?? {}));
    const b = i * 6;
    return `($${b + 1}::uuid, $${b + 2}, $${b + 3}::bigint, $${b + 4}, $${b + 5}::jsonb, $${b + 6}::jsonb)`;
  });
  const inserted = await tx.query<{ position: string }>(
    `INSERT INTO es_events (event_id, stream_name, revision, type, data, metadata) VALUES ${values.join(', ')}
     RETURNING position`,
    params,
  );
  const last = first + BigInt(events.length - 1);
  await tx.query(
    `INSERT INTO es_streams (stream_name, revision) VALUES ($1, $2::bigint)
     ON CONFLICT (stream_name) DO UPDATE SET revision = EXCLUDED.revision`,
    [streamName, String(last)],
  );
  const position = BigInt(inserted.rows[inserted.rows.length - 1]!.position);
  await tx.query('SELECT pg_notify($1, $2)', [CHANNEL, String(position)]);
  return { nextRevision: last, position: { commit: position, prepare: position } };
}

export async function createSqlEventStore(
  db: Database,
  opts: { ownsDb?: boolean } = {},
): Promise<EventStore> {
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(7150001)');
    for (const stmt of eventStoreSchema.split(';')) await tx.query(stmt);
  });

  // Wake-ups: appends from this process wake subscribers at once; LISTEN covers other processes.
  const wakers = new Set<() => void>();
  const wakeAll = () => [...wakers].forEach((w) => w());
  let unlisten: (() => Promise<void>) | undefined;
  let listening: Promise<void> | undefined;
  const ensureListening = () =>
    (listening ??= db.listen(CHANNEL, wakeAll).then((u) => {
      unlisten = u;
    }));

  const readAll = async (from: Position, limit = 500): Promise<RecordedEvent[]> => {
    const res = await db.query<EventRow>(
      `SELECT ${COLUMNS} FROM es_events WHERE position > $1::bigint ORDER BY position LIMIT $2`,
      [String(from.commit), limit],
    );
    return res.rows.map(toRecorded);
  };

  const subscribe = ({ from, handler, onError, batchSize = 200 }: SubscribeOptions): Subscription => {
    let stopped = false;
    let wake: (() => void) | undefined;
    const waker = () => wake?.();
    wakers.add(waker);
    const idle = () =>
      new Promise<void>((resolve) => {
        // The timer is a safety net only: notifications normally end the wait within milliseconds.
        const timer = setTimeout(resolve, 1000);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    const loop = (async () => {
      let position = from;
      try {
        await ensureListening();
        while (!stopped) {
          const pending = idle(); // armed before reading, so an append during the read is not missed
          const batch = await readAll(position, batchSize);
          if (stopped) break;
          if (batch.length === 0) {
            await pending;
            continue;
          }
          wake?.();
          await handler(batch);
          position = batch[batch.length - 1]!.position;
        }
      } catch (err) {
        stopped = true;
        onError?.(err);
      } finally {
        wakers.delete(waker);
      }
    })();
    return {
      async stop() {
        stopped = true;
        wake?.();
        await loop;
      },
    };
  };

  return {
    kind: db.kind === 'pglite' ? 'pglite' : 'postgres',
    async append(streamName, events, { expectedRevision = 'any' } = {}) {
      const result = await db.transaction((tx) =>
        appendInTransaction(tx, streamName, events, expectedRevision),
      );
      wakeAll();
      return result;
    },
    async readStream(streamName) {
      const res = await db.query<EventRow>(
        `SELECT ${COLUMNS} FROM es_events WHERE stream_name = $1 ORDER BY revision`,
        [streamName],
      );
      const events = res.rows.map(toRecorded);
      return { events, revision: events.length ? events[events.length - 1]!.revision : 'no_stream' };
    },
    readAll,
    subscribe,
    async headPosition() {
      const res = await db.query<{ p: string | null }>('SELECT max(position) AS p FROM es_events');
      const p = res.rows[0]?.p;
      return p == null ? START : { commit: BigInt(p), prepare: BigInt(p) };
    },
    async readEvent(eventId) {
      // event_id is a uuid column: a malformed id finds nothing rather than failing the cast.
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(eventId)) return null;
      const res = await db.query<EventRow>(`SELECT ${COLUMNS} FROM es_events WHERE event_id = $1`, [eventId]);
      return res.rows[0] ? toRecorded(res.rows[0]) : null;
    },
    async readCorrelated(correlationId) {
      const res = await db.query<EventRow>(
        `SELECT ${COLUMNS} FROM es_events WHERE metadata->>'correlationId' = $1 ORDER BY position`,
        [correlationId],
      );
      return res.rows.map(toRecorded);
    },
    async ping() {
      await db.query('SELECT 1');
    },
    async close() {
      await listening?.catch(() => undefined);
      await unlisten?.();
      if (opts.ownsDb) await db.close();
    },
  };
}
