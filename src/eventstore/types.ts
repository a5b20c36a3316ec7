/**
 * The event store port. Three adapters implement it (PostgreSQL, PGlite, EventStoreDB) and pass the
 * same contract suite (test/integration/eventstore.contract.ts).
 */

/** Global log position. EventStoreDB orders `$all` by (commit, prepare); the SQL adapters set both equal. */
export interface Position {
  commit: bigint;
  prepare: bigint;
}

export const START: Position = { commit: -1n, prepare: -1n };

export function comparePositions(a: Position, b: Position): number {
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  if (a.prepare !== b.prepare) return a.prepare < b.prepare ? -1 : 1;
  return 0;
}

export interface EventMetadata {
  correlationId?: string;
  causationId?: string;
  actor?: { userId: string; role: string };
  requestId?: string;
  /**
   * Streams appended in the same transaction as this event (an atomic `appendMany` on the SQL stores): a
   * process manager that would write them when missing knows they are there without reading them.
   */
  writtenWith?: string[];
  [key: string]: unknown;
}

/** Whether `event` was stored in one transaction with an append to `streamName`. */
export const writtenWith = (event: { metadata: EventMetadata }, streamName: string): boolean =>
  Array.isArray(event.metadata.writtenWith) && event.metadata.writtenWith.includes(streamName);

export interface NewEvent<T extends string = string, D = unknown> {
  id?: string;
  type: T;
  data: D;
  metadata?: EventMetadata;
}

export interface RecordedEvent<T extends string = string, D = unknown> {
  id: string;
  type: T;
  streamName: string;
  /** 0-based position within its stream. */
  revision: bigint;
  position: Position;
  data: D;
  metadata: EventMetadata;
  createdAt: Date;
}

/** `'no_stream'`: the stream must not exist; `'any'`: no check; a bigint: the last revision read. */
export type ExpectedRevision = 'no_stream' | 'any' | bigint;

export interface AppendResult {
  /** Revision of the last event written. */
  nextRevision: bigint;
  /** Position of the last event written in the global log. */
  position: Position;
}

export class WrongExpectedRevisionError extends Error {
  constructor(
    readonly streamName: string,
    readonly expected: ExpectedRevision,
    readonly actual: bigint | 'no_stream',
  ) {
    super(`stream ${streamName}: expected revision ${String(expected)}, found ${String(actual)}`);
    this.name = 'WrongExpectedRevisionError';
  }
}

/**
 * The event store did not answer (a node down or restarting, no leader, a deadline passed). Nothing is
 * known to be wrong with the request: trying again shortly may pass, so HTTP answers 503.
 */
export class EventStoreUnavailableError extends Error {
  readonly transient = true;
  constructor(cause: unknown) {
    super(`the event store is not answering (${cause instanceof Error ? cause.message : String(cause)})`, {
      cause,
    });
    this.name = 'EventStoreUnavailableError';
  }
}

/**
 * One rule on every adapter: an append of no events is refused before any I/O. Writing nothing is a caller's
 * bug (a decider that decided nothing has nothing to append), and the stores would disagree on what it means.
 */
export class EmptyAppendError extends Error {
  constructor(readonly streamName: string) {
    super(`append to ${streamName} needs at least one event`);
    this.name = 'EmptyAppendError';
  }
}

export function assertNotEmpty(streamName: string, events: readonly unknown[]): void {
  if (events.length === 0) throw new EmptyAppendError(streamName);
}

export interface ReadStreamResult {
  events: RecordedEvent[];
  /** Revision of the last event, or 'no_stream'. */
  revision: bigint | 'no_stream';
}

export interface Subscription {
  stop(): Promise<void>;
}

export interface SubscribeOptions {
  /** Deliver events strictly after this position (START for the whole log). */
  from: Position;
  /** Called once per batch, in log order; the next batch waits for it to resolve. */
  handler: (events: RecordedEvent[]) => Promise<void>;
  /** Called when the subscription ends on an error (the handler's, or the store's). */
  onError?: (err: unknown) => void;
  /** Upper bound of events per handler call. */
  batchSize?: number;
}

/** One stream's part of a multi-stream append. */
export interface StreamAppend {
  streamName: string;
  events: NewEvent[];
  expectedRevision?: ExpectedRevision;
}

/**
 * In an `appendMany`: a stream that must still be at `expectedRevision` for the group to be written, and
 * to which nothing is appended. A decision made on that stream's state is then as current as the write.
 */
export interface StreamCondition {
  streamName: string;
  condition: true;
  expectedRevision: bigint | 'no_stream';
}

export const isCondition = (a: StreamAppend | StreamCondition): a is StreamCondition => 'condition' in a;

export interface EventStore {
  readonly kind: 'postgres' | 'pglite' | 'esdb';
  append(
    streamName: string,
    events: NewEvent[],
    opts?: { expectedRevision?: ExpectedRevision },
  ): Promise<AppendResult>;
  /**
   * Appends to several streams atomically: all land (each checked against its expected revision) or none
   * does, and the first mismatch is thrown as a WrongExpectedRevisionError. Only the SQL stores have it;
   * on EventStoreDB, which has no multi-stream transaction, callers append one stream at a time and
   * rely on a process manager to finish what a crash interrupted. A result per item, in order; a
   * condition's is its stream's revision (-1 for none) and the group's last position.
   */
  appendMany?(appends: (StreamAppend | StreamCondition)[]): Promise<AppendResult[]>;
  /**
   * A stream's events in order; with `fromRevision`, only those from that revision on (a cached fold reads
   * just its tail). `revision` is the last returned event's ('no_stream' when none was returned).
   */
  readStream(streamName: string, opts?: { fromRevision?: bigint }): Promise<ReadStreamResult>;
  /** Reads the global log strictly after `from`, up to `limit` events, in order. */
  readAll(from: Position, limit?: number): Promise<RecordedEvent[]>;
  subscribe(opts: SubscribeOptions): Subscription;
  /** Position of the last event in the global log (START when empty). */
  headPosition(): Promise<Position>;
  /** The event with this id, or null (auditors' chain; indexed on the SQL stores). */
  readEvent(eventId: string): Promise<RecordedEvent | null>;
  /** Every event whose metadata `correlationId` is this one, in log order (auditors' chain). */
  readCorrelated(correlationId: string): Promise<RecordedEvent[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
