import Router from '@koa/router';
import * as t from 'io-ts';
import type { Queryable } from '../src/db/database';
import type { AppDeps } from '../src/deps';
import { notFound } from '../src/http/errors';
import { Uuid, decode, paging } from '../src/http/validation';
import { isCoach } from '../src/readModels/users';
import type { ReviewOut } from '../src/resources/review';

/**
 * SQL of a coach's average rating, rounded to 2 decimals by PostgreSQL on the exact decimal average (half
 * away from zero): rounding its binary double instead took 1.025 (41 / 40) for 102.4999… hundredths, 1.02.
 */
export const AVERAGE_RATING = 'round(avg(rating), 2)::text';

/** Average rating of a coach rounded to 2 decimals, or null while nobody has reviewed it. */
export async function coachRating(db: Queryable, coachId: string): Promise<number | null> {
  const res = await db.query<{ avg: string | null }>(
    `SELECT ${AVERAGE_RATING} AS avg FROM reviews WHERE coach_id = $1`,
    [coachId],
  );
  return ratingOf(res.rows[0]?.avg ?? null);
}

/** An average rating as shown (`AVERAGE_RATING`'s text): 2 decimals, null while nobody has reviewed. */
export const ratingOf = (avg: string | null): number | null => (avg == null ? null : Number(avg));

export async function listReviews(
  db: Queryable,
  coachId: string,
  limit: number,
  offset: number,
): Promise<ReviewOut[]> {
  const res = await db.query<Omit<ReviewOut, 'createdAt'> & { createdAt: Date | string }>(
    `SELECT r.id, r.session_id AS "sessionId", r.service_id AS "serviceId", r.client_id AS "clientId",
            trim(coalesce(p.profile->>'firstName', '') || ' ' || coalesce(p.profile->>'lastName', '')) AS "clientName",
            r.rating, r.comment, r.created_at AS "createdAt"
       FROM reviews r LEFT JOIN user_profiles p ON p.id = r.client_id
      WHERE r.coach_id = $1 ORDER BY r.created_at DESC, r.id LIMIT $2 OFFSET $3`,
    [coachId, limit, offset],
  );
  return res.rows.map((r) => ({ ...r, createdAt: new Date(r.createdAt).toISOString() }));
}

export function reviewQueries(deps: AppDeps): Router {
  const router = new Router();
  // 9. Reviews of a coach, newest first (the path names a coach id although it sits under /service).
  router.get('/api/v1/service/:coach_id/reviews', async (ctx) => {
    const coachId = decode(t.type({ coach_id: Uuid }), ctx.params, 'path').coach_id.toLowerCase();
    const { limit, offset } = paging(ctx.query);
    if (!(await isCoach(deps.db, coachId))) throw notFound('coach_not_found', 'no such coach');
    ctx.body = await listReviews(deps.db, coachId, limit, offset);
  });
  return router;
}
