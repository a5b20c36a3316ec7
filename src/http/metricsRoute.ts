import { timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import type { Middleware } from 'koa';
import type { AppDeps } from '../deps';
import { authorizationHeaders, principal } from './auth';
import { forbidden } from './errors';

const sameSecret = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * A scraper sends `Authorization: Bearer <METRICS_TOKEN>` (no JWT to renew). Recognised before the rule
 * "a token that is sent must be a valid JWT" (auth.ts), which would otherwise refuse it; only on /metrics.
 */
export function recognizeMetricsToken(metricsToken: string | undefined): Middleware {
  return async (ctx, next) => {
    const bearer = /^Bearer\s+(\S+)$/i.exec(ctx.get('authorization'))?.[1];
    // Every path the router serves as /metrics (it ignores a trailing slash and letter case).
    const metricsPath = ctx.path.replace(/\/$/, '').toLowerCase() === '/metrics';
    // One header only: with two, which one counts would be a guess (auth.ts refuses them: 401).
    const single = authorizationHeaders(ctx.req.rawHeaders) === 1;
    if (metricsToken && metricsPath && bearer && single && sameSecret(bearer, metricsToken))
      ctx.state.metricsScraper = true;
    await next();
  };
}

/** `GET /metrics`: Prometheus text exposition of this instance (src/metrics.ts). */
export function metricsRoutes(deps: AppDeps): Router {
  const router = new Router();
  router.get('/metrics', async (ctx) => {
    // Else a person: an admin JWT.
    if (ctx.state.metricsScraper !== true && !principal(ctx).roles.includes('admin'))
      throw forbidden('metrics need the admin role or METRICS_TOKEN');
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = await deps.metrics.registry.metrics();
  });
  return router;
}
