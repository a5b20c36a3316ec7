import Router from '@koa/router';
import { clientPackages } from './packages';
import * as t from 'io-ts';
import type { Queryable } from '../src/db/database';
import { findProfile } from '../src/readModels/users';
import { guestUserOut, toUserOut } from '../src/resources/user';
import type { AppDeps } from '../src/deps';
import { authenticated, currentPrincipal } from '../src/http/auth';
import { notFound } from '../src/http/errors';
import { Uuid, decode } from '../src/http/validation';
import { coachRating } from './reviews';

const hasBooked = async (db: Queryable, coachId: string, clientId: string) =>
  (await db.query('SELECT 1 FROM coach_clients WHERE coach_id = $1 AND client_id = $2', [coachId, clientId]))
    .rows.length > 0;

const hasBookedAnyone = async (db: Queryable, clientId: string) =>
  (await db.query('SELECT 1 FROM sessions WHERE client_id = $1 LIMIT 1', [clientId])).rows.length > 0;

export function userQueries(deps: AppDeps): Router {
  const router = new Router();
  // 12. A coach reads a client that has booked it; anyone else gets the same 404 as for an unknown id.
  router.get('/api/v1/coach/client/:client_id', authenticated(), async (ctx) => {
    const clientId = decode(t.type({ client_id: Uuid }), ctx.params, 'path').client_id.toLowerCase();
    const caller = currentPrincipal(ctx);
    const admin = caller.roles.includes('admin');
    const booked = admin
      ? await hasBookedAnyone(deps.db, clientId)
      : caller.roles.includes('coach') && (await hasBooked(deps.db, caller.userId, clientId));
    const profile = admin || booked ? await findProfile(deps.db, clientId) : null;
    // A client may book before it has a profile: it is then shown as a guest, not as unknown.
    if (!profile && !booked) throw notFound('user_not_found', 'no such client among your clients');
    ctx.body = {
      ...(profile
        ? toUserOut(clientId, profile, profile.type === 'coach' ? await coachRating(deps.db, clientId) : null)
        : guestUserOut(clientId)),
      // Added: the client's packages with this coach (all coaches for an admin) and the sessions left.
      packages: await clientPackages(
        deps.db,
        clientId,
        caller.roles.includes('admin') ? {} : { coachId: caller.userId },
        deps.clock(),
      ),
    };
  });
  // Added: the stored profile, as PUT answers it, for the user itself, the account service and admins (others
  // see users through 12 and 13). PUT waits for this read model, so a GET after it reads the change.
  router.get('/api/v1/users/:user_id', authenticated(), async (ctx) => {
    const userId = decode(t.type({ user_id: Uuid }), ctx.params, 'path').user_id.toLowerCase();
    const caller = currentPrincipal(ctx);
    // Another user's profile is answered as an unknown id's (docs/api.md, Conventions).
    const allowed = caller.userId === userId || caller.roles.some((r) => r === 'service' || r === 'admin');
    const profile = allowed ? await findProfile(deps.db, userId) : null;
    if (!profile) throw notFound('user_not_found', 'no profile of this user for you to read');
    ctx.body = { id: userId, ...profile };
  });
  return router;
}
