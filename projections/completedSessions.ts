import type { Projection } from './runner';

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
    await tx.query(
      `INSERT INTO completed_sessions (session_id, coach_id, client_id, completed_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT DO NOTHING`,
      [d.sessionId, d.coachId, d.clientId, d.completedAt],
    );
  },
};
