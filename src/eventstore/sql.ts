import { randomUUID } from 'node:crypto';
import { coalesced } from '../db/coalesce';
import type { Database, Queryable } from '../db/database';
import {
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type Position,
  type RecordedEvent,
  type SubscribeOptions,
  type StreamAppend,
  type StreamCondition,
  type Subscription,
  isCondition,
  START,
  WrongExpectedRevisionError,
  EmptyAppendError,
  assertNotEmpty,
} from './types';

/**
 * Event store on PostgreSQL (node-postgres or PGlite).
 *
 * The global-ordering gap: with concurrent transactions a bigserial can commit out of order, and a reader
 * that saw position 11 before 10 committed would skip 10 forever. Appends therefore take one
 * transaction-scoped advisory lock, so positions are handed out and committed in the same order; PostgreSQL
 * makes a commit visible before it releases the transaction's locks, so whoever sees N+1 also sees N.
 *
 * That lock makes one append transaction at a time per database, each waiting for its own fsync. Group
 * commit wins the throughput back: a process sends its appends through one queue, and whatever queued up
 * while the previous batch was committing goes to the server as one call of `es_append_returning` (one statement, one
 * transaction, one fsync). Each append in the batch is still checked against its own expected revision
 * and fails alone; a group of appends to several streams (`appendMany`) lands or fails as a whole.
 */
const APPEND_LOCK = 7150002;
const CHANNEL = 'es_events';
/** Appends taken into one batch at most: bounds the statement's size and a batch's latency. */
const MAX_BATCH = 256;
/** How long a woken subscription waits for more appends before it reads the log (adds as much lag). */
const COALESCE_MS = 2;
/** Events of this process's latest batches kept for its subscribers (see `recent`). */
const RECENT_EVENTS = 2000;
/** Longest another process's NOTIFY waits for this process's batch at the server (see `notified`). */
const NOTIFY_WAIT_MS = 10;

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

/**
 * The append, server side. Input: an array of groups, each an array of appends
 * `{s: stream, e: 'any' | 'no_stream' | '<revision>', ev: [{id, type, data, metadata}]}`. A group whose every
 * append matches its expected revision is written; otherwise none of it is.
 *
 * Output, one or more rows per append (by `idx`, in input order): a written append gives one row per event it
 * wrote, as the log now holds it (what a read of the log would return, so this process can hand its own
 * events to its subscribers without reading them back); an append of a refused group gives one row saying
 * whether it matched and what the stream's revision was. `prev_head` (on every row) is the log's last
 * position before this batch: the lock is held, so every event after it up to this batch's last is this
 * batch's own.
 *
 * `es_append` (the same check, without the event rows), created by earlier releases, is left in place: a
 * process of the previous release still calls it during a rolling upgrade, and both take the same lock.
 */
export const appendFunction = `
CREATE OR REPLACE FUNCTION es_append_returning(batch jsonb)
RETURNS TABLE (idx int, ok boolean, actual bigint, prev_head bigint, "position" bigint, event_id uuid,
  revision bigint, type text, data jsonb, metadata jsonb, created_at timestamptz)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  grp jsonb;
  app jsonb;
  cur bigint;
  expected text;
  n int := 0;
  base int;
  matched boolean;
  checks boolean[];
  actuals bigint[];
  k int;
  prev bigint;
  wrote boolean := false;
BEGIN
  PERFORM pg_advisory_xact_lock(${APPEND_LOCK});
  SELECT COALESCE(max(e.position), -1) INTO prev FROM es_events e;
  -- Only a READ COMMITTED statement sees what committed while it waited for the lock.
  IF current_setting('transaction_isolation') <> 'read committed' THEN prev := NULL; END IF;
  FOR grp IN SELECT value FROM jsonb_array_elements(batch) LOOP
    base := n;
    matched := true;
    checks := '{}';
    actuals := '{}';
    FOR app IN SELECT value FROM jsonb_array_elements(grp) LOOP
      SELECT s.revision INTO cur FROM es_streams s WHERE s.stream_name = app->>'s';
      IF NOT FOUND THEN cur := NULL; END IF;
      expected := app->>'e';
      checks := checks || (expected = 'any' OR (expected = 'no_stream' AND cur IS NULL)
        OR (expected NOT IN ('any', 'no_stream') AND cur IS NOT NULL AND cur = expected::bigint));
      actuals := actuals || cur;
      matched := matched AND checks[array_length(checks, 1)];
      n := n + 1;
    END LOOP;
    k := 0;
    FOR app IN SELECT value FROM jsonb_array_elements(grp) LOOP
      k := k + 1;
      -- A refused group's appends, and a written group's conditions (StreamCondition: no events), write
      -- nothing: one row says whether the append matched and what the stream's revision was.
      IF NOT matched OR jsonb_array_length(app->'ev') = 0 THEN
        RETURN QUERY SELECT base + k - 1, checks[k], actuals[k], prev, NULL::bigint, NULL::uuid, NULL::bigint,
          NULL::text, NULL::jsonb, NULL::jsonb, NULL::timestamptz;
        CONTINUE;
      END IF;
      cur := COALESCE(actuals[k], -1);
      RETURN QUERY WITH ins AS (
        INSERT INTO es_events (event_id, stream_name, revision, type, data, metadata)
        SELECT (x.value->>'id')::uuid, app->>'s', cur + x.ord, x.value->>'type', x.value->'data', x.value->'metadata'
        FROM jsonb_array_elements(app->'ev') WITH ORDINALITY AS x(value, ord)
        ORDER BY x.ord
        RETURNING es_events.position, es_events.event_id, es_events.revision, es_events.type, es_events.data,
          es_events.metadata, es_events.created_at
      )
      SELECT base + k - 1, true, actuals[k], prev, ins.position, ins.event_id, ins.revision, ins.type, ins.data,
        ins.metadata, ins.created_at FROM ins;
      INSERT INTO es_streams (stream_name, revision)
        VALUES (app->>'s', cur + jsonb_array_length(app->'ev'))
        ON CONFLICT (stream_name) DO UPDATE SET revision = EXCLUDED.revision;
      wrote := true;
    END LOOP;
  END LOOP;
  IF wrote THEN PERFORM pg_notify('${CHANNEL}', (SELECT max(e.position) FROM es_events e)::text); END IF;
END
$fn$`;

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

interface AppendRow {
  idx: number;
  ok: boolean;
  actual: string | null;
  prev_head: string;
  position: string | null;
  event_id: string | null;
  revision: string | null;
  type: string | null;
  data: unknown;
  metadata: Record<string, unknown> | null;
  created_at: Date | string | null;
}

/** The JSON form of one append, as es_append_returning reads it. */
const appendJson = (a: StreamAppend | StreamCondition) => {
  const e = a.expectedRevision ?? 'any';
  return {
    s: a.streamName,
    e: typeof e === 'bigint' ? e.toString() : e,
    ev: (isCondition(a) ? [] : a.events).map((x) => ({
      id: x.id ?? randomUUID(),
      type: x.type,
      data: x.data,
      metadata: x.metadata ?? {},
    })),
  };
};

/**
 * What one batch wrote: the log's head before it, and the batch's events as the log holds them, in order.
 * With the append lock held for the batch, nothing else lies between `after` and the last of `events`.
 */
export interface WrittenSegment {
  after: bigint;
  events: RecordedEvent[];
}

/** Appends that land together or not at all (one `append`, or one `appendMany`). */
type Group = (StreamAppend | StreamCondition)[];

/** Runs es_append_returning on a batch of groups: per group, its results or the mismatch that refused it. */
async function runBatch(
  q: Queryable,
  groups: Group[],
): Promise<{ results: (AppendResult[] | WrongExpectedRevisionError)[]; written: WrittenSegment | null }> {
  const json = JSON.stringify(groups.map((g) => g.map(appendJson)));
  const res = await q.query<AppendRow>(
    'SELECT * FROM es_append_returning($1::jsonb) ORDER BY idx, position',
    [json],
    { name: 'es_append_returning' },
  );
  // Rows by append (an append that wrote n events has n rows).
  const byAppend: AppendRow[][] = [];
  for (const row of res.rows) (byAppend[row.idx] ??= []).push(row);
  const events: RecordedEvent[] = [];
  let i = 0;
  const results = groups.map((g) => {
    const rows = g.map((_, k) => byAppend[i + k] ?? []);
    i += g.length;
    const refused = rows.findIndex((r) => r[0]?.position === null && !r[0].ok);
    if (refused >= 0) {
      const a = g[refused]!;
      const actual = rows[refused]![0]!.actual;
      return new WrongExpectedRevisionError(
        a.streamName,
        a.expectedRevision ?? 'any',
        actual === null ? 'no_stream' : BigInt(actual),
      );
    }
    let groupLast: bigint | undefined;
    const each = rows.map((r, k) => {
      const last = r[r.length - 1]!;
      if (last.position === null) return { nextRevision: BigInt(last.actual ?? -1), position: null };
      for (const row of r)
        events.push(toRecorded({ ...(row as unknown as EventRow), stream_name: g[k]!.streamName }));
      groupLast = BigInt(last.position);
      return { nextRevision: BigInt(last.revision!), position: { commit: groupLast, prepare: groupLast } };
    });
    // A condition's position is its group's last.
    return each.map((r) => ({
      ...r,
      position: r.position ?? { commit: groupLast!, prepare: groupLast! },
    }));
  });
  events.sort((a, b) => (a.position.commit < b.position.commit ? -1 : 1));
  const head = res.rows[0]?.prev_head;
  return { results, written: events.length && head != null ? { after: BigInt(head), events } : null };
}

/** Appends inside a caller's transaction (one es_append_returning call); the store's own appends are batched. */
export async function appendInTransaction(
  tx: Queryable,
  streamName: string,
  events: NewEvent[],
  expected: ExpectedRevision = 'any',
): Promise<AppendResult> {
  assertNotEmpty(streamName, events);
  const [result] = (await runBatch(tx, [[{ streamName, events, expectedRevision: expected }]])).results;
  if (result instanceof Error) throw result;
  return result![0]!;
}

/**
 * SQLSTATE classes of a statement the server refused, its transaction rolled back: bad data (22), a
 * constraint such as a duplicate event id (23), a conflict (40), a bad statement (42), a limit (54), the
 * append function's own raise (P0). After anything else (a lost connection, a backend terminated around its
 * commit) the batch may or may not be in the log.
 */
const REFUSED_CLASSES = new Set(['22', '23', '40', '42', '54', 'P0']);
const refusedByServer = (err: unknown) => {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && code.length === 5 && REFUSED_CLASSES.has(code.slice(0, 2));
};

interface Found {
  stream: string;
  type: string;
  position: bigint;
  revision: bigint;
}

/** The events of these ids that the log holds, by id. */
async function lookUp(q: Queryable, ids: string[]): Promise<Map<string, Found>> {
  const res = await q.query<{
    event_id: string;
    stream_name: string;
    type: string;
    position: string;
    revision: string;
  }>(
    'SELECT event_id, stream_name, type, position, revision FROM es_events WHERE event_id = ANY($1::uuid[])',
    [ids],
  );
  return new Map(
    res.rows.map((r) => [
      r.event_id,
      { stream: r.stream_name, type: r.type, position: BigInt(r.position), revision: BigInt(r.revision) },
    ]),
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The groups' event ids that can be in the log (an id that is no uuid fails its batch's statement). */
const idsOf = (groups: Group[]) =>
  groups
    .flatMap((g) => g.flatMap((a) => (isCondition(a) ? [] : a.events.map((e) => e.id!))))
    .filter((id) => UUID.test(id));

/**
 * A group's results if the log holds every one of its events (ids, streams and types alike): an earlier
 * attempt wrote it and its answer was lost. Null otherwise (a group is written whole or not at all).
 */
function resultsIfWritten(group: Group, found: Map<string, Found>): AppendResult[] | null {
  let groupLast: bigint | undefined;
  const each: { nextRevision: bigint; last?: bigint }[] = [];
  for (const a of group) {
    if (isCondition(a)) {
      each.push({ nextRevision: a.expectedRevision === 'no_stream' ? -1n : a.expectedRevision });
      continue;
    }
    let revision: bigint | undefined;
    let last: bigint | undefined;
    for (const e of a.events) {
      const f = found.get(e.id!);
      if (!f || f.stream !== a.streamName || f.type !== e.type) return null;
      if (revision === undefined || f.revision > revision) revision = f.revision;
      if (last === undefined || f.position > last) last = f.position;
    }
    if (groupLast === undefined || last! > groupLast) groupLast = last;
    each.push({ nextRevision: revision!, last });
  }
  // As the statement answers: each append its own last event's position, a condition its group's last.
  return each.map(({ nextRevision, last }) => {
    const p = last ?? groupLast!;
    return { nextRevision, position: { commit: p, prepare: p } };
  });
}

/** An id as PostgreSQL prints a uuid (lower case, hyphens), so the log's answer can be matched to it. */
const canonicalId = (id: string) => {
  const hex = id
    .replace(/^\{(.*)\}$/, '$1')
    .replace(/-/g, '')
    .toLowerCase();
  return /^[0-9a-f]{32}$/.test(hex)
    ? `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
    : id;
};

/**
 * Group commit: appends queue up while a batch is at the server; the next batch takes all of them. One
 * batch at a time per process, since the append lock would serialise them at the server anyway.
 */
function createAppender(db: Database, onWritten: (written: WrittenSegment[]) => void) {
  interface Pending {
    group: Group;
    resolve: (r: AppendResult[]) => void;
    reject: (err: unknown) => void;
    /** Sent again after a batch whose outcome was unknown: a refusal now may be its own earlier write. */
    resent?: boolean;
  }
  let queue: Pending[] = [];
  let running = false;
  /** Set while a batch is at the server; called once it is answered (and its events handed out). */
  let inFlight: (() => void)[] | null = null;

  /** Rejects with `err`, unless `p` was sent again and the log holds it already (written, answer lost). */
  const refuse = async (p: Pending, err: unknown) => {
    if (p.resent) {
      const found = await lookUp(db, idsOf([p.group])).catch(() => null);
      const written = found && resultsIfWritten(p.group, found);
      if (written) return p.resolve(written);
    }
    p.reject(err);
  };

  const settle = async (batch: Pending[], results: (AppendResult[] | WrongExpectedRevisionError)[]) => {
    for (const [i, p] of batch.entries()) {
      const r = results[i]!;
      if (r instanceof Error) await refuse(p, r);
      else p.resolve(r);
    }
  };

  /**
   * The batch's statement failed without the server refusing it (the connection was lost, say): it may
   * have committed. What the log holds is answered as written; the rest is sent once more, alone, with the
   * same event ids, so nothing lands twice (a second copy would break the ids' uniqueness, and a refusal of
   * the resend is checked against the log). When the log cannot be asked (about 3 s), the error stands.
   */
  const resolveUnknown = async (batch: Pending[], err: unknown) => {
    let found: Map<string, Found> | null = null;
    for (let pause = 100; !found; pause *= 2) {
      found = await lookUp(db, idsOf(batch.map((p) => p.group))).catch(() => null);
      if (!found && pause > 1600) return batch.forEach((p) => p.reject(err));
      if (!found) await new Promise((r) => setTimeout(r, pause));
    }
    for (const p of batch) {
      const written = resultsIfWritten(p.group, found);
      if (written) {
        p.resolve(written);
        continue;
      }
      if (p.resent) {
        p.reject(err);
        continue;
      }
      p.resent = true;
      // Refused, or its answer lost again: either way the log says whether it is there.
      await run([p]).catch((e: unknown) => refuse(p, e));
    }
  };

  /** What the batch under way wrote, for the subscribers. */
  let written: WrittenSegment[] = [];
  const run = async (pending: Pending[]) => {
    const r = await runBatch(
      db,
      pending.map((p) => p.group),
    );
    if (r.written) written.push(r.written);
    await settle(pending, r.results);
  };

  const drain = async () => {
    while (queue.length > 0) {
      const batch = queue.slice(0, MAX_BATCH);
      queue = queue.slice(batch.length);
      written = [];
      const afterBatch: (() => void)[] = (inFlight = []);
      try {
        await run(batch);
      } catch (err) {
        try {
          // One bad append (a duplicate event id, an unstorable value) fails the whole statement: alone,
          // each append meets its own fate, so the others still land.
          if (!refusedByServer(err)) await resolveUnknown(batch, err);
          else if (batch.length === 1) await refuse(batch[0]!, err);
          else
            for (const p of batch)
              await run([p]).catch((e: unknown) =>
                refusedByServer(e) ? refuse(p, e) : resolveUnknown([p], e),
              );
        } catch (unexpected) {
          // Never leave a caller waiting, nor the queue stopped (a promise already settled ignores this).
          batch.forEach((p) => p.reject(unexpected));
        }
      }
      inFlight = null;
      onWritten(written);
      afterBatch.forEach((f) => f());
      // Let the callers just answered run first: many append again at once, and should share a batch.
      await new Promise((r) => setImmediate(r));
    }
    running = false;
  };

  /**
   * Runs `f` once the batch at the server (if one is) is answered, at once when none is, and after
   * `maxWaitMs` at the latest: a batch can wait long for the append lock behind other processes.
   */
  const afterBatch = (f: () => void, maxWaitMs: number) => {
    if (!inFlight) return f();
    let done = false;
    const once = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      f();
    };
    const timer = setTimeout(once, maxWaitMs);
    inFlight.push(once);
  };

  const append = (group: Group): Promise<AppendResult[]> => {
    const empty = group.find((a) => !isCondition(a) && a.events.length === 0);
    if (empty) return Promise.reject(new EmptyAppendError(empty.streamName));
    if (group.every(isCondition)) return Promise.reject(new EmptyAppendError(group[0]?.streamName ?? ''));
    if (new Set(group.map((a) => a.streamName)).size !== group.length)
      return Promise.reject(new Error('appendMany takes each stream at most once'));
    // Ids given once, here: an append sent again after a lost answer must carry the same ones.
    const withIds = group.map((a) =>
      isCondition(a)
        ? a
        : { ...a, events: a.events.map((e) => ({ ...e, id: e.id ? canonicalId(e.id) : randomUUID() })) },
    );
    return new Promise<AppendResult[]>((resolve, reject) => {
      queue.push({ group: withIds, resolve, reject });
      if (!running) {
        running = true;
        // Started on the next turn, so appends made in the same turn of the event loop share the batch.
        setImmediate(() => void drain());
      }
    });
  };
  return { append, afterBatch };
}

export async function createSqlEventStore(
  db: Database,
  opts: { ownsDb?: boolean } = {},
): Promise<EventStore> {
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(7150001)');
    for (const stmt of eventStoreSchema.split(';')) await tx.query(stmt);
    await tx.query(appendFunction);
  });

  // Wake-ups: appends from this process wake subscribers at once; LISTEN covers other processes.
  const wakers = new Set<() => void>();
  /** Counts wake-ups: a log read made since the last one is still as fresh as a new one would be. */
  let generation = 0;
  /** Log reads of subscribers since the last wake-up, by (from, limit); see readShared. */
  const sharedReads = new Map<string, Promise<RecordedEvent[]>>();
  const wakeAll = () => {
    generation++;
    sharedReads.clear();
    [...wakers].forEach((w) => w());
  };

  /**
   * This process's own latest batches as written (see es_append_returning): a subscriber whose position lies
   * in one takes the events after it from here, without reading the log, and follows on into the next
   * batch if that one starts where this one ended (nothing of another process in between). Bounded: a
   * subscriber further behind reads the log.
   */
  const recent: WrittenSegment[] = [];
  let recentEvents = 0;
  /**
   * The highest position known committed (own batches, NOTIFY payloads). Raised only just before a wake-up,
   * so everything up to it was committed when the subscribers were last woken; memory ending below it is
   * not all there is.
   */
  let knownHead = START.commit;
  const written = (segments: WrittenSegment[]) => {
    if (wakers.size > 0)
      for (const w of segments) {
        recent.push(w);
        recentEvents += w.events.length;
      }
    while (recentEvents > RECENT_EVENTS && recent.length > 1) recentEvents -= recent.shift()!.events.length;
    const last = segments[segments.length - 1]?.events.at(-1)?.position.commit;
    if (last !== undefined && last > knownHead) knownHead = last;
    wakeAll();
  };
  /** The log after `from` as this process wrote it, if it holds it (null: read the log). */
  const fromRecent = (from: bigint, limit: number): RecordedEvent[] | null => {
    let i = recent.length - 1;
    while (i >= 0 && !(recent[i]!.after <= from && from < recent[i]!.events.at(-1)!.position.commit)) i--;
    if (i < 0) return null;
    const out = recent[i]!.events.filter((e) => e.position.commit > from);
    for (let j = i + 1; j < recent.length && out.length < limit; j++) {
      if (recent[j]!.after !== out[out.length - 1]!.position.commit) break;
      out.push(...recent[j]!.events);
    }
    return out.slice(0, limit);
  };
  // A batch's NOTIFY also comes back to the process that wrote it, often before the batch's own answer. So a
  // NOTIFY that comes while a batch is at the server waits for its answer; one at or below the known head
  // wakes nobody, since subscribers were woken to read past it already (one read of the log per batch
  // saved). Another process's NOTIFY waits for that answer, but never more than NOTIFY_WAIT_MS: a batch
  // queued for the append lock behind other processes' transactions must not hold their events back (taken
  // in early, our own NOTIFY costs one read of the log, nothing more).
  const notified = (payload: string) => {
    const at = /^[0-9]+$/.test(payload) ? BigInt(payload) : null;
    if (at === null) {
      // The LISTEN connection was replaced: notifications sent meanwhile are lost, so the head is unknown.
      recent.length = 0;
      recentEvents = 0;
    }
    // Taken in only once the batch at the server (if one is) is answered: the NOTIFY of this process's own
    // batch often comes first, and a head above what memory holds would send subscribers to read the log.
    appender.afterBatch(() => {
      if (at !== null && at <= knownHead) return;
      if (at !== null) knownHead = at;
      wakeAll();
    }, NOTIFY_WAIT_MS);
  };
  let unlisten: (() => Promise<void>) | undefined;
  let listening: Promise<void> | undefined;
  const ensureListening = () =>
    (listening ??= db.listen(CHANNEL, notified).then((u) => {
      unlisten = u;
    }));

  const appender = createAppender(db, written);
  const appendGroup = appender.append;

  /**
   * Stream reads made in the same turn (concurrent commands, process managers' recipients) go as one
   * statement (src/db/coalesce.ts): each stream's events from its revision, told apart by their key's index.
   */
  const readStreamCoalesced = coalesced<{ streamName: string; from: string }, RecordedEvent[]>(
    async (keys) => {
      if (keys.length === 1) {
        const res = await db.query<EventRow>(
          `SELECT ${COLUMNS} FROM es_events WHERE stream_name = $1 AND revision >= $2::bigint ORDER BY revision`,
          [keys[0]!.streamName, keys[0]!.from],
          { name: 'es_read_stream' },
        );
        return [res.rows.map(toRecorded)];
      }
      const res = await db.query<EventRow & { k: number }>(
        `SELECT r.k, e.* FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS r(s, f, k)
         CROSS JOIN LATERAL (SELECT ${COLUMNS} FROM es_events
           WHERE stream_name = r.s AND revision >= r.f ORDER BY revision) e
         ORDER BY r.k, e.revision`,
        [keys.map((k) => k.streamName), keys.map((k) => k.from)],
        { name: 'es_read_streams' },
      );
      const out: RecordedEvent[][] = keys.map(() => []);
      for (const row of res.rows) out[Number(row.k) - 1]!.push(toRecorded(row));
      return out;
    },
    (k) => `${k.from}:${k.streamName}`,
  );

  const readAll = async (from: Position, limit = 500): Promise<RecordedEvent[]> => {
    const res = await db.query<EventRow>(
      `SELECT ${COLUMNS} FROM es_events WHERE position > $1::bigint ORDER BY position LIMIT $2`,
      [String(from.commit), limit],
      { name: 'es_read_all' },
    );
    return res.rows.map(toRecorded);
  };

  /**
   * Reads for subscribers, shared: an append wakes every subscription of the process, and those at the
   * same position would each send the same query and parse the same rows. Whoever asks for (from, limit)
   * before the next wake-up gets the read already made. Safe because every subscriber arms its wake-up
   * before it reads: an event committed after the shared read started wakes it again.
   */
  const readShared = (from: Position, limit: number, fresh = false): Promise<RecordedEvent[]> => {
    // Only all there is (as far as this process knows) or a full batch: a subscriber handed less than the
    // log holds would wait for a wake-up that was spent while it was busy (up to the 1 s timer).
    const mine = fromRecent(from.commit, limit);
    if (mine && (mine.length >= limit || mine[mine.length - 1]!.position.commit >= knownHead))
      return Promise.resolve(mine);
    const key = `${from.commit}:${limit}`;
    let read = fresh ? undefined : sharedReads.get(key);
    if (!read) {
      read = readAll(from, limit);
      sharedReads.set(key, read);
      const gen = generation;
      read.catch(() => {
        if (gen === generation) sharedReads.delete(key); // a failed read is not shared with later callers
      });
    }
    return read.then((events) => events.slice());
  };

  const subscribe = ({ from, handler, onError, batchSize = 200 }: SubscribeOptions): Subscription => {
    let stopped = false;
    let wake: (() => void) | undefined;
    let timedOut = false;
    const waker = () => wake?.();
    wakers.add(waker);
    const idle = () =>
      new Promise<void>((resolve) => {
        // The timer is a safety net only: notifications normally end the wait within milliseconds.
        const timer = setTimeout(() => {
          timedOut = true;
          resolve();
        }, 1000);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    const loop = (async () => {
      let position = from;
      let lastRead: number;
      try {
        await ensureListening();
        while (!stopped) {
          const pending = idle(); // armed before reading, so an append during the read is not missed
          lastRead = performance.now();
          const fresh = timedOut;
          timedOut = false;
          const batch = await readShared(position, batchSize, fresh);
          if (stopped) break;
          if (batch.length > 0) {
            await handler(batch);
            position = batch[batch.length - 1]!.position;
            if (batch.length >= batchSize) {
              wake?.(); // more may be waiting: read on at once
              continue;
            }
          }
          // Everything committed before the read began is handed out; an append since has woken `pending`
          // (no read just to find nothing new). Appends come in bursts (a booking, then its notices and
          // e-mails): a moment's pause lets one read take them together instead of one read per append.
          await pending;
          // Only while appends come fast (the last read is recent): a quiet log is read at once.
          if (!stopped && performance.now() - lastRead < COALESCE_MS * 2)
            await new Promise((r) => setTimeout(r, COALESCE_MS));
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
      return (await appendGroup([{ streamName, events, expectedRevision }]))[0]!;
    },
    appendMany: appendGroup,
    async readStream(streamName, opts) {
      const events = await readStreamCoalesced({ streamName, from: String(opts?.fromRevision ?? 0n) });
      return {
        events: events.slice(),
        revision: events.length ? events[events.length - 1]!.revision : 'no_stream',
      };
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
