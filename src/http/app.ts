import Koa from 'koa';
import Router from '@koa/router';
import type { AppDeps } from '../deps';
import { jwtMiddleware, presentTokenMustBeValid, principal } from './auth';
import { emptyJsonBodyIsEmptyObject, errorHandler, requestContext, requireJsonBody } from './middleware';
import { jsonBody } from './jsonBody';
import { inputHygiene } from './hygiene';
import { takesMultipart } from './multipart';
import { HttpError } from './errors';
import { cors } from './cors';
import { routers } from '../routes';
import { metricsRoutes, recognizeMetricsToken } from './metricsRoute';
import { openApiRoutes } from './openapi/serve';
import { adminAssetRoutes } from './adminPage';
import { version } from '../../package.json';

const MOUNTED = new WeakMap<Koa, Router[]>();
/** Every router an app serves (what /openapi.json describes; tests enumerate routes with it). */
export const mountedRouters = (app: Koa): Router[] => MOUNTED.get(app) ?? [];

/** How long `/healthz` waits for the database, the event store and the leases. */
const HEALTH_PROBE_MS = 3_000;

export function createApp(deps: AppDeps): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true; // errors are logged by errorHandler, once, without leaking to the client
  app.use(requestContext(deps.log));
  app.use(cors(deps.config.corsOrigins));
  app.use(deps.metrics.http);
  app.use(errorHandler(deps.log));
  const apiRouters = routers(deps);
  const uploads = apiRouters.flatMap((r) => r.stack).filter((layer) => takesMultipart(layer.stack));
  /** Every route the app serves (mounted below). */
  const root = new Router();
  // A path no route takes is 404, a method its path does not take 405 (with Allow), whatever the body or the
  // token: the checks of a request's body and token below are the routes', so they are skipped for it (a
  // text body sent to an unknown path was 415, a garbled token there 401, a PUT with a form body 415).
  app.use(async (ctx, next) => {
    ctx.state.unrouted = !root.match(ctx.path, ctx.method).route;
    await next();
  });
  const routed =
    (mw: Koa.Middleware): Koa.Middleware =>
    (ctx, next) =>
      ctx.state.unrouted ? next() : mw(ctx, next);
  app.use(
    routed(
      requireJsonBody((method, path) => uploads.some((l) => l.methods.includes(method) && l.match(path))),
    ),
  );
  // Every JSON type requireJsonBody lets through is read (a parser knowing only a few `+json` types handed any
  // other, application/merge-patch+json, to the routes as `{}`, its fields silently dropped), as UTF-8 only.
  app.use(routed(jsonBody()));
  app.use(routed(emptyJsonBodyIsEmptyObject()));
  app.use(routed(inputHygiene()));
  app.use(routed(jwtMiddleware(deps.config)));
  app.use(routed(recognizeMetricsToken(deps.config.metricsToken)));
  app.use(routed(presentTokenMustBeValid()));

  const health = new Router();
  /**
   * A probe that gets no answer within HEALTH_PROBE_MS fails: a frozen database or a blackholed route keeps
   * its connections open and would hold the answer until TCP keepalive gives up (minutes), past any load
   * balancer's probe timeout, which then learns nothing of why.
   */
  const withinProbeTime = <T>(probe: Promise<T>) => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${HEALTH_PROBE_MS / 1000} s`)),
        HEALTH_PROBE_MS,
      );
    });
    return Promise.race([probe, late]).finally(() => clearTimeout(timer));
  };
  health.get('/healthz', async (ctx) => {
    // Public (load balancers probe it): why something is down (driver errors naming hosts and users, a
    // failed event's stream with a user's id) is shown to an admin token only.
    const detailed = ctx.get('authorization') ? principal(ctx).roles.includes('admin') : false;
    const check = async (f: () => Promise<unknown>) =>
      withinProbeTime(f()).then(
        () => 'ok',
        (e: unknown) => (detailed ? `down: ${e instanceof Error ? e.message : String(e)}` : 'down'),
      );
    const [eventStore, database, leases] = await Promise.all([
      check(() => deps.store.ping()),
      check(() => deps.db.query('SELECT 1')),
      withinProbeTime(deps.leases.status()).catch(() => null),
    ]);
    const projections = deps.runner.status().map((p) => {
      if (detailed) return p;
      const { error: _error, failedEvent: _failedEvent, ...shown } = p;
      return shown;
    });
    const healthy =
      eventStore === 'ok' && database === 'ok' && projections.every((p) => p.state !== 'failed');
    ctx.status = healthy ? 200 : 503;
    ctx.body = {
      status: healthy ? 'ok' : 'degraded',
      eventStore: { kind: deps.store.kind, status: eventStore },
      database: { kind: deps.db.kind, status: database },
      // Which instance runs each process manager and sweeper (null when the database does not answer).
      instance: deps.leases.instanceId,
      leases,
      projections,
    };
  });

  const mounted: Router[] = [health, metricsRoutes(deps), adminAssetRoutes(), ...apiRouters];
  const docs = openApiRoutes(() => [...mounted, docs], version);
  mounted.push(docs);
  MOUNTED.set(app, mounted);
  for (const r of mounted) root.use(r.routes());
  // A request refused before routing (a token that is not valid, a body that is not JSON) is still timed
  // under its route's pattern, the one the router would have chosen for its method (else any on its path).
  deps.metrics.routesFrom((method, path) => {
    const found = root.match(path, method);
    const route = (layers: typeof found.path) => [...layers].reverse().find((l) => l.methods.length > 0);
    const pattern = (route(found.pathAndMethod) ?? route(found.path))?.path;
    return typeof pattern === 'string' ? pattern : undefined;
  });
  app.use(root.routes());
  // A method the path does not take is 405 in the ErrorResponse shape, with an Allow header naming those it
  // does. koa-router answers a method no route takes anywhere (TRACE, PROPFIND, ...) 501, a 5xx for the
  // client's mistake, and left Allow off when it threw.
  app.use(async (ctx, next) => {
    await next();
    if ((ctx.status === 405 || ctx.status === 501) && ctx.body == null)
      throw new HttpError(
        405,
        'method_not_allowed',
        `${ctx.method} is not allowed on ${ctx.path} (allowed: ${ctx.response.get('Allow') || 'none'})`,
      );
  });
  app.use(root.allowedMethods());
  return app;
}
