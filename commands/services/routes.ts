import Router from '@koa/router';
import type { AppDeps } from '../../src/deps';
import { currentPrincipal, requireRole } from '../../src/http/auth';
import { runCommand } from '../../src/http/command';
import { notFound, ValidationError } from '../../src/http/errors';
import { idempotent } from '../../src/http/idempotency';
import { decode } from '../../src/http/validation';
import { hasCoachProfile } from '../users/profile';
import { toServiceOut } from '../../src/resources/service';
import {
  CreateServiceBody,
  RejectServiceBody,
  SERVICE_DEFAULTS,
  ServiceIdPath,
  UpdateServiceBody,
} from './codecs';
import { service, type ServiceState } from './decider';
import type { ServiceFields } from './events';
import { serviceStream } from './events';

const answer = (state: ServiceState) => toServiceOut(state.service!);

export function serviceCommands(deps: AppDeps): Router {
  const router = new Router();
  const now = () => deps.clock().toISOString();

  router.post('/api/v1/coach/services', requireRole('coach'), idempotent(deps), async (ctx) => {
    const body = decode(CreateServiceBody, ctx.request.body, 'body');
    if (body.groupSession && body.maxGroupSize === undefined)
      throw new ValidationError([
        { loc: ['body', 'maxGroupSize'], msg: 'Field required for a group session', type: 'missing' },
      ]);
    const { userId } = currentPrincipal(ctx);
    // The caller's own profile stream says whether it is a coach (not the users read model, which lags).
    if (!(await hasCoachProfile(deps.store, userId)))
      throw notFound('coach_not_found', 'the caller has no coach profile');
    const fields: ServiceFields = { ...SERVICE_DEFAULTS, ...body };
    const serviceId = deps.newId();
    const { state } = await runCommand(
      deps,
      ctx,
      serviceStream(serviceId),
      service,
      { type: 'CreateService', serviceId, coachId: userId, fields, now: now() },
      ['services'],
    );
    ctx.body = answer(state);
  });

  router.put('/api/v1/coach/services/:service_id', requireRole('coach'), async (ctx) => {
    const serviceId = decode(ServiceIdPath, ctx.params, 'path').service_id.toLowerCase();
    const changes = decode(UpdateServiceBody, ctx.request.body, 'body');
    const { state } = await runCommand(
      deps,
      ctx,
      serviceStream(serviceId),
      service,
      { type: 'UpdateService', serviceId, coachId: currentPrincipal(ctx).userId, changes, now: now() },
      ['services'],
    );
    ctx.body = answer(state);
  });

  router.post(
    '/api/v1/admin/services/:service_id/approve',
    requireRole('admin'),
    idempotent(deps),
    async (ctx) => {
      const serviceId = decode(ServiceIdPath, ctx.params, 'path').service_id.toLowerCase();
      const { state } = await runCommand(
        deps,
        ctx,
        serviceStream(serviceId),
        service,
        { type: 'ApproveService', serviceId, now: now() },
        ['services'],
      );
      ctx.body = answer(state);
    },
  );

  router.post(
    '/api/v1/admin/services/:service_id/reject',
    requireRole('admin'),
    idempotent(deps),
    async (ctx) => {
      const serviceId = decode(ServiceIdPath, ctx.params, 'path').service_id.toLowerCase();
      const { reason } = decode(RejectServiceBody, ctx.request.body, 'body');
      const { state } = await runCommand(
        deps,
        ctx,
        serviceStream(serviceId),
        service,
        { type: 'RejectService', serviceId, reason: reason ?? '', now: now() },
        ['services'],
      );
      ctx.body = answer(state);
    },
  );
  return router;
}
