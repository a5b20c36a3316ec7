import type { DomainEvent } from './decider';
import type { EventStore, Position, RecordedEvent } from './eventstore/types';

/**
 * Folded stream states kept in memory, per event store, decider and stream, so that deciding on a stream reads
 * only the events it got since this process last folded it (one indexed read of a short tail) instead of
 * the whole stream: a busy coach's calendar or inbox grows for years, and its fold must not grow with it.
 *
 * Never stale: every load still asks the store for the tail, so writes of other instances are folded in
 * before a decision, and an append that loses a race is decided again on the fresh tail. States are
 * immutable (every `evolve` returns a new one), so a kept state is never changed by a later fold.
 * Bounded: the least recently used states are forgotten past `limits` (states, and events folded into
 * them) per store, all deciders together.
 */
export type Folder<E extends DomainEvent, S> = {
  initialState: () => S;
  evolve: (state: S, event: E) => S;
};

interface Folded {
  state: unknown;
  /** -1: a stream with no events (kept only when asked, see loadState's `keepEmpty`). */
  revision: bigint;
  position: Position | null;
}

/** Bounds for everything one process keeps of one event store, all deciders together. */
export const limits = {
  streams: 2000,
  /**
   * A state's size grows with the events folded into it (an inbox holds every notification), so the kept
   * states may together stand for at most this many events: a few very long streams are forgotten before
   * they fill the memory (the next load of one folds it whole again).
   */
  events: 20_000,
};

interface Kept {
  /** By decider and stream; least recently used first. */
  entries: Map<string, Folded>;
  events: number;
}

const kept = new WeakMap<EventStore, Kept>();
const deciderIds = new WeakMap<object, number>();
let nextDeciderId = 0;
const weight = (f: Folded) => Number(f.revision) + 1;

function keyOf(decider: object, streamName: string): string {
  let id = deciderIds.get(decider);
  if (id === undefined) deciderIds.set(decider, (id = nextDeciderId++));
  return `${id}/${streamName}`;
}

function cacheOf(store: EventStore): Kept {
  let k = kept.get(store);
  if (!k) kept.set(store, (k = { entries: new Map(), events: 0 }));
  return k;
}

/** Keeps a stream's state at a revision (most recently used last; the oldest forgotten past the bounds). */
export function remember(store: EventStore, decider: object, streamName: string, folded: Folded): void {
  const k = cacheOf(store);
  const key = keyOf(decider, streamName);
  const known = k.entries.get(key);
  if (known && known.revision >= folded.revision) {
    // Nothing newer (or a newer fold got there first): only its use is recorded.
    k.entries.delete(key);
    k.entries.set(key, known);
    return;
  }
  if (known) {
    k.entries.delete(key);
    k.events -= weight(known);
  }
  if (weight(folded) > limits.events) return; // a stream longer than the whole budget is not kept
  k.entries.set(key, folded);
  k.events += weight(folded);
  while (k.entries.size > limits.streams || k.events > limits.events) {
    const [oldest, f] = k.entries.entries().next().value!;
    k.entries.delete(oldest);
    k.events -= weight(f);
  }
}

/** Forgets a stream's kept state (a finished stream that will not be decided on again: its memory is free). */
export function forget(store: EventStore, decider: object, streamName: string): void {
  const k = cacheOf(store);
  const key = keyOf(decider, streamName);
  const known = k.entries.get(key);
  if (!known) return;
  k.entries.delete(key);
  k.events -= weight(known);
}

/**
 * The kept state of a stream as this process last folded it, without reading the store: only a guess of the
 * state now (another instance may have written since). A decision on it is only as good as the append that
 * checks the revision (see `handleCommand`'s `first`).
 */
export function keptState<S>(
  store: EventStore,
  streamName: string,
  decider: Folder<never, S>,
): Loaded<S> | undefined {
  const k = cacheOf(store);
  const key = keyOf(decider, streamName);
  const hit = k.entries.get(key);
  if (!hit) return undefined;
  // A use like any other: the states bookings decide on without reading must not drift to the eviction end.
  k.entries.delete(key);
  k.entries.set(key, hit);
  return {
    state: hit.state as S,
    revision: hit.revision < 0n ? 'no_stream' : hit.revision,
    observed: hit.position,
    recorded: [],
  };
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
  /**
   * `keepEmpty`: a stream without events is kept too (as the empty state), so the next `keptState` has a
   * guess. Only for streams of known owners (a coach's address book): a request naming random ids must not
   * push real states out of the bounded cache.
   */
  opts: { whole?: boolean; keepEmpty?: boolean } = {},
): Promise<Loaded<S>> {
  const hit = opts.whole ? undefined : cacheOf(store).entries.get(keyOf(decider, streamName));
  const read = await store.readStream(streamName, hit ? { fromRevision: hit.revision + 1n } : undefined);
  // Only events past the kept revision are folded onto it, whatever the store answered.
  const fresh = hit ? read.events.filter((e) => e.revision > hit.revision) : read.events;
  let state = hit ? (hit.state as S) : decider.initialState();
  for (const r of fresh) state = decider.evolve(state, { type: r.type, data: r.data } as E);
  const last = fresh[fresh.length - 1];
  const kept = hit && hit.revision >= 0n ? hit.revision : undefined;
  const revision =
    read.revision !== 'no_stream' && (kept === undefined || read.revision > kept)
      ? read.revision
      : (kept ?? 'no_stream');
  const observed = last?.position ?? hit?.position ?? null;
  if (revision !== 'no_stream' && observed)
    remember(store, decider, streamName, { state, revision, position: observed });
  else if (revision === 'no_stream' && opts.keepEmpty)
    remember(store, decider, streamName, { state, revision: -1n, position: null });
  return { state, revision, observed, recorded: fresh };
}

/**
 * A stream's state folded through at least `revision` (-1: before its first event), for a decision that
 * needs nothing later (e.g. what a user had registered before one of their events): the kept fold when it
 * reaches that far, without a read; otherwise the stream as read now.
 */
export async function loadStateThrough<E extends DomainEvent, S>(
  store: EventStore,
  streamName: string,
  decider: Folder<E, S>,
  revision: bigint,
): Promise<S> {
  if (revision < 0n) return decider.initialState();
  const hit = cacheOf(store).entries.get(keyOf(decider, streamName));
  if (hit && hit.revision >= revision) {
    remember(store, decider, streamName, hit); // recorded as used
    return hit.state as S;
  }
  return (await loadState(store, streamName, decider)).state;
}
