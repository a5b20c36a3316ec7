import Router from '@koa/router';
import type { AppDeps } from '../src/deps';
import { authenticated, currentPrincipal } from '../src/http/auth';
import { notFound } from '../src/http/errors';
import { icalendar, type CalendarEvent } from '../src/resources/icalendar';
import { CALENDAR_FEED_TOKEN_RE, tokenSha256 } from '../commands/users/calendarFeed';

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
 */
const SESSIONS = `
SELECT * FROM (
SELECT s.id, s.state, s.starts_at AS "startsAt", s.ends_at AS "endsAt", s.coach_id = $1 AS "asCoach",
  s.terms->>'serviceName' AS "serviceName", s.terms->>'clientAddress' AS "clientAddress",
  a.name AS "placeName", a.address AS "placeAddress",
  (CASE WHEN s.coach_id = $1 THEN cl.profile ELSE co.profile END) AS other
FROM sessions s
LEFT JOIN addresses a ON a.id = (CASE WHEN s.terms->>'addressId' ~ '^[0-9a-fA-F-]{36}$'
  THEN (s.terms->>'addressId')::uuid END)
LEFT JOIN user_profiles co ON co.id = s.coach_id
LEFT JOIN user_profiles cl ON cl.id = s.client_id
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
  serviceName: string | null;
  clientAddress: string | null;
  placeName: string | null;
  placeAddress: string | null;
  other: { firstName?: string; lastName?: string } | null;
}

const fullName = (p: Row['other']) => [p?.firstName, p?.lastName].filter((x) => x?.trim()).join(' ');

const eventOf = (r: Row): CalendarEvent => {
  const other = fullName(r.other);
  const name = r.serviceName?.trim() || 'Coaching session';
  return {
    uid: `${r.id}@sessions.coaching`,
    start: new Date(r.startsAt),
    end: new Date(r.endsAt),
    summary: other ? `${name} with ${other}` : name,
    description: `Session ${r.id} (${r.asCoach ? 'you coach' : 'you are the client'}): ${NOTE[r.state] ?? r.state}`,
    location: [r.placeName, r.placeAddress].filter((x) => x?.trim()).join(', ') || (r.clientAddress ?? ''),
    status: STATUS[r.state]!,
  };
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
    ctx.set('Cache-Control', 'private, no-cache');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.type = 'text/calendar; charset=utf-8';
    ctx.body = icalendar('Coaching sessions', rows.rows.map(eventOf), now);
  });
  return router;
}
