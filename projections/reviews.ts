import type { Projection } from './runner';
import { bumped, userScope } from '../src/readModels/readVersions';

/** Bumps the coach's cached profile (its rating) with it. */
const INSERT_REVIEW = bumped(
  `INSERT INTO reviews (id, session_id, coach_id, client_id, service_id, rating, comment, created_at)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
  'reviews',
);

/** What this read model needs of the session side's `SessionReviewed` (stream `session-<sessionId>`). */
interface SessionReviewedData {
  sessionId: string;
  coachId: string;
  clientId: string;
  serviceId: string;
  rating: number;
  comment: string;
  reviewedAt: string;
}

/** Read model `reviews`: one row per reviewed session (the event id is the review id). */
export const reviewsProjection: Projection = {
  name: 'reviews',
  handles: ['SessionReviewed'],
  async apply(tx, recorded) {
    const d = recorded.data as SessionReviewedData;
    // A session is reviewed once; a repeated event for it changes nothing.
    await tx.query(INSERT_REVIEW, [
      recorded.id,
      d.sessionId,
      d.coachId,
      d.clientId,
      d.serviceId,
      d.rating,
      d.comment ?? '',
      d.reviewedAt,
      [userScope(d.coachId)],
    ]);
  },
};
