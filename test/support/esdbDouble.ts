import * as grpc from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';
import http2 from 'node:http2';
import { Any } from 'google-protobuf/google/protobuf/any_pb';
import { Empty } from 'google-protobuf/google/protobuf/empty_pb';
import { StreamsService } from '@eventstore/db-client/generated/streams_grpc_pb';
import { ServerFeaturesService } from '@eventstore/db-client/generated/serverfeatures_grpc_pb';
import { SupportedMethod, SupportedMethods } from '@eventstore/db-client/generated/serverfeatures_pb';
import {
  AppendReq,
  AppendResp,
  BatchAppendReq,
  BatchAppendResp,
  ReadReq,
  ReadResp,
} from '@eventstore/db-client/generated/streams_pb';
import {
  AllStreamPosition,
  MaximumAppendSizeExceeded,
  StreamIdentifier,
  Timeout,
  UUID,
  WrongExpectedVersion,
} from '@eventstore/db-client/generated/shared_pb';
import { Status } from '@eventstore/db-client/generated/status_pb';

/**
 * A wire-level EventStoreDB double for tests: a real gRPC server on an ephemeral port that speaks the
 * Streams and ServerFeatures protocols exactly as `@eventstore/db-client` calls them (the message types are
 * the ones the client ships in `generated/`). What it keeps is in memory; what it answers follows the real
 * server: expected-revision checks and their error details, idempotent re-appends of the same event ids,
 * `$all` ordered by (commit, prepare) with `$`-prefixed system events in it, server-side filters,
 * subscriptions with confirmation, catch-up, caught-up and live delivery. Fault switches let a test drop
 * every connection, end subscriptions, and hold answers past a deadline.
 *
 * It does not prove: clustering, leader election and gossip (the client is pointed at one node), TLS and
 * authentication, persistence to disk, scavenging, stream metadata ($maxAge, ACLs), deletes and tombstones,
 * link resolution, persistent subscriptions, the structured UUID format. It refuses an append over the
 * node's default MaxAppendSize (1 MiB of data, metadata and type) as the server does.
 */
export interface EsdbDouble {
  /** Connection string for the client: `esdb://127.0.0.1:<port>?tls=false`. */
  readonly url: string;
  readonly port: number;
  /**
   * Drops every connection (calls fail as on a node crash), stays down `downMs`, comes back on the same port
   * with the data. With `notReadyMs`, the node then accepts connections but is not ready for that long, as
   * a real node is while it opens its database and becomes leader (see `notReady`).
   */
  restart(opts?: { downMs?: number; notReadyMs?: number }): Promise<void>;
  /**
   * For `ms` (0 to stop), answers as a node that is up but not ready (starting, or electing a leader):
   * reads, subscriptions and `Streams.Append` fail with UNAVAILABLE "Server Is Not Ready"; a BatchAppend is
   * answered with a status of code 0, message "Server Is Not Ready" and `google.protobuf.Empty` details
   * (what EventStoreDB 23.10 and 24.10 send, `Streams.BatchAppend.cs`), which the client turns into an
   * `UnknownError`. `ServerFeatures` still answers. With `busy`, the messages are the overloaded node's
   * ("Server Is Too Busy"; "Server Is Busy" in a BatchAppend answer).
   */
  notReady(ms: number, opts?: { busy?: boolean }): void;
  /** Ends every live subscription with status OK, as a server does when it sheds subscribers. */
  endSubscriptions(): number;
  /**
   * Closes every client connection at once with a GOAWAY carrying an HTTP/2 error code (CANCEL unless told),
   * while the node stays up and takes new connections: as a server (or a proxy in front of it) shedding
   * connections under load. Calls in flight may end without a gRPC status, which the client reports as
   * INTERNAL "Received RST_STREAM ... (Call ended without gRPC status)". Returns how many it closed.
   */
  dropConnections(code?: number): number;
  /**
   * Ends every open BatchAppend call with status OK, as a proxy or a node shutting down may (a real node
   * does not otherwise: the stream lives as long as the client keeps it). Returns how many it ended.
   */
  endBatchAppends(): number;
  /**
   * The next `count` (default 1; 0 stops it) appends, through Append or BatchAppend, get no answer, after
   * being written (`next: 'written'`, the answer lost) or not (`next: 'dropped'`): their call is left open
   * until the client gives up on it (its deadline), as a stalled node or a half-open connection leaves it;
   * with `end`, it is ended at once with status OK and no answer, as a proxy or a node shutting down may.
   */
  leaveAppendsUnanswered(opts: { next: 'written' | 'dropped'; count?: number; end?: boolean }): void;
  /** Ends the oldest live subscription with an error status (UNAVAILABLE unless told). */
  failSubscription(code?: grpc.status, details?: string): boolean;
  /**
   * Holds every answer to an append, a read or a ServerFeatures call for `ms` (0 to stop), as a stalled node
   * does; appends past their deadline fail as the server's do.
   */
  delayAnswers(ms: number): void;
  /** Writes a `$`-prefixed system event (as the server's stats collector does) to `$all`. */
  writeSystemEvent(): void;
  /** Counters a test can assert on: live subscriptions, read calls the server still has open, restarts. */
  stats(): {
    subscriptions: number;
    openReads: number;
    restarts: number;
    events: number;
    calls: { read: number; subscribe: number; append: number; batchAppend: number };
  };
  close(): Promise<void>;
}

export interface EsdbDoubleOptions {
  /** Advertise BatchAppend through ServerFeatures (real servers since 21.10 do); false forces Streams.Append. */
  batchAppend?: boolean;
  /** Write a system event after every `n`-th append (0: never); default 3, so filtering is always exercised. */
  systemEventEvery?: number;
}

interface Stored {
  streamName: string;
  revision: bigint;
  id: string;
  type: string;
  contentType: string;
  data: Uint8Array;
  customMetadata: Uint8Array;
  /** Ticks of 100 ns since the Unix epoch, as the server writes `created`. */
  created: bigint;
  /** Commit and prepare positions are equal: one event per log record, as with single-node writes. */
  position: bigint;
}

interface Proposed {
  id: string;
  type: string;
  contentType: string;
  data: Uint8Array;
  customMetadata: Uint8Array;
}

type Expected =
  | { kind: 'any' }
  | { kind: 'no_stream' }
  | { kind: 'stream_exists' }
  | { kind: 'revision'; revision: bigint };

type WriteResult =
  { ok: true; revision: bigint | null; position: bigint | null } | { ok: false; current: bigint | null };

interface Sub {
  call: grpc.ServerWritableStream<ReadReq, ReadResp>;
  /** Index of the next log (or stream) entry to look at. */
  next: number;
  stream: string | null;
  keep: (e: Stored) => boolean;
  /** $all: deliver only past this position; stream: only past this revision. */
  after: bigint;
  live: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A node's `MaxAppendSize` default: the events of one append, as `Event.SizeOnDisk` counts them. */
const MAX_APPEND_SIZE = 1024 * 1024;
const sizeOnDisk = (events: Proposed[]) =>
  events.reduce((n, e) => n + e.data.length + e.customMetadata.length + e.type.length * 2, 0);
const utf8 = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const MAX = BigInt('0xffffffffffffffff');
const TICKS_PER_MS = 10_000n;

const streamId = (name: string) => {
  const id = new StreamIdentifier();
  id.setStreamName(Buffer.from(name, 'utf8'));
  return id;
};
const uuid = (s: string) => {
  const u = new UUID();
  u.setString(s);
  return u;
};

function proposedFrom(m: AppendReq.ProposedMessage | BatchAppendReq.ProposedMessage): Proposed {
  const meta = m.getMetadataMap();
  return {
    id: m.getId()?.getString() || randomUUID(),
    type: meta.get('type') ?? '<no-event-type-provided>',
    contentType: meta.get('content-type') ?? 'application/octet-stream',
    data: m.getData_asU8(),
    customMetadata: m.getCustomMetadata_asU8(),
  };
}

/** The server-side filter of a read or subscription (event type or stream name; regex or prefixes). */
function filterOf(opts: ReadReq.Options): (e: Stored) => boolean {
  if (!opts.hasFilter()) return () => true;
  const f = opts.getFilter()!;
  const onType = f.hasEventType();
  const expr = onType ? f.getEventType()! : f.getStreamIdentifier()!;
  const regex = expr.getRegex() ? new RegExp(expr.getRegex()) : null;
  const prefixes = expr.getPrefixList();
  return (e) => {
    const subject = onType ? e.type : e.streamName;
    if (regex && !regex.test(subject)) return false;
    if (prefixes.length && !prefixes.some((p) => subject.startsWith(p))) return false;
    return true;
  };
}

function readEvent(e: Stored): ReadResp {
  const rec = new ReadResp.ReadEvent.RecordedEvent();
  rec.setId(uuid(e.id));
  rec.setStreamIdentifier(streamId(e.streamName));
  rec.setStreamRevision(e.revision.toString());
  rec.setPreparePosition(e.position.toString());
  rec.setCommitPosition(e.position.toString());
  const meta = rec.getMetadataMap();
  meta.set('type', e.type);
  meta.set('content-type', e.contentType);
  meta.set('created', e.created.toString());
  rec.setCustomMetadata(e.customMetadata);
  rec.setData(e.data);
  const ev = new ReadResp.ReadEvent();
  ev.setEvent(rec);
  ev.setCommitPosition(e.position.toString());
  const resp = new ReadResp();
  resp.setEvent(ev);
  return resp;
}

export async function startEsdbDouble(options: EsdbDoubleOptions = {}): Promise<EsdbDouble> {
  const { batchAppend = true, systemEventEvery = 3 } = options;
  const log: Stored[] = [];
  const streams = new Map<string, Stored[]>();
  const subs = new Set<Sub>();
  const openReads = new Set<grpc.ServerWritableStream<ReadReq, ReadResp>>();
  let nextPosition = 0n;
  let appends = 0;
  let delayMs = 0;
  let notReadyUntil = 0;
  let notReadyBusy = false;
  let restarts = 0;
  const batchAppendCalls = new Set<grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>>();
  let unanswered: { mode: 'written' | 'dropped'; count: number; end: boolean } | null = null;
  /** Whether this append is one to leave unanswered (written first when so told); counts it down. */
  const leftUnanswered = (write: () => void) => {
    if (!unanswered) return null;
    const { mode, end } = unanswered;
    if (mode === 'written') write();
    if (--unanswered.count <= 0) unanswered = null;
    return { end };
  };
  const calls = { read: 0, subscribe: 0, append: 0, batchAppend: 0 };

  const record = (streamName: string, p: Proposed): Stored => {
    const events = streams.get(streamName) ?? [];
    streams.set(streamName, events);
    // Positions grow like byte offsets in the transaction log.
    nextPosition += BigInt(128 + p.data.length + p.customMetadata.length);
    const e: Stored = {
      streamName,
      revision: BigInt(events.length),
      ...p,
      created: BigInt(Date.now()) * TICKS_PER_MS,
      position: nextPosition,
    };
    events.push(e);
    log.push(e);
    return e;
  };

  const writeSystemEvent = () => {
    record('$stats-127.0.0.1:2113', {
      id: randomUUID(),
      type: '$statsCollected',
      contentType: 'application/json',
      data: Buffer.from(JSON.stringify({ 'proc-startTime': new Date().toISOString() })),
      customMetadata: new Uint8Array(),
    });
    pumpAll();
  };

  /** The expected-revision rules of the server, including its idempotent answer to a repeated write. */
  const write = (streamName: string, expected: Expected, proposed: Proposed[]): WriteResult => {
    const events = streams.get(streamName) ?? [];
    const current = events.length ? BigInt(events.length - 1) : null;
    // A write whose event ids are already there, where the expectation puts them, is answered as done
    // without writing again (a client retrying after a lost answer); with `any`, wherever they are.
    const at =
      expected.kind === 'revision'
        ? Number(expected.revision) + 1
        : expected.kind === 'no_stream'
          ? 0
          : events.findIndex((e) => e.id === proposed[0]?.id);
    if (proposed.length > 0 && at >= 0) {
      const already = events.slice(at, at + proposed.length);
      if (already.length === proposed.length && already.every((e, i) => e.id === proposed[i]!.id)) {
        const last = already[already.length - 1]!;
        return { ok: true, revision: last.revision, position: last.position };
      }
    }
    const fits =
      expected.kind === 'any' ||
      (expected.kind === 'no_stream' && current === null) ||
      (expected.kind === 'stream_exists' && current !== null) ||
      (expected.kind === 'revision' && current === expected.revision);
    if (!fits) return { ok: false, current };
    if (proposed.length === 0) return { ok: true, revision: current, position: null };
    let last: Stored | undefined;
    for (const p of proposed) last = record(streamName, p);
    appends++;
    if (systemEventEvery > 0 && appends % systemEventEvery === 0) writeSystemEvent();
    pumpAll();
    return { ok: true, revision: last!.revision, position: last!.position };
  };

  const wrongExpectedVersion = (expected: Expected, current: bigint | null) => {
    const w = new WrongExpectedVersion();
    if (current === null) w.setCurrentNoStream(new Empty());
    else w.setCurrentStreamRevision(current.toString());
    if (expected.kind === 'any') w.setExpectedAny(new Empty());
    else if (expected.kind === 'no_stream') w.setExpectedNoStream(new Empty());
    else if (expected.kind === 'stream_exists') w.setExpectedStreamExists(new Empty());
    else w.setExpectedStreamPosition(expected.revision.toString());
    return w;
  };

  const errorStatus = (
    code: grpc.status,
    message: string,
    detail: { serializeBinary(): Uint8Array },
    typeName: string,
  ) => {
    const any = new Any();
    any.pack(detail.serializeBinary(), typeName);
    const s = new Status();
    s.setCode(code as number);
    s.setMessage(message);
    s.setDetails(any);
    return s;
  };

  /** Sends a subscription everything it has not seen yet; the first time through it then reports caught up. */
  const pump = (sub: Sub) => {
    if (sub.call.cancelled || sub.call.writableEnded) return;
    const source = sub.stream === null ? log : (streams.get(sub.stream) ?? []);
    for (; sub.next < source.length; sub.next++) {
      const e = source[sub.next]!;
      const beyond = sub.stream === null ? e.position > sub.after : e.revision > sub.after;
      if (beyond && sub.keep(e)) sub.call.write(readEvent(e));
    }
    if (!sub.live) {
      sub.live = true;
      const last = log[log.length - 1];
      if (last && sub.stream === null) {
        const cp = new ReadResp.Checkpoint();
        cp.setCommitPosition(last.position.toString());
        cp.setPreparePosition(last.position.toString());
        const resp = new ReadResp();
        resp.setCheckpoint(cp);
        sub.call.write(resp);
      }
      const resp = new ReadResp();
      resp.setCaughtUp(new ReadResp.CaughtUp());
      sub.call.write(resp);
    }
  };
  function pumpAll() {
    for (const s of subs) pump(s);
  }

  const subscribe = (call: grpc.ServerWritableStream<ReadReq, ReadResp>, opts: ReadReq.Options) => {
    let sub: Sub;
    if (opts.hasAll()) {
      const all = opts.getAll()!;
      const after = all.hasPosition()
        ? BigInt(all.getPosition()!.getCommitPosition())
        : all.hasEnd()
          ? (log[log.length - 1]?.position ?? -1n)
          : -1n;
      sub = { call, next: 0, stream: null, keep: filterOf(opts), after, live: false };
    } else {
      const so = opts.getStream()!;
      const name = utf8(so.getStreamIdentifier()!.getStreamName_asU8());
      const have = BigInt((streams.get(name) ?? []).length);
      const after = so.hasRevision() ? BigInt(so.getRevision()) : so.hasEnd() ? have - 1n : -1n;
      sub = { call, next: 0, stream: name, keep: () => true, after, live: false };
    }
    subs.add(sub);
    const forget = () => subs.delete(sub);
    call.on('cancelled', forget);
    call.on('finish', forget);
    call.on('close', forget);
    const conf = new ReadResp.SubscriptionConfirmation();
    conf.setSubscriptionId(randomUUID());
    const resp = new ReadResp();
    resp.setConfirmation(conf);
    call.write(resp);
    pump(sub);
  };

  const readStreamOrAll = (call: grpc.ServerWritableStream<ReadReq, ReadResp>, opts: ReadReq.Options) => {
    const backwards = opts.getReadDirection() === ReadReq.Options.ReadDirection.BACKWARDS;
    let count = opts.hasCount() ? BigInt(opts.getCount()) : MAX;
    const keep = filterOf(opts);
    const send = (e: Stored) => {
      if (count <= 0n) return false;
      if (keep(e)) {
        call.write(readEvent(e));
        count--;
      }
      return true;
    };
    if (opts.hasStream()) {
      const so = opts.getStream()!;
      const name = utf8(so.getStreamIdentifier()!.getStreamName_asU8());
      const events = streams.get(name);
      if (!events) {
        const nf = new ReadResp.StreamNotFound();
        nf.setStreamIdentifier(streamId(name));
        const resp = new ReadResp();
        resp.setStreamNotFound(nf);
        call.write(resp);
        return;
      }
      const from = so.hasRevision() ? BigInt(so.getRevision()) : null;
      if (backwards) {
        const start =
          so.hasEnd() || from === null ? events.length - 1 : Math.min(Number(from), events.length - 1);
        for (let i = start; i >= 0 && send(events[i]!); i--);
      } else {
        const start = so.hasStart() || from === null ? 0 : Number(from);
        for (let i = start; i < events.length && send(events[i]!); i++);
      }
      return;
    }
    const all = opts.getAll()!;
    const pos = all.hasPosition() ? BigInt(all.getPosition()!.getCommitPosition()) : null;
    if (backwards) {
      // Backwards from a position: the events before it; from the end: the last event first.
      for (let i = log.length - 1; i >= 0; i--) {
        const e = log[i]!;
        if (pos !== null && !all.hasEnd() && e.position >= pos) continue;
        if (!send(e)) break;
      }
    } else {
      // Forwards from a position: that event included, as the server reads.
      for (const e of log) {
        if (pos !== null && !all.hasStart() && e.position < pos) continue;
        if (!send(e)) break;
      }
    }
  };

  const hold = async () => {
    if (delayMs > 0) await sleep(delayMs);
  };
  const isNotReady = () => Date.now() < notReadyUntil;
  /** The error a not-ready node's reads and appends end with (RpcExceptions.ServerNotReady / ServerBusy). */
  const notReadyError = () => ({
    code: grpc.status.UNAVAILABLE,
    details: notReadyBusy ? 'Server Is Too Busy' : 'Server Is Not Ready',
  });

  const expectedOf = (
    o: {
      hasAny(): boolean;
      hasNoStream(): boolean;
      hasStreamExists(): boolean;
    },
    revision: () => string | null,
  ): Expected => {
    if (o.hasNoStream()) return { kind: 'no_stream' };
    if (o.hasStreamExists()) return { kind: 'stream_exists' };
    const r = revision();
    if (r !== null) return { kind: 'revision', revision: BigInt(r) };
    return { kind: 'any' };
  };

  const streamsImpl: grpc.UntypedServiceImplementation = {
    read: (call: grpc.ServerWritableStream<ReadReq, ReadResp>) => {
      const opts = call.request.getOptions()!;
      if (isNotReady()) {
        call.emit('error', notReadyError());
        return;
      }
      if (opts.hasSubscription()) {
        calls.subscribe++;
        return subscribe(call, opts);
      }
      calls.read++;
      openReads.add(call);
      const done = () => openReads.delete(call);
      call.on('cancelled', done);
      call.on('finish', done);
      call.on('close', done);
      void (async () => {
        await hold();
        if (call.cancelled) return;
        readStreamOrAll(call, opts);
        call.end();
      })();
    },
    append: (
      call: grpc.ServerReadableStream<AppendReq, AppendResp>,
      callback: grpc.sendUnaryData<AppendResp>,
    ) => {
      calls.append++;
      let options: AppendReq.Options | undefined;
      const proposed: Proposed[] = [];
      call.on('data', (req: AppendReq) => {
        if (req.hasOptions()) options = req.getOptions();
        else if (req.hasProposedMessage()) proposed.push(proposedFrom(req.getProposedMessage()!));
      });
      call.on('end', async () => {
        await hold();
        if (call.cancelled || !options) return;
        if (isNotReady()) return callback(notReadyError());
        if (sizeOnDisk(proposed) > MAX_APPEND_SIZE) {
          const metadata = new grpc.Metadata();
          metadata.set('exception', 'maximum-append-size-exceeded');
          metadata.set('maximum-append-size', String(MAX_APPEND_SIZE));
          const details = `Maximum Append Size of ${MAX_APPEND_SIZE} Exceeded.`;
          return callback({ code: grpc.status.INVALID_ARGUMENT, details, metadata });
        }
        const name = utf8(options.getStreamIdentifier()!.getStreamName_asU8());
        const expected = expectedOf(options, () => (options!.hasRevision() ? options!.getRevision() : null));
        const left = leftUnanswered(() => write(name, expected, proposed));
        if (left) {
          // Status OK without an answer (grpc-js sends no message then); else no answer at all.
          if (left.end) callback({ code: grpc.status.OK, details: '' });
          return;
        }
        const res = write(name, expected, proposed);
        const resp = new AppendResp();
        if (res.ok) {
          const s = new AppendResp.Success();
          if (res.revision === null) s.setNoStream(new Empty());
          else s.setCurrentRevision(res.revision.toString());
          if (res.position === null) s.setNoPosition(new Empty());
          else {
            const p = new AppendResp.Position();
            p.setCommitPosition(res.position.toString());
            p.setPreparePosition(res.position.toString());
            s.setPosition(p);
          }
          resp.setSuccess(s);
        } else {
          const w = new AppendResp.WrongExpectedVersion();
          if (res.current === null) w.setCurrentNoStream(new Empty());
          else w.setCurrentRevision(res.current.toString());
          if (expected.kind === 'any') w.setExpectedAny(new Empty());
          else if (expected.kind === 'no_stream') w.setExpectedNoStream(new Empty());
          else if (expected.kind === 'stream_exists') w.setExpectedStreamExists(new Empty());
          else w.setExpectedRevision(expected.revision.toString());
          resp.setWrongExpectedVersion(w);
        }
        callback(null, resp);
      });
    },
    batchAppend: (call: grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>) => {
      // Requests for several appends interleave on one stream; each is assembled by its correlation id.
      const pending = new Map<string, { options: BatchAppendReq.Options; proposed: Proposed[] }>();
      batchAppendCalls.add(call);
      const forget = () => batchAppendCalls.delete(call);
      call.on('cancelled', forget);
      call.on('finish', forget);
      call.on('close', forget);
      call.on('data', async (req: BatchAppendReq) => {
        const correlation = req.getCorrelationId()!;
        const key = correlation.getString();
        let entry = pending.get(key);
        if (!entry) {
          entry = { options: req.getOptions()!, proposed: [] };
          pending.set(key, entry);
        }
        entry.proposed.push(...req.getProposedMessagesList().map(proposedFrom));
        if (!req.getIsFinal()) return;
        calls.batchAppend++;
        pending.delete(key);
        const { options, proposed } = entry;
        const name = utf8(options.getStreamIdentifier()!.getStreamName_asU8());
        const expected = expectedOf(options, () =>
          options.hasStreamPosition() ? options.getStreamPosition() : null,
        );
        const left = leftUnanswered(() => write(name, expected, proposed));
        if (left) {
          // The client is told nothing about this append; with `end`, its call is ended with OK.
          if (left.end) call.end();
          return;
        }
        const deadline = options.getDeadline()?.toDate().getTime() ?? Infinity;
        // Decided before sleeping: a timer may wake a millisecond before the wall clock reaches the
        // deadline, and the write would then land (and answer) although its answer is due only after it.
        const late = delayMs > 0 && Date.now() + delayMs >= deadline;
        if (delayMs > 0) await sleep(Math.min(delayMs, Math.max(0, deadline - Date.now())));
        if (call.cancelled || call.writableEnded) return;
        const resp = new BatchAppendResp();
        resp.setCorrelationId(correlation);
        resp.setStreamIdentifier(options.getStreamIdentifier());
        if (expected.kind === 'revision') resp.setStreamPosition(expected.revision.toString());
        else if (expected.kind === 'no_stream') resp.setNoStream(new Empty());
        else if (expected.kind === 'stream_exists') resp.setStreamExists(new Empty());
        else resp.setAny(new Empty());
        if (isNotReady()) {
          // Not an RpcException: a status with code 0 and Empty details (ConvertMessage of NotHandled).
          const s = new Status();
          s.setMessage(notReadyBusy ? 'Server Is Busy' : 'Server Is Not Ready');
          const any = new Any();
          any.pack(new Empty().serializeBinary(), 'google.protobuf.Empty');
          s.setDetails(any);
          resp.setError(s);
        } else if (sizeOnDisk(proposed) > MAX_APPEND_SIZE) {
          const tooBig = new MaximumAppendSizeExceeded();
          tooBig.setMaxappendsize(MAX_APPEND_SIZE);
          resp.setError(
            errorStatus(
              grpc.status.INVALID_ARGUMENT,
              'MaximumAppendSizeExceeded',
              tooBig,
              'event_store.client.MaximumAppendSizeExceeded',
            ),
          );
        } else if (late || Date.now() >= deadline) {
          resp.setError(
            errorStatus(
              grpc.status.DEADLINE_EXCEEDED,
              'Timeout',
              new Timeout(),
              'event_store.client.Timeout',
            ),
          );
        } else {
          const res = write(name, expected, proposed);
          if (res.ok) {
            const s = new BatchAppendResp.Success();
            if (res.revision === null) s.setNoStream(new Empty());
            else s.setCurrentRevision(res.revision.toString());
            if (res.position === null) s.setNoPosition(new Empty());
            else {
              const p = new AllStreamPosition();
              p.setCommitPosition(res.position.toString());
              p.setPreparePosition(res.position.toString());
              s.setPosition(p);
            }
            resp.setSuccess(s);
          } else {
            resp.setError(
              errorStatus(
                grpc.status.FAILED_PRECONDITION,
                'WrongExpectedVersion',
                wrongExpectedVersion(expected, res.current),
                'event_store.client.WrongExpectedVersion',
              ),
            );
          }
        }
        call.write(resp);
      });
      call.on('end', () => call.end());
    },
  };

  const featuresImpl: grpc.UntypedServiceImplementation = {
    getSupportedMethods: async (_call: unknown, callback: grpc.sendUnaryData<SupportedMethods>) => {
      await hold();
      const res = new SupportedMethods();
      res.setEventStoreServerVersion('24.10.0');
      const advertised: { path: string }[] = [StreamsService.read, StreamsService.append];
      if (batchAppend) advertised.push(StreamsService.batchAppend);
      res.setMethodsList(
        advertised.map((m) => {
          const [, service, method] = m.path.split('/');
          const sm = new SupportedMethod();
          sm.setServiceName(service!.toLowerCase());
          sm.setMethodName(method!.toLowerCase());
          return sm;
        }),
      );
      callback(null, res);
    },
  };

  let server: grpc.Server;
  /** Kestrel's default, which EventStoreDB keeps: at most 100 calls at once on one HTTP/2 connection. */
  const serverOptions = { 'grpc.max_concurrent_streams': 100 };
  const listen = async (port: number) => {
    server = new grpc.Server(serverOptions);
    server.addService(StreamsService, streamsImpl);
    server.addService(ServerFeaturesService, featuresImpl);
    return new Promise<number>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
  };

  const port = await listen(0);
  // A fresh node already has system events in $all before any user write.
  writeSystemEvent();

  return {
    url: `esdb://127.0.0.1:${port}?tls=false`,
    port,
    async restart({ downMs = 300, notReadyMs = 0 } = {}) {
      server.forceShutdown();
      subs.clear();
      openReads.clear();
      restarts++;
      await sleep(downMs);
      // The port was just released; another process may race for it, so try a few times.
      for (let attempt = 1; ; attempt++) {
        try {
          await listen(port);
          notReadyBusy = false;
          notReadyUntil = Date.now() + notReadyMs;
          break;
        } catch (err) {
          if (attempt >= 20) throw err;
          await sleep(50);
        }
      }
      writeSystemEvent();
    },
    endSubscriptions() {
      const n = subs.size;
      for (const s of [...subs]) {
        subs.delete(s);
        s.call.end();
      }
      return n;
    },
    dropConnections(code = http2.constants.NGHTTP2_CANCEL) {
      // grpc-js keeps its HTTP/2 sessions to itself; a test double may look (checked, not assumed).
      const sessions = (server as unknown as { sessions?: Map<http2.ServerHttp2Session, unknown> }).sessions;
      if (!(sessions instanceof Map)) throw new Error('esdbDouble: @grpc/grpc-js no longer keeps `sessions`');
      const open = [...sessions.keys()];
      for (const session of open) session.destroy(undefined, code);
      return open.length;
    },
    endBatchAppends() {
      const open = [...batchAppendCalls];
      batchAppendCalls.clear();
      for (const call of open) call.end();
      return open.length;
    },
    leaveAppendsUnanswered({ next, count = 1, end = false }) {
      unanswered = count > 0 ? { mode: next, count, end } : null;
    },
    failSubscription(code = grpc.status.UNAVAILABLE, details = 'Subscription dropped by the server') {
      const [first] = subs;
      if (!first) return false;
      subs.delete(first);
      first.call.emit('error', { code, details });
      return true;
    },
    delayAnswers(ms) {
      delayMs = ms;
    },
    notReady(ms, { busy = false } = {}) {
      notReadyBusy = busy;
      notReadyUntil = Date.now() + ms;
    },
    writeSystemEvent,
    stats: () => ({
      subscriptions: subs.size,
      openReads: openReads.size,
      restarts,
      events: log.length,
      calls: { ...calls },
    }),
    async close() {
      subs.clear();
      server.forceShutdown();
    },
  };
}
