import { randomUUID } from 'node:crypto';
import { isLeft } from 'fp-ts/Either';
import type { Decider, DomainError, DomainEvent } from './decider';
import type { EventMetadata, EventStore, Position, StreamAppend, StreamCondition } from './eventstore/types';
import { keptState, loadState, remember, type Folder, type Loaded } from './foldedStates';
import { isCondition, WrongExpectedRevisionError } from './eventstore/types';

export type CommandOutcome<E, S> =
  | {
      ok: true;
      events: E[];
      /** The stored ids of `events`, in order: a follow-up names one as its cause without reading it back. */
      eventIds: string[];
      state: S;
      position: Position | null;
      /** Position of the stream's last event as read for the decision (null for a new stream). */
      observed?: Position | null;
      /** Whether the `alongside` appends were written in the same transaction (SQL stores only). */
      alongside: boolean;
    }
  | { ok: false; error: DomainError };

/**
 * Appends that follow from a command's events, to other streams, written atomically with them; and
 * conditions: other streams the decision read, which must be unchanged for the events to be written.
 */
export type Alongside<E> = (events: E[]) => (StreamAppend | StreamCondition)[];

export class ConcurrencyConflictError extends Error {
  constructor(readonly streamName: string) {
    super(`stream ${streamName} kept changing while the command was decided`);
    this.name = 'ConcurrencyConflictError';
  }
}

/** A stream's current state, folded: what a command reads from another stream than the one it writes. */
export async function readState<E extends DomainEvent, S>(
  store: EventStore,
  streamName: string,
  decider: Folder<E, S>,
): Promise<S> {
  return (await loadState(store, streamName, decider)).state;
}

/**
 * Load, fold, decide, append with the revision read. A concurrent writer makes the append fail; the
 * command is then decided again on the fresh state, a few times, before giving up with a conflict.
 * With `metadata.idempotencyTag` (a keyed HTTP request), events of the stream carrying the same tag are
 * the outcome of an earlier run of the same request, returned instead of deciding again (one command per
 * stream and keyed request, which every route keeps to).
 * `alongside` names appends to other streams that follow from the events: on a store with appendMany they
 * are written in the same transaction (the outcome says so); elsewhere the caller writes them after.
 */
export async function handleCommand<C, E extends DomainEvent, S>(
  store: EventStore,
  streamName: string,
  decider: Decider<C, E, S>,
  command: C,
  metadata: EventMetadata,
  retries = 8,
  alongside?: Alongside<E>,
  /**
   * What the first decision starts from instead of a read of the stream's tail:
   * - the state the caller loaded while it prepared the command;
   * - `'kept'`: the state this process last folded, if it kept one, unread (a guess);
   * - `'new'`: the empty state at `no_stream` (a guess: the stream is expected not to exist yet).
   * A guess costs no read when it holds: the append checks the revision it was made at, so events decided on
   * a stale guess are refused and decided again on the stream as read. A refusal or a decision to write
   * nothing on a guess is never answered from it: the command is decided again on the stream as read.
   */
  first?: Promise<Loaded<S>> | 'kept' | 'new',
): Promise<CommandOutcome<E, S>> {
  const tag = metadata.idempotencyTag;
  const keyed = typeof tag === 'string';
  // A keyed request reads the whole stream (below): no guess and no preloaded state stands in for it.
  let guess: Loaded<S> | undefined =
    keyed || first === undefined || typeof first !== 'string'
      ? undefined
      : first === 'new'
        ? { state: decider.initialState(), revision: 'no_stream', observed: null, recorded: [] }
        : keptState(store, streamName, decider);
  for (let attempt = 0; ; attempt++) {
    const guessed = guess !== undefined;
    // A keyed request reads the whole stream, to find what an earlier run of it stored; others fold only
    // what the stream got since this process last folded it.
    const { state, revision, observed, recorded } =
      guess ??
      (await (attempt === 0 && first && typeof first !== 'string' && !keyed
        ? first
        : loadState(store, streamName, decider, { whole: keyed })));
    guess = undefined;
    if (keyed) {
      // A keyed request run again after a crash (or a concurrent repeat after the key's lease): what the
      // first run stored in this stream is its outcome; deciding again could book twice or refuse.
      const earlier = recorded.filter((r) => r.metadata.idempotencyTag === tag);
      if (earlier.length)
        return {
          ok: true,
          events: earlier.map((r) => ({ type: r.type, data: r.data }) as E),
          eventIds: earlier.map((r) => r.id),
          state,
          position: earlier[earlier.length - 1]!.position,
          alongside: false,
        };
    }
    const decided = decider.decide(command, state);
    if (guessed && (isLeft(decided) || decided.right.length === 0)) {
      attempt--; // not an attempt: the guess is checked by reading the stream
      continue;
    }
    if (isLeft(decided)) return { ok: false, error: decided.left };
    const events = decided.right;
    if (events.length === 0)
      return { ok: true, events, eventIds: [], state, position: null, observed, alongside: false };
    const others = alongside && store.appendMany ? alongside(events) : [];
    // The command's events say which streams were written with them, atomically (see writtenWith).
    const writes = others.filter((o) => !isCondition(o));
    const stamped = writes.length ? { ...metadata, writtenWith: writes.map((o) => o.streamName) } : metadata;
    const eventIds = events.map(() => randomUUID());
    const own: StreamAppend = {
      streamName,
      events: events.map((e, i) => ({ id: eventIds[i], type: e.type, data: e.data, metadata: stamped })),
      expectedRevision: revision,
    };
    try {
      const written = others.length
        ? await store.appendMany!([own, ...others])
        : [await store.append(streamName, own.events, { expectedRevision: revision })];
      const after = events.reduce(decider.evolve, state);
      remember(store, decider, streamName, {
        state: after,
        revision: written[0]!.nextRevision,
        position: written[0]!.position,
      });
      return {
        ok: true,
        events,
        eventIds,
        state: after,
        position: written[written.length - 1]!.position,
        alongside: writes.length > 0,
      };
    } catch (err) {
      // Only a race on the command's own stream is decided again; the others are the caller's to know.
      if (!(err instanceof WrongExpectedRevisionError) || err.streamName !== streamName) throw err;
      // A stale guess is no race: decided again at once on the stream as read.
      if (guessed) {
        attempt--;
        continue;
      }
      if (attempt >= retries) throw new ConcurrencyConflictError(streamName);
      // Jitter spreads out writers that collided so they do not collide again in lockstep.
      await new Promise((r) => setTimeout(r, Math.random() * 10 * (attempt + 1)));
    }
  }
}
