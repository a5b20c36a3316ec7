import { timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import type { Context } from 'koa';
import type { AppDeps } from '../deps';
import { principal } from './auth';
import { forbidden } from './errors';

const sameSecret = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** A scraper sends `Authorization: Bearer <METRICS_TOKEN>` (no JWT to renew); a person an admin JWT. */
function mayScrape(ctx: Context, metricsToken: string | undefined): boolean {
  const bearer = /^Bearer\s+(\S+)$/i.exec(ctx.get('authorization'))?.[1];
  if (metricsToken && bearer && sameSecret(bearer, metricsToken)) return true;
  if (!principal(ctx).roles.includes('admin'))
    throw forbidden('metrics need the admin role or METRICS_TOKEN');
  return true;
}

/** `GET /metrics`: Prometheus text exposition of this instance (src/metrics.ts). */
export function metricsRoutes(deps: AppDeps): Router {
  const router = new Router();
  router.get('/metrics', async (ctx) => {
    mayScrape(ctx, deps.config.metricsToken);
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = await deps.metrics.registry.metrics();
  });
  return router;
}
