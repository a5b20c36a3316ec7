import type { DomainEvent } from './decider';
import type { EventStore, Position, RecordedEvent } from './eventstore/types';

/**
 * Folded stream states kept in memory, per event store and decider, so that deciding on a stream reads
 * only the events it got since this process last folded it (one indexed read of a short tail) instead of
 * the whole stream: a busy coach's calendar or inbox grows for years, and its fold must not grow with it.
 *
 * Never stale: every load still asks the store for the tail, so writes of other instances are folded in
 * before a decision, and an append that loses a race is decided again on the fresh tail. States are
 * immutable (every `evolve` returns a new one), so a kept state is never changed by a later fold.
 * Bounded: the least recently used streams are forgotten past MAX_STREAMS per decider.
 */
export type Folder<E extends DomainEvent, S> = {
  initialState: () => S;
  evolve: (state: S, event: E) => S;
};

interface Folded {
  state: unknown;
  revision: bigint;
  position: Position;
}

export const MAX_STREAMS = 5000;

const kept = new WeakMap<EventStore, WeakMap<object, Map<string, Folded>>>();

function cacheOf(store: EventStore, decider: object): Map<string, Folded> {
  let byDecider = kept.get(store);
  if (!byDecider) kept.set(store, (byDecider = new WeakMap()));
  let streams = byDecider.get(decider);
  if (!streams) byDecider.set(decider, (streams = new Map()));
  return streams;
}

/** Keeps a stream's state at a revision (most recently used last; the oldest forgotten past the bound). */
export function remember(store: EventStore, decider: object, streamName: string, folded: Folded): void {
  const streams = cacheOf(store, decider);
  const known = streams.get(streamName);
  if (known && known.revision >= folded.revision) return; // a newer fold got there first
  streams.delete(streamName);
  streams.set(streamName, folded);
  if (streams.size > MAX_STREAMS) streams.delete(streams.keys().next().value!);
}

export interface Loaded<S> {
  state: S;
  revision: bigint | 'no_stream';
  /** Position of the stream's last event (null for a stream with none). */
  observed: Position | null;
  /** The events read: the whole stream with `whole`, otherwise only the tail folded onto a kept state. */
  recorded: RecordedEvent[];
}

/** The stream's state now: a kept fold plus the events after it, or (first time, or `whole`) all of it. */
export async function loadState<E extends DomainEvent, S>(
  store: EventStore,
  streamName: string,
  decider: Folder<E, S>,
  opts: { whole?: boolean } = {},
): Promise<Loaded<S>> {
  const streams = cacheOf(store, decider);
  const hit = opts.whole ? undefined : streams.get(streamName);
  const read = await store.readStream(streamName, hit ? { fromRevision: hit.revision + 1n } : undefined);
  // Only events past the kept revision are folded onto it, whatever the store answered.
  const fresh = hit ? read.events.filter((e) => e.revision > hit.revision) : read.events;
  let state = hit ? (hit.state as S) : decider.initialState();
  for (const r of fresh) state = decider.evolve(state, { type: r.type, data: r.data } as E);
  const last = fresh[fresh.length - 1];
  const revision =
    read.revision !== 'no_stream' && (!hit || read.revision > hit.revision)
      ? read.revision
      : (hit?.revision ?? 'no_stream');
  const observed = last?.position ?? hit?.position ?? null;
  if (revision !== 'no_stream' && observed)
    remember(store, decider, streamName, { state, revision, position: observed });
  return { state, revision, observed, recorded: fresh };
}
