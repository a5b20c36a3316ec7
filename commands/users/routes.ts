import Router from '@koa/router';
import type { AppDeps } from '../../src/deps';
import { requireRole } from '../../src/http/auth';
import { runCommand } from '../../src/http/command';
import { decode } from '../../src/http/validation';
import { UpsertUserProfileBody, UserIdPath } from './codecs';
import { userProfile } from './decider';
import { profileStream } from './events';

export function userCommands(deps: AppDeps): Router {
  const router = new Router();
  // Internal/admin upsert of a user profile (the account service owns sign-up; this keeps our copy).
  router.put('/api/v1/users/:user_id', requireRole('service', 'admin'), async (ctx) => {
    const userId = decode(UserIdPath, ctx.params, 'path').user_id.toLowerCase();
    const fields = decode(UpsertUserProfileBody, ctx.request.body, 'body');
    const { state } = await runCommand(
      deps,
      ctx,
      profileStream(userId),
      userProfile,
      { type: 'UpsertUserProfile', userId, fields, now: deps.clock().toISOString() },
      ['user_profiles'],
    );
    // Answered from the write model: the stored profile, exact even if read models lag.
    ctx.body = { id: userId, ...state.profile };
  });
  return router;
}
