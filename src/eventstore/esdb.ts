import { randomUUID } from 'node:crypto';
import {
  ANY,
  BACKWARDS,
  END,
  EventStoreDBClient,
  FORWARDS,
  NO_STREAM,
  START as ESDB_START,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
  type AllStreamResolvedEvent,
  type ResolvedEvent,
} from '@eventstore/db-client';
import { parseConnectionString } from '@eventstore/db-client/dist/Client/parseConnectionString';
import {
  type EventStore,
  type ExpectedRevision,
  type Position,
  type RecordedEvent,
  START,
  EventStoreUnavailableError,
  WrongExpectedRevisionError,
  assertNotEmpty,
  comparePositions,
} from './types';
import { scanLog } from './scan';
import { appendOnCall } from './esdbAppend';

/** A subscription the server ended without being asked; subscribing again from the last position is the cure. */
export class SubscriptionEndedError extends Error {
  readonly transient = true;
  constructor() {
    super('the EventStoreDB server ended the subscription');
    this.name = 'SubscriptionEndedError';
  }
}

/** The client's error types that say "the cluster did not answer", not "the request is wrong". */
const UNAVAILABLE_TYPES = ['unavailable', 'deadline-exceeded', 'not-leader', 'cancelled', 'timeout'];
/** GRPC status codes the client sometimes hands over raw (a failed connect before any command runs). */
const RAW_GRPC: Record<number, string> = { 1: 'cancelled', 4: 'deadline-exceeded', 14: 'unavailable' };
/**
 * A node that is up but not ready (opening its database, electing a leader) or overloaded answers an append
 * sent through BatchAppend with a bare status: no code, `google.protobuf.Empty` details, and one of these
 * messages (EventStoreDB 23.10/24.10, `Streams.BatchAppend.cs`). The client cannot place it and hands over
 * an UnknownError "Could not recognize <message>"; reads and Streams.Append (which appends here go through)
 * get UNAVAILABLE for the same. Still read as "unavailable" should the message reach a call another way.
 */
const NOT_READY = /\b(Server Is Not Ready|Server Is (Too )?Busy|No leader info available)\b/;
/**
 * A call whose HTTP/2 stream or connection went away under it: @grpc/grpc-js reports it as INTERNAL, not
 * UNAVAILABLE, when the stream ends without a gRPC status (a server or proxy closing the connection with a
 * GOAWAY error code: "Received RST_STREAM with code 0 (Call ended without gRPC status)"), is reset
 * ("Received RST_STREAM with code 2 ..."), cannot be started on a closing session ("Failed to start HTTP/2
 * stream") or written to ("Write error"); other gRPC stacks say "Stream removed" or "Session closed"; a
 * server that resets streams to shed load (ENHANCE_YOUR_CALM) gives RESOURCE_EXHAUSTED "Bandwidth
 * exhausted". The client hands these over as UnknownError; they are a lost connection, not a bad request.
 */
const CONNECTION_LOST =
  /\b(RST_STREAM|Call ended without gRPC status|Failed to start HTTP\/2 stream|Write error|Stream removed|Session closed|Bandwidth exhausted)\b/;
/**
 * @grpc/grpc-js's plain Error (no code) for a call started on a channel already closed: the client closes a
 * channel it reconnects from (a node restarting) while other calls are about to start on it. Nothing was
 * sent; the call can be made again (see `afterClosedChannel`). A node away, not a bad request: it was a 500.
 */
const CHANNEL_CLOSED = /\bChannel has been shut down\b/;
const isChannelClosed = (err: unknown) => {
  const e = err as { type?: unknown; code?: unknown; message?: unknown };
  return (
    e?.type === undefined &&
    e?.code === undefined &&
    typeof e?.message === 'string' &&
    CHANNEL_CLOSED.test(e.message)
  );
};
/** @grpc/grpc-js `ConnectivityState.SHUTDOWN`: a channel closed for good. */
const CHANNEL_SHUTDOWN = 4;
/** The client's own channel getter (protected in its types). */
type ChannelOf = { getChannel(): Promise<{ getConnectivityState(tryToConnect: boolean): number }> };
const INTERNAL = 13;
const RESOURCE_EXHAUSTED = 8;
/** What kind of failure: the client's `type`, or the kind a raw gRPC error's status code stands for. */
const typeOf = (err: unknown): string | undefined => {
  const e = err as { type?: unknown; code?: unknown; details?: unknown; message?: unknown };
  if (e?.type === 'unknown' && typeof e.message === 'string' && NOT_READY.test(e.message))
    return 'unavailable';
  if (isChannelClosed(err)) return 'unavailable';
  if (
    (e?.code === INTERNAL || e?.code === RESOURCE_EXHAUSTED) &&
    (e.type === undefined || e.type === 'unknown') &&
    CONNECTION_LOST.test(`${String(e.details ?? '')} ${String(e.message ?? '')}`)
  )
    return 'unavailable';
  if (typeof e?.type === 'string') return e.type;
  if (typeof e?.code === 'number' && typeof e.details === 'string') return RAW_GRPC[e.code];
  return undefined;
};
/** The port's error for "the cluster did not answer"; anything else as it came. */
const toPortError = (err: unknown) => {
  const type = typeOf(err);
  return type && UNAVAILABLE_TYPES.includes(type) ? new EventStoreUnavailableError(err) : err;
};

/**
 * Waits before each new attempt of a call that met a node down or restarting: the client only reconnects
 * on the call after a failed one. A write cut off mid-way is safe to repeat: it keeps its event ids and
 * expected revision, and the server answers a write it already has as done. Deadlines are not retried (the
 * caller has waited long enough already).
 */
const RETRIED_TYPES = ['unavailable', 'not-leader', 'cancelled'];
const RETRY_DELAYS_MS = [50, 200, 500, 1000];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long a health probe waits for the node (a read of one event). */
const PING_DEADLINE_MS = 2000;

/** A read the node did not finish within its deadline (the client's own reads have none). */
export class ReadDeadlineError extends Error {
  readonly type = 'deadline-exceeded';
  constructor(ms: number) {
    super(`the EventStoreDB node did not answer a read within ${ms} ms`);
    this.name = 'ReadDeadlineError';
  }
}

const UNIMPLEMENTED = 12;
/**
 * An Append call whose answer did not come, so whether the node wrote the events is not known: the call's
 * deadline passed (DEADLINE_EXCEEDED; a stalled node, a half-open connection), or the call was ended with
 * status OK and no answer (a proxy, a node shutting down: @grpc/grpc-js reports UNIMPLEMENTED "No message
 * received"). A call cut off with the connection (UNAVAILABLE, CANCELLED, RST_STREAM) is sent again as it is.
 */
const isUnanswered = (err: unknown) => {
  const e = err as { type?: unknown; code?: unknown; details?: unknown; message?: unknown };
  if (typeOf(err) === 'deadline-exceeded') return true;
  return (
    e?.code === UNIMPLEMENTED &&
    /\bNo message received\b/.test(`${String(e.details ?? '')} ${String(e.message ?? '')}`)
  );
};
/** Events read back from a stream's end to find an unanswered append's events. */
const LOOK_UP_EVENTS = 200;

/** Events read backwards per page while looking for the last non-system event. */
const HEAD_PAGE = 50;

export interface EsdbEventStoreOptions {
  /** Called with each client the store creates (tests reach the gRPC channel under it this way). */
  onClient?: (client: EventStoreDBClient) => void;
}

/** Event store on EventStoreDB: `$all` without system events; positions are its own {commit, prepare}. */
export function createEsdbEventStore(
  connectionString: string,
  options: EsdbEventStoreOptions = {},
): EventStore {
  const connect = () => {
    const c = EventStoreDBClient.connectionString(connectionString);
    options.onClient?.(c);
    return c;
  };
  let client = connect();
  let closed = false;
  /**
   * Puts a new client in place of `failed` when it is still the one in use and is broken for good: it would
   * hand out a closed gRPC channel again. Calls that failed together renew once. The old client is left
   * alone to finish what runs on it (a subscription until its runner stops it). An append that got no answer
   * needs none: each goes on its own Append call (see `appendOnCall`), none is kept for the next.
   */
  const renew = (failed: EventStoreDBClient) => {
    if (failed !== client || closed) return;
    client = connect();
  };
  /**
   * After a call met a closed channel: the client closes a channel it reconnects from and drops it in the
   * same step, so a call that had already picked it fails once and the next gets a new one. A client whose
   * channel in use is closed (nothing else closes it, but nothing would reopen it either) is replaced.
   */
  const afterClosedChannel = async (c: EventStoreDBClient) => {
    const channel = await (c as unknown as ChannelOf).getChannel().catch(() => null);
    if (channel?.getConnectivityState(false) === CHANNEL_SHUTDOWN) renew(c);
  };

  // The client gives appends its `defaultDeadline` (10 s unless the connection string says) but reads none
  // (a `deadline` option is ignored for them): a stalled node held a read, and the request, for as long as
  // it stalled. Reads here get the same deadline as appends.
  // Read as the client reads it (`default_deadline`, `DefaultDeadline`, ... are the same option).
  const readDeadlineMs = parseConnectionString(connectionString).defaultDeadline || 10_000;

  const toRecorded = (resolved: ResolvedEvent | AllStreamResolvedEvent): RecordedEvent | null => {
    const e = resolved.event;
    if (!e || !e.isJson || e.type.startsWith('$') || e.streamId.startsWith('$')) return null;
    const pos = e.position ?? { commit: -1n, prepare: -1n };
    return {
      id: e.id,
      type: e.type,
      streamName: e.streamId,
      revision: e.revision,
      position: { commit: pos.commit, prepare: pos.prepare },
      data: e.data,
      metadata: (e.metadata ?? {}) as RecordedEvent['metadata'],
      createdAt: e.created,
    };
  };

  /**
   * Runs a call on the client in use, again after a short wait while the node is unreachable (on a new client
   * when the call met a closed channel); what still fails is typed.
   */
  const retrying = async <T>(op: (c: EventStoreDBClient) => Promise<T>): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      const c = client;
      try {
        return await op(c);
      } catch (err) {
        if (isChannelClosed(err)) await afterClosedChannel(c);
        const type = typeOf(err);
        if (type && RETRIED_TYPES.includes(type) && attempt < RETRY_DELAYS_MS.length) {
          await sleep(RETRY_DELAYS_MS[attempt]!);
          continue;
        }
        throw toPortError(err);
      }
    }
  };

  const esdbExpected = (x: ExpectedRevision) => (x === 'any' ? ANY : x === 'no_stream' ? NO_STREAM : x);
  const fromPosition = (p: Position) => (comparePositions(p, START) <= 0 ? ESDB_START : p);

  /**
   * Reads one finite read to its end, handing events to `each` until it returns false. Leaving a
   * `for await` early destroys the client's stream object but not the gRPC call under it, which the client
   * keeps among the calls `dispose()` waits for, forever (each /healthz probe leaked one, and shutdown
   * hung). Cancelling the call instead is racy: a call whose answer has already arrived is never finished
   * then either. So every read here is bounded (`maxCount`) and drained; what is not wanted is skipped.
   * Past `deadlineMs` the read is cancelled and still drained (it then ends, cancelled or read to its end
   * when its answer had already come), and fails with ReadDeadlineError.
   */
  const consume = async <E>(
    read: AsyncIterable<E> & { cancel(): Promise<void> },
    each: (resolved: E) => boolean,
    deadlineMs = readDeadlineMs,
  ): Promise<void> => {
    let wanted = true;
    let drained = false;
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      void read.cancel().catch(() => undefined);
    }, deadlineMs);
    try {
      for await (const resolved of read) if (wanted && !late) wanted = each(resolved);
      drained = true;
    } finally {
      clearTimeout(timer);
      // Only when `each` threw: the read is abandoned, and cancelling is the best left to do.
      if (!drained) await read.cancel().catch(() => undefined);
    }
    if (late) throw new ReadDeadlineError(deadlineMs);
  };

  const readAll = async (c: EventStoreDBClient, from: Position, limit = 500): Promise<RecordedEvent[]> => {
    const out: RecordedEvent[] = [];
    // readAll starts at `from` inclusive, and system events count against maxCount: read until filled.
    let cursor = from;
    for (;;) {
      let seen = 0;
      await consume(
        c.readAll({ fromPosition: fromPosition(cursor), direction: FORWARDS, maxCount: limit + 1 }),
        (resolved) => {
          seen++;
          const pos = resolved.event?.position;
          if (!pos || comparePositions(pos, cursor) <= 0) return true;
          cursor = pos;
          const r = toRecorded(resolved);
          if (r) out.push(r);
          return out.length < limit;
        },
      );
      if (out.length >= limit || seen < limit + 1) return out;
    }
  };

  const readAllRetrying = (from: Position, limit?: number) => retrying((c) => readAll(c, from, limit));

  /**
   * One append on `c`, on its own Append call with the client's deadline (`defaultDeadline`), never through
   * BatchAppend (see `esdbAppend.ts` for why).
   */
  const appendOnce = (
    c: EventStoreDBClient,
    streamName: string,
    proposed: ReturnType<typeof jsonEvent>[],
    expectedRevision: ExpectedRevision,
  ) => appendOnCall(c, streamName, proposed, esdbExpected(expectedRevision));

  /**
   * What the log holds of an append whose answer did not come: its events' result when every one of them is
   * among the stream's last events (found by id), else null. EventStoreDB also answers a write it already has
   * as done when it is sent again, but with `any` only while it remembers the ids: the log is the proof.
   */
  const lookUp = (streamName: string, ids: string[]) =>
    retrying(async (c) => {
      const found = new Map<string, { revision: bigint; position?: Position }>();
      try {
        await consume(
          c.readStream(streamName, {
            direction: BACKWARDS,
            fromRevision: END,
            maxCount: Math.max(LOOK_UP_EVENTS, ids.length),
          }),
          (resolved) => {
            const e = resolved.event;
            if (e && ids.includes(e.id)) found.set(e.id, { revision: e.revision, position: e.position });
            return true;
          },
        );
      } catch (err) {
        if (err instanceof StreamNotFoundError) return null;
        throw err;
      }
      const last = found.get(ids[ids.length - 1]!);
      if (found.size < ids.length || !last?.position) return null;
      return { nextExpectedRevision: last.revision, position: last.position };
    });

  return {
    kind: 'esdb',
    async append(streamName, events, { expectedRevision = 'any' } = {}) {
      assertNotEmpty(streamName, events);
      // Ids fixed once: a retried write the server already has is recognised by them and not written twice.
      const proposed = events.map((e) =>
        jsonEvent({
          id: e.id ?? randomUUID(),
          type: e.type,
          data: e.data as Record<string, unknown>,
          metadata: (e.metadata ?? {}) as Record<string, unknown>,
        }),
      );
      try {
        let unanswered = false;
        const res = await retrying(async (c) => {
          try {
            return await appendOnce(c, streamName, proposed, expectedRevision);
          } catch (err) {
            // Once: the log says whether it landed; if not, it is sent again, with the same ids. A second
            // silence is a node away (503): the total wait stays about twice the deadline, plus the read.
            if (!isUnanswered(err) || unanswered) throw err;
            unanswered = true;
            const written = await lookUp(
              streamName,
              proposed.map((e) => e.id),
            );
            return written ?? (await appendOnce(client, streamName, proposed, expectedRevision));
          }
        });
        const pos = res.position ?? { commit: -1n, prepare: -1n };
        return {
          nextRevision: res.nextExpectedRevision,
          position: { commit: pos.commit, prepare: pos.prepare },
        };
      } catch (err) {
        if (err instanceof WrongExpectedVersionError) {
          const actual = err.actualVersion;
          throw new WrongExpectedRevisionError(
            streamName,
            expectedRevision,
            typeof actual === 'bigint' ? actual : 'no_stream',
          );
        }
        throw err;
      }
    },
    readStream: (streamName, opts) =>
      retrying(async (c) => {
        const events: RecordedEvent[] = [];
        // The revision is the stream's, from its last event whatever it is: an event this adapter does not
        // hand out (binary, `$`-typed, written by another tool) still moves the revision an append names.
        let revision: bigint | 'no_stream' = 'no_stream';
        try {
          await consume(
            c.readStream(streamName, {
              direction: FORWARDS,
              fromRevision: opts?.fromRevision ?? ESDB_START,
            }),
            (resolved) => {
              if (resolved.event) revision = resolved.event.revision;
              const r = toRecorded(resolved);
              if (r) events.push(r);
              return true;
            },
          );
        } catch (err) {
          if (err instanceof StreamNotFoundError) return { events: [], revision: 'no_stream' as const };
          throw err;
        }
        return { events, revision };
      }),
    readAll: readAllRetrying,
    subscribe({ from, handler, onError, batchSize = 200 }) {
      const c = client;
      const sub = c.subscribeToAll({ fromPosition: fromPosition(from), filter: excludeSystemEvents() });
      let stopped = false;
      const loop = (async () => {
        try {
          let batch: RecordedEvent[] = [];
          for await (const resolved of sub) {
            if (stopped) break;
            const r = toRecorded(resolved);
            if (r && comparePositions(r.position, from) > 0) batch.push(r);
            // Hand over a batch when it is full or when nothing more is buffered right now.
            if (batch.length && (batch.length >= batchSize || sub.readableLength === 0)) {
              const ready = batch;
              batch = [];
              await handler(ready);
            }
          }
          // A subscription has no end: the server ended it (shedding subscribers, shutting down).
          if (!stopped) throw new SubscriptionEndedError();
        } catch (err) {
          if (isChannelClosed(err)) await afterClosedChannel(c);
          if (!stopped) onError?.(toPortError(err));
        } finally {
          stopped = true;
          await sub.unsubscribe().catch(() => undefined);
        }
      })();
      return {
        async stop() {
          stopped = true;
          await sub.unsubscribe().catch(() => undefined);
          await loop;
        },
      };
    },
    /** The last event subscribers see: system events after it (the server writes them any time) are skipped. */
    headPosition: () =>
      retrying(async (c) => {
        let head: Position = START;
        let cursor: Position | typeof END = END;
        for (;;) {
          let seen = 0;
          let last: Position | null = null;
          await consume(
            c.readAll({ fromPosition: cursor, direction: BACKWARDS, maxCount: HEAD_PAGE }),
            (resolved) => {
              seen++;
              const pos = resolved.event?.position;
              if (pos) last = { commit: pos.commit, prepare: pos.prepare };
              if (!toRecorded(resolved)) return true;
              head = last!;
              return false;
            },
          );
          if (head !== START || seen < HEAD_PAGE || !last) return head;
          cursor = last;
        }
      }),
    // No index by id or correlation on the server: a scan of $all (see scan.ts for why).
    readEvent: async (id) => (await scanLog(readAllRetrying, (e) => e.id === id, { first: true }))[0] ?? null,
    readCorrelated: (id) => scanLog(readAllRetrying, (e) => e.metadata.correlationId === id),
    /**
     * One attempt, no retry, and a short deadline: a health probe must answer at once, and say "down" when the
     * node is, also one that is up but stalls (each /healthz waited for it as long as it stalled, and a stop
     * waited for those probes): its read gets 2 s, not the 10 s of the others. A probe that met a closed
     * channel (nothing sent) is made once more on the new client: the node was not asked.
     */
    async ping() {
      for (let attempt = 0; ; attempt++) {
        const c = client;
        try {
          return await consume(
            c.readAll({ fromPosition: ESDB_START, maxCount: 1 }),
            () => false,
            PING_DEADLINE_MS,
          );
        } catch (err) {
          if (!isChannelClosed(err) || attempt > 0) throw toPortError(err);
          await afterClosedChannel(c);
        }
      }
    },
    async close() {
      closed = true;
      await client.dispose();
    },
  };
}
