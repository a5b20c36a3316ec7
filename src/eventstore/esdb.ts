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
import {
  type EventStore,
  type ExpectedRevision,
  type Position,
  type RecordedEvent,
  START,
  WrongExpectedRevisionError,
  comparePositions,
} from './types';
import { scanLog } from './scan';

/** Event store on EventStoreDB: `$all` without system events; positions are its own {commit, prepare}. */
export function createEsdbEventStore(connectionString: string): EventStore {
  const client = EventStoreDBClient.connectionString(connectionString);

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

  const esdbExpected = (x: ExpectedRevision) => (x === 'any' ? ANY : x === 'no_stream' ? NO_STREAM : x);
  const fromPosition = (p: Position) => (comparePositions(p, START) <= 0 ? ESDB_START : p);

  const readAll = async (from: Position, limit = 500): Promise<RecordedEvent[]> => {
    const out: RecordedEvent[] = [];
    // readAll starts at `from` inclusive, and system events count against maxCount: read until filled.
    let cursor = from;
    for (;;) {
      let seen = 0;
      for await (const resolved of client.readAll({
        fromPosition: fromPosition(cursor),
        direction: FORWARDS,
        maxCount: limit + 1,
      })) {
        seen++;
        const pos = resolved.event?.position;
        if (!pos || comparePositions(pos, cursor) <= 0) continue;
        cursor = pos;
        const r = toRecorded(resolved);
        if (r) out.push(r);
        if (out.length >= limit) return out;
      }
      if (seen < limit + 1) return out;
    }
  };

  return {
    kind: 'esdb',
    async append(streamName, events, { expectedRevision = 'any' } = {}) {
      try {
        const res = await client.appendToStream(
          streamName,
          events.map((e) =>
            jsonEvent({
              id: e.id ?? randomUUID(),
              type: e.type,
              data: e.data as Record<string, unknown>,
              metadata: (e.metadata ?? {}) as Record<string, unknown>,
            }),
          ),
          { expectedRevision: esdbExpected(expectedRevision) },
        );
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
    async readStream(streamName) {
      const events: RecordedEvent[] = [];
      try {
        for await (const resolved of client.readStream(streamName, {
          direction: FORWARDS,
          fromRevision: ESDB_START,
        })) {
          const r = toRecorded(resolved);
          if (r) events.push(r);
        }
      } catch (err) {
        if (err instanceof StreamNotFoundError) return { events: [], revision: 'no_stream' };
        throw err;
      }
      return { events, revision: events.length ? events[events.length - 1]!.revision : 'no_stream' };
    },
    readAll,
    subscribe({ from, handler, onError, batchSize = 200 }) {
      const sub = client.subscribeToAll({ fromPosition: fromPosition(from), filter: excludeSystemEvents() });
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
        } catch (err) {
          if (!stopped) onError?.(err);
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
    async headPosition() {
      for await (const resolved of client.readAll({ fromPosition: END, direction: BACKWARDS, maxCount: 1 })) {
        const pos = resolved.event?.position;
        if (pos) return { commit: pos.commit, prepare: pos.prepare };
      }
      return START;
    },
    // No index by id or correlation on the server: a scan of $all (see scan.ts for why).
    readEvent: async (id) => (await scanLog(readAll, (e) => e.id === id, { first: true }))[0] ?? null,
    readCorrelated: (id) => scanLog(readAll, (e) => e.metadata.correlationId === id),
    async ping() {
      for await (const _ of client.readAll({ fromPosition: ESDB_START, maxCount: 1 })) break;
    },
    async close() {
      await client.dispose();
    },
  };
}
