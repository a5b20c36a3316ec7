import Router from '@koa/router';
import type { Schedule } from '../commands/calendar/events';
import { withoutPastOverrides } from '../commands/calendar/slots';
import type { AppDeps } from '../src/deps';
import { currentPrincipal, requireRole } from '../src/http/auth';
import { notFound } from '../src/http/errors';
import { isCoach } from '../src/readModels/users';

/**
 * The calling coach's schedule as last published, so that a coach (a new device, an app that adds one day
 * off) can change it: PUT replaces the whole schedule, overrides included. Read-your-writes: the PUT waits
 * for the `calendar` projection, whose table this reads.
 */
export function scheduleQueries(deps: AppDeps): Router {
  const router = new Router();
  router.get('/api/v1/coach/schedule', requireRole('coach'), async (ctx) => {
    const { userId } = currentPrincipal(ctx);
    if (!(await isCoach(deps.db, userId)))
      throw notFound('coach_not_found', 'create your coach profile first');
    const res = await deps.db.query<{ schedule: Schedule }>(
      'SELECT schedule FROM coach_calendars WHERE coach_id = $1',
      [userId],
    );
    // None published yet: no hours, in UTC (as availability reads a coach without a schedule).
    const s = res.rows[0]?.schedule ?? { timezone: 'UTC', weekly: {}, overrides: {} };
    // Days that went by since it was set are left out, as a PUT drops them.
    ctx.body = withoutPastOverrides(
      { timezone: s.timezone, weekly: s.weekly, overrides: s.overrides ?? {} },
      deps.clock(),
    );
  });
  return router;
}
