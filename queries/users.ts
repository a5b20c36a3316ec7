import Router from '@koa/router';
import * as t from 'io-ts';
import type { UserProfile } from '../commands/users/events';
import type { Queryable } from '../src/db/database';
import type { AppDeps } from '../src/deps';
import { authenticated, currentPrincipal } from '../src/http/auth';
import { notFound } from '../src/http/errors';
import { Uuid, decode } from '../src/http/validation';
import { coachRating } from './reviews';

/** The interface document's `User`. */
export interface UserOut {
  id: string;
  username: string;
  name: string;
  surname: string;
  firstName: string;
  lastName: string;
  fullName: string;
  email: string;
  phone: string;
  timezone: string;
  rating: number | null;
  mediaFilename: string;
  mediaPreviewFilename: string;
  mediaType: string;
  roleList: string;
  birthDate: string | null;
  gender: string;
  available: boolean;
  verified: boolean;
  type: string;
  languages: string;
  description: string;
  avatar: string;
  avatarUrl: string;
  mediaUrl: string;
  mediaPreviewUrl: string;
}

const fileName = (url: string) => (url ? (url.split('?')[0]!.split('/').pop() ?? '') : '');

/** User has no room for arrays: `languages` is comma-joined, `roleList` is the user type. */
export const toUserOut = (id: string, p: UserProfile, rating: number | null): UserOut => ({
  id,
  username: p.username,
  name: p.firstName,
  surname: p.lastName,
  firstName: p.firstName,
  lastName: p.lastName,
  fullName: `${p.firstName} ${p.lastName}`.trim(),
  email: p.email,
  phone: p.phone,
  timezone: p.timezone,
  rating,
  mediaFilename: fileName(p.mediaUrl),
  mediaPreviewFilename: fileName(p.mediaPreviewUrl),
  mediaType: p.mediaType,
  roleList: p.type,
  birthDate: p.birthDate,
  gender: p.gender,
  available: p.available,
  verified: p.verified,
  type: p.type,
  languages: p.languages.join(','),
  description: p.description,
  avatar: p.avatarUrl,
  avatarUrl: p.avatarUrl,
  mediaUrl: p.mediaUrl,
  mediaPreviewUrl: p.mediaPreviewUrl,
});

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

const hasBooked = async (db: Queryable, coachId: string, clientId: string) =>
  (await db.query('SELECT 1 FROM coach_clients WHERE coach_id = $1 AND client_id = $2', [coachId, clientId]))
    .rows.length > 0;

export function userQueries(deps: AppDeps): Router {
  const router = new Router();
  // 12. A coach reads a client that has booked it; anyone else gets the same 404 as for an unknown id.
  router.get('/api/v1/coach/client/:client_id', authenticated(), async (ctx) => {
    const clientId = decode(t.type({ client_id: Uuid }), ctx.params, 'path').client_id.toLowerCase();
    const caller = currentPrincipal(ctx);
    const allowed =
      caller.roles.includes('admin') ||
      (caller.roles.includes('coach') && (await hasBooked(deps.db, caller.userId, clientId)));
    const profile = allowed ? await findProfile(deps.db, clientId) : null;
    if (!profile) throw notFound('user_not_found', 'no such client among your clients');
    ctx.body = toUserOut(
      clientId,
      profile,
      profile.type === 'coach' ? await coachRating(deps.db, clientId) : null,
    );
  });
  return router;
}
