import Router from '@koa/router';
import type { AppDeps } from '../../src/deps';
import { currentPrincipal, requireRole } from '../../src/http/auth';
import { runCommand } from '../../src/http/command';
import { notFound } from '../../src/http/errors';
import { decode } from '../../src/http/validation';
import { hasCoachProfile } from '../users/profile';
import { ScheduleBody } from './codecs';
import { calendar } from './decider';
import { calendarStream } from './events';

export function calendarCommands(deps: AppDeps): Router {
  const router = new Router();
  // A coach publishes its weekly hours and date overrides; this replaces the previous schedule.
  router.put('/api/v1/coach/schedule', requireRole('coach'), async (ctx) => {
    const body = decode(ScheduleBody, ctx.request.body, 'body');
    const { userId } = currentPrincipal(ctx);
    // The caller's own profile stream says whether it is a coach (not the users read model, which lags).
    if (!(await hasCoachProfile(deps.store, userId)))
      throw notFound('coach_not_found', 'create your coach profile first');
    const schedule = { timezone: body.timezone, weekly: body.weekly, overrides: body.overrides ?? {} };
    const { events } = await runCommand(
      deps,
      ctx,
      calendarStream(userId),
      calendar,
      { type: 'SetSchedule', coachId: userId, schedule, now: deps.clock().toISOString() },
      ['calendar'],
    );
    // As stored: overrides of days gone by are dropped (commands/calendar/slots.ts, withoutPastOverrides).
    const [set] = events;
    ctx.body = set?.type === 'ScheduleSet' ? set.data.schedule : schedule;
  });
  return router;
}
