import Router from '@koa/router';
import * as t from 'io-ts';
import type { Queryable } from '../src/db/database';
import type { AppDeps } from '../src/deps';
import { authenticated, currentPrincipal, requireRole } from '../src/http/auth';
import { ValidationError, notFound } from '../src/http/errors';
import { IsoInstant, Uuid, decode, paging, refine } from '../src/http/validation';
import { sharpenSchema } from '../src/http/openapi/jsonSchema';
import { SESSION_STATES } from '../commands/booking/events';
import { toSessionOut, type SessionRecord } from '../src/resources/session';
import { eventOut, upToRecorded } from './audit';
import { redacted } from './auditRedaction';

const SELECT = `SELECT id, group_id AS "groupId", coach_id AS "coachId", client_id AS "clientId", service_id AS "serviceId",
  state, payment_state AS "paymentState", starts_at AS "startsAt", ends_at AS "endsAt", slot, timezone, terms,
  booked_at AS "bookedAt", reviewed FROM sessions`;

type Row = Omit<SessionRecord, 'startsAt' | 'endsAt' | 'bookedAt'> & {
  startsAt: Date;
  endsAt: Date;
  bookedAt: Date;
};
const fromRow = (r: Row): SessionRecord => ({
  ...r,
  startsAt: new Date(r.startsAt).toISOString(),
  endsAt: new Date(r.endsAt).toISOString(),
  bookedAt: new Date(r.bookedAt).toISOString(),
});

export async function findSession(db: Queryable, id: string): Promise<SessionRecord | null> {
  const row = (await db.query<Row>(`${SELECT} WHERE id = $1`, [id])).rows[0];
  return row ? fromRow(row) : null;
}

const SessionPath = t.type({ session_id: Uuid });

/**
 * An instant (IsoInstant, checked) in UTC, with every digit of its fraction: PostgreSQL reads no offset past
 * 15:59 (`+23:59` made the query fail), and Date.parse keeps milliseconds only.
 */
export const utc = (instant: string) =>
  new Date(Date.parse(instant)).toISOString().replace('Z', `${/\.\d{3}(\d{1,6})/.exec(instant)?.[1] ?? ''}Z`);

const ONE_STATE = `(?:${SESSION_STATES.join('|')})`;
const SessionStates = sharpenSchema(
  refine(
    t.string,
    (s) => s.split(',').every((x) => (SESSION_STATES as readonly string[]).includes(x)),
    'session_states',
    `Input should be one or more of ${SESSION_STATES.join(', ')}, separated by commas`,
  ),
  // The same rule for /openapi.json: a generated client checks it before sending.
  { pattern: `^${ONE_STATE}(?:,${ONE_STATE})*$` },
);
/**
 * Filters of the caller's session list: `state` (comma-separated), `as` (the caller's part), and the
 * start between `from` (inclusive) and `to` (exclusive), so a coach finds what waits for approval and an
 * app lists what is coming up.
 */
export const SessionsFilter = t.partial({
  state: SessionStates,
  as: t.keyof({ client: null, coach: null }),
  from: IsoInstant,
  to: IsoInstant,
});
export function sessionQueries(deps: AppDeps): Router {
  const router = new Router();

  // One session, for its client and its coach (and admins); anyone else learns nothing.
  router.get('/api/v1/session/:session_id', authenticated(), async (ctx) => {
    const id = decode(SessionPath, ctx.params, 'path').session_id.toLowerCase();
    const p = currentPrincipal(ctx);
    const s = await findSession(deps.db, id);
    if (!s || !(s.clientId === p.userId || s.coachId === p.userId || p.roles.includes('admin')))
      throw notFound('session_not_found', 'no such session');
    ctx.body = toSessionOut(s);
  });

  // The caller's sessions, as client or coach, latest start first.
  router.get('/api/v1/sessions', authenticated(), async (ctx) => {
    const { limit, offset } = paging(ctx.query);
    const f = decode(SessionsFilter, ctx.query, 'query');
    if (f.from && f.to && Date.parse(f.to) < Date.parse(f.from))
      throw new ValidationError([
        { loc: ['query', 'to'], msg: 'to should not be before from', type: 'value_error' },
      ]);
    const p = currentPrincipal(ctx);
    const params: unknown[] = [p.userId, limit, offset];
    const where = [
      f.as === 'client'
        ? 'client_id = $1'
        : f.as === 'coach'
          ? 'coach_id = $1'
          : '(client_id = $1 OR coach_id = $1)',
    ];
    if (f.state) where.push(`state = ANY($${params.push(f.state.split(','))}::text[])`);
    if (f.from) where.push(`starts_at >= $${params.push(utc(f.from))}::timestamptz`);
    if (f.to) where.push(`starts_at < $${params.push(utc(f.to))}::timestamptz`);
    const rows = await deps.db.query<Row>(
      `${SELECT} WHERE ${where.join(' AND ')} ORDER BY starts_at DESC, id LIMIT $2 OFFSET $3`,
      params,
    );
    ctx.body = rows.rows.map((r) => toSessionOut(fromRow(r)));
  });

  // Auditors replay a session's booking: every event of its group, and its state at `at`.
  router.get('/api/v1/audit/sessions/:session_id/events', requireRole('admin', 'auditor'), async (ctx) => {
    const id = decode(SessionPath, ctx.params, 'path').session_id.toLowerCase();
    // The same `at` rule as the payment audit: Date.parse alone took '2026-02-30T10:00:00Z' (and '1') and
    // answered the state at some other instant.
    const { at } = decode(t.partial({ at: IsoInstant }), ctx.query, 'query');
    const s = await findSession(deps.db, id);
    if (!s) throw notFound('session_not_found', 'no such session');
    const events = (await deps.store.readStream(`booking-${s.groupId}`)).events.map(redacted);
    const until = at ? Date.parse(at) : Infinity;
    const upTo = upToRecorded(events, until);
    const STATES: Record<string, string> = {
      SessionsBooked: 'new',
      SessionApproved: 'approved',
      SessionDeclined: 'declined',
      SessionCanceled: 'canceled',
      SessionCompleted: 'completed',
      SessionDisputed: 'disputed',
    };
    // The SessionsBooked that created this session (a package's later sessions come in their own).
    const bookedHere = (e: { type: string; data: unknown }) =>
      e.type === 'SessionsBooked' &&
      (e.data as { sessions: { sessionId: string }[] }).sessions.some((x) => x.sessionId === id);
    const concerns = (e: { type: string; data: unknown }) =>
      bookedHere(e) || (e.data as { sessionId?: string }).sessionId === id;
    let stateAt: string | null = null;
    /** When the session was to take place by `at`: as booked, then as each move left it. */
    let slotAt: { slot: string; startsAt: string; endsAt: string } | null = null;
    let last: (typeof upTo)[number] | undefined;
    for (const e of upTo) {
      if (!concerns(e)) continue;
      if (e.type === 'SessionsBooked') {
        const booked = (
          e.data as { sessions: { sessionId: string; slot: string; startsAt: string; endsAt: string }[] }
        ).sessions.find((x) => x.sessionId === id)!;
        slotAt = { slot: booked.slot, startsAt: booked.startsAt, endsAt: booked.endsAt };
      }
      if (e.type === 'SessionRescheduled') {
        const to = (e.data as { to: { slot: string; startsAt: string; endsAt: string } }).to;
        slotAt = { slot: to.slot, startsAt: to.startsAt, endsAt: to.endsAt };
      }
      // A move records the state it leaves the session in (a client's move of an approved one: new).
      stateAt =
        e.type === 'SessionRescheduled' ? (e.data as { state: string }).state : (STATES[e.type] ?? stateAt);
      last = e;
    }
    ctx.body = {
      sessionId: id,
      groupId: s.groupId,
      at: at ? new Date(until).toISOString() : null, // as UTC, like the payment and stream audits
      stateAt,
      slotAt,
      // Who made the session's last change by `at`, and why (a decline's, a cancellation's or a dispute's
      // reason), as the payment audit's `lastChange` says it; a review counts as a change.
      lastChange: last
        ? {
            eventId: last.id,
            type: last.type,
            at: last.createdAt.toISOString(),
            reason: (last.data as { reason?: string }).reason ?? null,
            actor: last.metadata.actor ?? null,
          }
        : null,
      events: events
        .filter(concerns)
        // As every audit shows an event (eventId for its correlation chain, its log position), plus the
        // `id` and `createdAt` this answer had before.
        .map((e) => ({ id: e.id, ...eventOut(e), createdAt: e.createdAt.toISOString() })),
    };
  });
  return router;
}
