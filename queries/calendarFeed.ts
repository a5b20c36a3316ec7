import { createHash } from 'node:crypto';
import Router from '@koa/router';
import type { AppDeps } from '../src/deps';
import { authenticated, currentPrincipal } from '../src/http/auth';
import { notFound } from '../src/http/errors';
import { icalendar, type CalendarEvent } from '../src/resources/icalendar';
import { CALENDAR_FEED_TOKEN_RE, tokenSha256 } from '../commands/users/calendarFeed';
import { placeKey } from '../commands/calendar/slots';
import { uuidFrom } from '../commands/notifications/sessionNotices';

/** How far back a feed reaches: calendar apps keep what they saw, and a feed of years would only grow. */
export const CALENDAR_FEED_PAST_DAYS = 90;
/** The most sessions one feed lists (the earliest first within the window). */
export const CALENDAR_FEED_MAX_EVENTS = 5000;

const STATUS: Record<string, CalendarEvent['status'] | undefined> = {
  new: 'TENTATIVE',
  approved: 'CONFIRMED',
  completed: 'CONFIRMED',
  disputed: 'CONFIRMED',
};

const NOTE: Record<string, string> = {
  new: "waiting for the coach's approval",
  approved: 'approved',
  completed: 'completed',
  disputed: 'disputed',
};

/**
 * The caller's sessions that take time in a calendar, with the other party's name and the place. Over the
 * limit, the past ones go first, the longest ago first: what is still to come is what a calendar is for.
 * A coach's group seat (its hold is `shared`) comes with its slot's count of changes: the sum over the
 * slot's sessions in any state (a canceled seat counts its cancellation) of their changes plus one (a seat
 * that joins counts one), and the slot's last change.
 */
const SESSIONS = `
SELECT * FROM (
SELECT s.id, s.state, s.starts_at AS "startsAt", s.ends_at AS "endsAt", s.coach_id = $1 AS "asCoach",
  s.service_id AS "serviceId", s.revision, s.updated_at AS "updatedAt",
  s.terms->>'serviceName' AS "serviceName", s.terms->>'clientAddress' AS "clientAddress",
  s.terms->>'addressId' AS "addressId", s.terms->'clientLocation' AS "clientLocation",
  COALESCE(s.terms->'place'->>'name', a.name) AS "placeName",
  COALESCE(s.terms->'place'->>'address', a.address) AS "placeAddress",
  (CASE WHEN s.coach_id = $1 THEN cl.profile ELSE co.profile END) AS other,
  slot.changes AS "slotChanges", slot.updated AS "slotUpdatedAt"
FROM sessions s
LEFT JOIN addresses a ON a.id = (CASE WHEN s.terms->>'addressId' ~ '^[0-9a-fA-F-]{36}$'
  THEN (s.terms->>'addressId')::uuid END)
LEFT JOIN user_profiles co ON co.id = s.coach_id
LEFT JOIN user_profiles cl ON cl.id = s.client_id
LEFT JOIN slot_holds h ON h.session_id = s.id
LEFT JOIN LATERAL (
  SELECT sum(x.revision + 1)::int AS changes, max(x.updated_at) AS updated FROM sessions x
  WHERE x.coach_id = s.coach_id AND x.service_id = s.service_id AND x.starts_at = s.starts_at
    AND x.ends_at = s.ends_at
) slot ON s.coach_id = $1 AND h.shared IS TRUE
WHERE (s.client_id = $1 OR s.coach_id = $1) AND s.state = ANY($2::text[]) AND s.ends_at >= $3
ORDER BY s.ends_at < $5, (CASE WHEN s.ends_at >= $5 THEN s.starts_at END), s.starts_at DESC, s.id
LIMIT $4
) listed
ORDER BY "startsAt", id`;

interface Row {
  id: string;
  state: string;
  startsAt: Date;
  endsAt: Date;
  asCoach: boolean;
  serviceId: string;
  revision: number;
  updatedAt: Date;
  serviceName: string | null;
  clientAddress: string | null;
  addressId: string | null;
  clientLocation: { lat: number; lng: number } | null;
  placeName: string | null;
  placeAddress: string | null;
  other: { firstName?: string; lastName?: string } | null;
  /** Set for a coach's group seat: its slot's count of changes and last change. */
  slotChanges: number | null;
  slotUpdatedAt: Date | null;
}

const fullName = (p: Row['other']) => [p?.firstName, p?.lastName].filter((x) => x?.trim()).join(' ');

const placeOf = (r: Row) =>
  [r.placeName, r.placeAddress].filter((x) => x?.trim()).join(', ') || (r.clientAddress ?? '');

const serviceOf = (r: Row) => r.serviceName?.trim() || 'Coaching session';

const eventOf = (r: Row): CalendarEvent => {
  const other = fullName(r.other);
  const name = serviceOf(r);
  return {
    uid: `${r.id}@sessions.coaching`,
    start: new Date(r.startsAt),
    end: new Date(r.endsAt),
    summary: other ? `${name} with ${other}` : name,
    description: `Session ${r.id} (${r.asCoach ? 'you coach' : 'you are the client'}): ${NOTE[r.state] ?? r.state}`,
    location: placeOf(r),
    status: STATUS[r.state]!,
    sequence: r.revision,
    lastModified: new Date(r.updatedAt),
  };
};

/**
 * A coach's group slot (the seats of one service at one time and place) as one event: its UID is the
 * slot's, not a seat's, so seats joining and leaving update it; its SEQUENCE is the slot's count of changes.
 * On as soon as one seat is approved (or held); tentative while every seat waits for approval.
 */
const slotEventOf = (seats: Row[]): CalendarEvent => {
  const first = seats[0]!;
  const start = new Date(first.startsAt);
  const key = placeKey(first.addressId, first.clientLocation);
  const name = serviceOf(first);
  const names = seats.map((r) => fullName(r.other) || 'A client');
  const confirmed = seats.some((r) => STATUS[r.state] === 'CONFIRMED');
  return {
    uid: `slot-${uuidFrom('calendar-feed-slot', first.serviceId, start.toISOString(), key)}@sessions.coaching`,
    start,
    end: new Date(first.endsAt),
    summary: seats.length === 1 ? `${name} with ${names[0]}` : `${name} with ${seats.length} clients`,
    description: [
      `Group session (you coach), ${seats.length} ${seats.length === 1 ? 'client' : 'clients'}:`,
      ...seats.map((r, i) => `${names[i]}: ${NOTE[r.state] ?? r.state} (session ${r.id})`),
    ].join('\n'),
    location: seats.map(placeOf).find((p) => p) ?? '',
    status: confirmed ? 'CONFIRMED' : 'TENTATIVE',
    sequence: Math.max(0, Number(first.slotChanges) - 1),
    lastModified: new Date(first.slotUpdatedAt ?? first.updatedAt),
  };
};

/** The events of the listed sessions: one per session, but one per slot for a coach's group seats. */
function eventsOf(rows: Row[]): CalendarEvent[] {
  const slots = new Map<string, Row[]>();
  const events: (CalendarEvent | Row[])[] = [];
  for (const r of rows) {
    if (r.slotChanges === null) {
      events.push(eventOf(r));
      continue;
    }
    const key = [
      r.serviceId,
      new Date(r.startsAt).toISOString(),
      new Date(r.endsAt).toISOString(),
      placeKey(r.addressId, r.clientLocation),
    ].join(' ');
    const seats = slots.get(key);
    if (seats) seats.push(r);
    else {
      const group = [r];
      slots.set(key, group);
      events.push(group);
    }
  }
  return events.map((e) => (Array.isArray(e) ? slotEventOf(e) : e));
}

/** Whether an `If-None-Match` list names the tag (`*`, or the tag, weak or not: RFC 9110 weak comparison). */
const matchesTag = (header: string, etag: string) => {
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return !!header && header.split(',').some((t) => t.trim() === '*' || opaque(t) === opaque(etag));
};

/** The feed itself: no token header (calendar apps send none); the address is the secret. */
export function calendarFeedQueries(deps: AppDeps): Router {
  const router = new Router();

  // Whether the caller has a feed open (its address cannot be shown again: only its hash is kept).
  router.get('/api/v1/calendar/feed', authenticated(), async (ctx) => {
    const { userId } = currentPrincipal(ctx);
    const row = await deps.db.query<{ issuedAt: Date }>(
      'SELECT issued_at AS "issuedAt" FROM calendar_feeds WHERE user_id = $1',
      [userId],
    );
    const issuedAt = row.rows[0]?.issuedAt;
    ctx.body = { open: !!issuedAt, issuedAt: issuedAt ? new Date(issuedAt).toISOString() : null };
  });

  router.get('/api/v1/calendar/feed/:file', async (ctx) => {
    const token = /^(.*)\.ics$/.exec(ctx.params.file ?? '')?.[1] ?? '';
    // A malformed address is answered as an unknown one: nothing tells a guesser which part was wrong.
    const unknown = () => notFound('feed_not_found', 'no calendar feed at this address');
    if (!CALENDAR_FEED_TOKEN_RE.test(token)) throw unknown();
    const owner = await deps.db.query<{ userId: string }>(
      'SELECT user_id AS "userId" FROM calendar_feeds WHERE token_sha256 = $1',
      [tokenSha256(token)],
    );
    const userId = owner.rows[0]?.userId;
    if (!userId) throw unknown();
    const now = deps.clock();
    const since = new Date(now.getTime() - CALENDAR_FEED_PAST_DAYS * 86_400_000);
    const rows = await deps.db.query<Row>(SESSIONS, [
      userId,
      Object.keys(STATUS),
      since.toISOString(),
      CALENDAR_FEED_MAX_EVENTS,
      now.toISOString(),
    ]);
    const body = icalendar('Coaching sessions', eventsOf(rows.rows), now);
    // A weak tag of the text without its DTSTAMPs (the time of this copy): a poll of an unchanged feed is
    // answered 304, without the body.
    const same = body.replace(/^DTSTAMP:.*\r\n/gm, '');
    const etag = `W/"${createHash('sha256').update(same).digest('base64url').slice(0, 32)}"`;
    ctx.set('Cache-Control', 'private, no-cache');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('ETag', etag);
    if (matchesTag(ctx.get('If-None-Match'), etag)) {
      ctx.status = 304;
      return;
    }
    ctx.type = 'text/calendar; charset=utf-8';
    ctx.body = body;
  });
  return router;
}
