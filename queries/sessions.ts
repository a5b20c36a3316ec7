import Router from '@koa/router';
import * as t from 'io-ts';
import { DateTime } from 'luxon';
import type { BookingTerms } from '../commands/calendar/events';
import { dayMonthYear } from '../commands/calendar/slots';
import type { Queryable } from '../src/db/database';
import type { AppDeps } from '../src/deps';
import { authenticated, currentPrincipal, requireRole } from '../src/http/auth';
import { notFound } from '../src/http/errors';
import { IsoInstant, Uuid, decode, paging } from '../src/http/validation';

/** What the Session reply is made of: a sessions row, or a fresh booking before its row exists. */
export interface SessionRecord {
  id: string;
  groupId: string;
  coachId: string;
  clientId: string;
  serviceId: string;
  state: string;
  paymentState: string;
  startsAt: string;
  endsAt: string;
  slot: string;
  timezone: string;
  terms: BookingTerms;
  bookedAt: string;
  reviewed: boolean;
}

/**
 * The interface document's `Session`, plus `slot` (local), `startsAt`/`endsAt` (UTC) and `reviewed`.
 * `dayAvailability` is the ISO weekday (1 = Monday) of the slot; `expirationDate` is the last day the
 * booking's package can be used (booking day + the service's expiresInDays); both dates are dd/mm/yyyy in
 * the coach's zone, as the interface document writes them.
 */
export const toSessionOut = (s: SessionRecord) => ({
  id: s.id,
  name: s.terms.serviceName,
  state: s.state,
  price: Math.round((s.terms.price / Math.max(1, s.terms.numberOfSessions)) * 100) / 100,
  currency: s.terms.currency,
  dayAvailability: DateTime.fromISO(s.slot).weekday,
  minutesDuration: s.terms.minutesDuration,
  minutesTravel: 0,
  promo: s.terms.promo,
  parking: s.terms.parking,
  parkingDescription: s.terms.parkingDescription,
  orderDescription: s.terms.orderDescription,
  paymentId: s.terms.paymentId,
  coachId: s.coachId,
  clientId: s.clientId,
  serviceId: s.serviceId,
  addressId: s.terms.addressId,
  clientAddress: s.terms.clientAddress,
  clientLocation: s.terms.clientLocation,
  groupId: s.groupId,
  expirationDate: dayMonthYear(
    new Date(Date.parse(s.bookedAt) + s.terms.expiresInDays * 86_400_000),
    s.timezone,
  ),
  paymentState: s.paymentState,
  paymentExpirationAt: dayMonthYear(s.terms.paymentExpiresAt, s.timezone),
  slot: s.slot,
  startsAt: s.startsAt,
  endsAt: s.endsAt,
  reviewed: s.reviewed,
});

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

export async function sessionsOfGroup(db: Queryable, groupId: string): Promise<SessionRecord[]> {
  return (await db.query<Row>(`${SELECT} WHERE group_id = $1 ORDER BY starts_at`, [groupId])).rows.map(
    fromRow,
  );
}

const SessionPath = t.type({ session_id: Uuid });
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
    const p = currentPrincipal(ctx);
    const rows = await deps.db.query<Row>(
      `${SELECT} WHERE client_id = $1 OR coach_id = $1 ORDER BY starts_at DESC, id LIMIT $2 OFFSET $3`,
      [p.userId, limit, offset],
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
    const { events } = await deps.store.readStream(`booking-${s.groupId}`);
    const until = at ? Date.parse(at) : Infinity;
    const upTo = events.filter((e) => e.createdAt.getTime() <= until);
    const STATES: Record<string, string> = {
      SessionsBooked: 'new',
      SessionApproved: 'approved',
      SessionDeclined: 'declined',
      SessionCanceled: 'canceled',
      SessionCompleted: 'completed',
      SessionDisputed: 'disputed',
    };
    let stateAt: string | null = null;
    for (const e of upTo) {
      const d = e.data as { sessionId?: string };
      if (e.type === 'SessionsBooked' || d.sessionId === id) stateAt = STATES[e.type] ?? stateAt;
    }
    ctx.body = {
      sessionId: id,
      groupId: s.groupId,
      at: at ?? null,
      stateAt,
      events: events
        .filter((e) => e.type === 'SessionsBooked' || (e.data as { sessionId?: string }).sessionId === id)
        .map((e) => ({
          id: e.id,
          type: e.type,
          revision: Number(e.revision),
          createdAt: e.createdAt.toISOString(),
          data: e.data,
          metadata: e.metadata,
        })),
    };
  });
  return router;
}
