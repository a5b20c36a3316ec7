import { Readable } from 'node:stream';
import Router from '@koa/router';
import * as t from 'io-ts';
import type { AppDeps } from '../src/deps';
import { START, comparePositions, type Position, type RecordedEvent } from '../src/eventstore/types';
import { requireRole } from '../src/http/auth';
import { ValidationError, notFound } from '../src/http/errors';
import { IntFromString, IsoInstant, decode, refine } from '../src/http/validation';
import { sharpenSchema } from '../src/http/openapi/jsonSchema';
import { redacted, redactEventData } from './auditRedaction';
import { AuditEventOut } from '../src/resources/codecs';
import { STREAM_KINDS, foldStream, streamKind, toJsonSafe } from './auditStreams';

/** A log position as text: `123` on the SQL stores, `commit/prepare` on EventStoreDB when they differ. */
export const formatPosition = (p: Position) =>
  p.commit === p.prepare ? p.commit.toString() : `${p.commit}/${p.prepare}`;
const parsePosition = (s: string): Position => {
  const [c, p = c] = s.split('/') as [string, string?];
  return { commit: BigInt(c), prepare: BigInt(p!) };
};
/** The largest log position there is: positions are signed 64-bit numbers on every store. */
const MAX_POSITION = 2n ** 63n - 1n;
const POSITION_RE = /^\d{1,20}(\/\d{1,20})?$/;
const PositionText = sharpenSchema(
  refine(
    t.string,
    (s) => POSITION_RE.test(s) && s.split('/').every((n) => BigInt(n) <= MAX_POSITION),
    'position',
    'Input should be a log position as answered by the export, e.g. 1234',
  ),
  { pattern: POSITION_RE.source },
);

/** An instant (IsoInstant, checked) in nanoseconds since 1970: Date.parse keeps milliseconds only. */
const nanosOf = (instant: string): bigint => {
  const below = (/\.\d{3}(\d{1,6})/.exec(instant)?.[1] ?? '').padEnd(6, '0');
  return BigInt(Date.parse(instant)) * 1_000_000n + BigInt(below);
};
/** a / b rounded up (BigInt division rounds toward zero, which is up below zero). */
const ceilDiv = (a: bigint, b: bigint) => (a % b > 0n ? a / b + 1n : a / b);

/**
 * A stream's events recorded at or before `until`: the longest prefix of them, not a filter. Each event was
 * appended after the ones before it, so if the store's clock stepped back (a failover to a node whose clock
 * is behind), an event recorded "earlier" than its predecessor still did not exist before it, and folding
 * it without its predecessor would make a state no revision of the stream had.
 */
export function upToRecorded<E extends { createdAt: Date }>(events: E[], until: number): E[] {
  const after = events.findIndex((e) => e.createdAt.getTime() > until);
  return after < 0 ? events : events.slice(0, after);
}

/** One event as auditors see it (stream reads, the export's lines, the chain), secrets redacted. */
export const eventOut = (e: RecordedEvent) => ({
  eventId: e.id,
  position: formatPosition(e.position),
  stream: e.streamName,
  revision: Number(e.revision),
  type: e.type,
  data: redactEventData(e.type, e.data),
  metadata: {
    ...e.metadata,
    actor: e.metadata.actor ?? null,
    correlationId: e.metadata.correlationId ?? null,
    causationId: e.metadata.causationId ?? null,
  },
  recordedAt: e.createdAt.toISOString(),
});

const CLOCK = {
  clock: 'recorded',
  clockNote:
    "`at` compares each event's recorded time (recordedAt: when the event store committed it), not the " +
    'time a command carried in its data',
};

const StreamPath = t.type({
  stream: refine(
    t.string,
    (s) => /^[a-z][a-z-]*-[\w-]{1,200}$/i.test(s),
    'stream',
    'Input should be a stream name, e.g. payment-<uuid>',
  ),
});
export const StreamQuery = t.partial({ at: IsoInstant, revision: IntFromString(0, Number.MAX_SAFE_INTEGER) });
export const ExportQuery = t.partial({
  from: IsoInstant,
  to: IsoInstant,
  // The bounds are said in /openapi.json too (`maxLength`).
  stream_prefix: sharpenSchema(
    refine(t.string, (s) => s.length <= 200, 'stream_prefix', 'Input should be at most 200 characters'),
    { maxLength: 200 },
  ),
  type: sharpenSchema(
    refine(t.string, (s) => s.length <= 1000, 'type', 'Input should be event types separated by commas'),
    { maxLength: 1000 },
  ),
  after: PositionText,
});
const EventPath = t.type({
  event_id: refine(
    t.string,
    (s) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s),
    'uuid',
    'Input should be a UUID',
  ),
});

export const StreamAuditCodec = t.type({
  stream: t.string,
  kind: t.string,
  at: t.union([t.string, t.null]),
  revision: t.union([t.number, t.null]),
  currentRevision: t.number,
  clock: t.literal('recorded'),
  clockNote: t.string,
  events: t.array(AuditEventOut),
  state: t.unknown,
});
export const AuditChainCodec = t.type({
  event: AuditEventOut,
  correlationId: t.string,
  causes: t.array(AuditEventOut),
  effects: t.array(AuditEventOut),
});

/** Events per read from the store while exporting: what the export holds in memory at most. */
const EXPORT_PAGE = 500;

export function auditQueries(deps: AppDeps): Router {
  const router = new Router();
  const auditor = requireRole('admin', 'auditor');

  // Time travel: any stream, as of an instant or a revision, folded by its aggregate's own evolve.
  router.get('/api/v1/audit/streams/:stream', auditor, async (ctx) => {
    const given = decode(StreamPath, ctx.params, 'path').stream;
    // The write side names streams in lower case (ids are lower-cased uuids), so `payment-<UPPER-UUID>` is
    // the stream `payment-<uuid>`, as the payment and session audits read their ids. The name as given is
    // read too when the lower-case one is empty, so no stream is out of reach.
    let stream = given.toLowerCase();
    const q = decode(StreamQuery, ctx.query, 'query');
    if (q.at !== undefined && q.revision !== undefined)
      throw new ValidationError([
        { loc: ['query', 'revision'], msg: 'Give either at or revision, not both', type: 'value_error' },
      ]);
    const kind = streamKind(stream);
    if (!kind)
      throw notFound(
        'stream_not_found',
        `no stream kind ${stream}; kinds: ${STREAM_KINDS.map((k) => `${k.prefix}<id>`).join(', ')}`,
      );
    let read = await deps.store.readStream(stream);
    if (!read.events.length && given !== stream) {
      const asGiven = await deps.store.readStream(given);
      if (asGiven.events.length) [read, stream] = [asGiven, given];
    }
    const { revision } = read;
    // Redacted before folding, so the state shows no secret the events hide.
    const events = read.events.map(redacted);
    if (!events.length) throw notFound('stream_not_found', `stream ${stream} has no events`);
    const until = q.at !== undefined ? Date.parse(q.at) : Infinity;
    const upTo = upToRecorded(
      events.filter((e) => q.revision === undefined || Number(e.revision) <= q.revision),
      until,
    );
    const last = upTo[upTo.length - 1];
    ctx.body = {
      stream,
      kind: kind.kind,
      at: q.at !== undefined ? new Date(until).toISOString() : null,
      revision: last ? Number(last.revision) : null,
      currentRevision: Number(revision),
      ...CLOCK,
      events: upTo.map(eventOut),
      state: last
        ? toJsonSafe(
            foldStream(
              kind.fold,
              upTo.map((e) => ({ type: e.type, data: e.data })),
            ),
          )
        : null,
    };
  });

  // History export: NDJSON in log order, read in pages and written as the client takes it.
  router.get('/api/v1/audit/events', auditor, async (ctx) => {
    const q = decode(ExportQuery, ctx.query, 'query');
    if (q.from !== undefined && q.to !== undefined && nanosOf(q.to) < nanosOf(q.from))
      throw new ValidationError([
        { loc: ['query', 'to'], msg: 'to should not be before from', type: 'value_error' },
      ]);
    // recordedAt is to the millisecond: a `from` with digits below it starts at the next millisecond.
    const from = q.from !== undefined ? Number(ceilDiv(nanosOf(q.from), 1_000_000n)) : -Infinity;
    const to = q.to !== undefined ? Date.parse(q.to) : Infinity;
    const types = q.type ? new Set(q.type.split(',').map((s) => s.trim())) : null;
    // Stream names are lower case (ids are lower-cased uuids): `payment-<UPPER-UUID>` is that payment's prefix.
    const prefix = (q.stream_prefix ?? '').toLowerCase();
    // A snapshot: events up to the head when the request came, so the answer ends.
    const head = await deps.store.headPosition();
    const store = deps.store;
    const log = deps.log;
    // The first page is read before the answer starts: a store away at that moment is a 503 to retry, not a
    // connection closed without an answer.
    const start = q.after !== undefined ? parsePosition(q.after) : START;
    let first: RecordedEvent[] | undefined = await store.readAll(start, EXPORT_PAGE);
    async function* lines() {
      let after = start;
      for (;;) {
        const page = first ?? (await store.readAll(after, EXPORT_PAGE));
        first = undefined;
        let chunk = '';
        for (const e of page) {
          if (comparePositions(e.position, head) > 0) {
            if (chunk) yield chunk;
            return;
          }
          const at = e.createdAt.getTime();
          if (
            at >= from &&
            at <= to &&
            e.streamName.toLowerCase().startsWith(prefix) &&
            (!types || types.has(e.type))
          )
            chunk += JSON.stringify(eventOut(e)) + '\n';
        }
        if (chunk) yield chunk; // the stream waits here until the client has taken it
        if (page.length < EXPORT_PAGE) return;
        after = page[page.length - 1]!.position;
      }
    }
    const body = Readable.from(lines(), { objectMode: false, highWaterMark: 64 * 1024 });
    // Headers are gone once the body flows: a failure ends the response short; resume with `after`.
    body.on('error', (err) => log.error('audit export failed mid-stream', { error: String(err) }));
    ctx.type = 'application/x-ndjson';
    ctx.set('Cache-Control', 'no-store');
    ctx.body = body;
  });

  // Correlation chain: what caused an event (up to the request), and everything it caused in turn.
  router.get('/api/v1/audit/events/:event_id/chain', auditor, async (ctx) => {
    const { event_id } = decode(EventPath, ctx.params, 'path');
    const store = deps.store;
    const event = await store.readEvent(event_id.toLowerCase());
    if (!event) throw notFound('event_not_found', `no event ${event_id}`);
    // Follow-ups carry the correlation of their cause, or the cause's id when it had none.
    const correlationId = event.metadata.correlationId ?? event.id;
    const group = await store.readCorrelated(correlationId);
    if (!event.metadata.correlationId) group.unshift(event);
    const byId = new Map(group.map((e) => [e.id, e]));

    const causes: RecordedEvent[] = [];
    for (let id = event.metadata.causationId; id && causes.length < 1000;) {
      const cause = byId.get(id) ?? (await store.readEvent(id));
      if (!cause || causes.includes(cause)) break;
      causes.unshift(cause);
      id = cause.metadata.causationId;
    }
    const effects = new Set<string>([event.id]);
    for (const e of group)
      if (e.metadata.causationId && effects.has(e.metadata.causationId)) effects.add(e.id);
    effects.delete(event.id);
    ctx.body = {
      event: eventOut(event),
      correlationId,
      causes: causes.map(eventOut),
      effects: group.filter((e) => effects.has(e.id)).map(eventOut),
    };
  });

  return router;
}
