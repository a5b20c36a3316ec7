import type { UserProfile } from '../../commands/users/events';
import type { Queryable } from '../db/database';

/**
 * Lookups on the `user_profiles` and `completed_sessions` read models that both sides use: queries to
 * answer, commands only to shape a reply. No command decides on them (see docs/architecture.md).
 */
export async function findProfile(db: Queryable, userId: string): Promise<UserProfile | null> {
  const res = await db.query<{ profile: UserProfile }>('SELECT profile FROM user_profiles WHERE id = $1', [
    userId,
  ]);
  return res.rows[0]?.profile ?? null;
}

/** A coach is a user whose profile has type `coach`. */
export async function findCoach(db: Queryable, userId: string): Promise<UserProfile | null> {
  const p = await findProfile(db, userId);
  return p?.type === 'coach' ? p : null;
}

export const isCoach = async (db: Queryable, userId: string) => (await findCoach(db, userId)) !== null;

/** Completed sessions the user took part in, as coach or client. */
export async function userSessionCount(db: Queryable, userId: string): Promise<number> {
  const res = await db.query<{ n: string }>(
    'SELECT count(*)::text AS n FROM completed_sessions WHERE coach_id = $1 OR client_id = $1',
    [userId],
  );
  return Number(res.rows[0]?.n ?? 0);
}
