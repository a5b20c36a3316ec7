import type { Projection } from './runner';
import { bumped, userScope } from '../src/readModels/readVersions';

/** Bumps the coach's cached profile (its sessionCount) with it. */
const INSERT_COMPLETED = bumped(
  `INSERT INTO completed_sessions (session_id, coach_id, client_id, completed_at) VALUES ($1, $2, $3, $4)
   ON CONFLICT DO NOTHING`,
  'completed_sessions',
);

/** What this read model needs of the session side's `SessionCompleted`. */
interface SessionCompletedData {
  sessionId: string;
  coachId: string;
  clientId: string;
  completedAt: string;
}

/** Read model `completed_sessions`: feeds a coach's `sessionCount`; keyed by session so each counts once. */
export const completedSessionsProjection: Projection = {
  name: 'completed_sessions',
  handles: ['SessionCompleted'],
  async apply(tx, recorded) {
    const d = recorded.data as SessionCompletedData;
    await tx.query(INSERT_COMPLETED, [
      d.sessionId,
      d.coachId,
      d.clientId,
      d.completedAt,
      [userScope(d.coachId)],
    ]);
  },
};
