import type { Middleware } from 'koa';

/** Headers a browser app may send on a cross-origin call (the rest are refused by its preflight). */
const ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'X-Request-Id',
  'X-Correlation-Id',
];
/**
 * Answer headers a browser app may read besides the CORS-safelisted ones: `Retry-After` (503, 409 `conflict`)
 * and 405's `Allow` are not safelisted, so an app saw them as absent although the docs tell it to act on them.
 */
const EXPOSED_HEADERS = [
  'X-Request-Id',
  'Idempotent-Replayed',
  'X-Media-Id',
  'Content-Range',
  'Accept-Ranges',
  'Retry-After',
  'Allow',
];
const METHODS = 'GET, HEAD, POST, PUT, DELETE';
/** How long a browser may keep a preflight's answer (seconds). */
const PREFLIGHT_MAX_AGE = '600';

/**
 * Cross-origin calls from browser apps on the origins of `CORS_ORIGINS` (README, "Configuration"). Tokens
 * travel in `Authorization`, never in cookies, so no credentials mode is offered and `*` is safe to allow.
 * Without origins nothing is added: browsers then keep pages of other origins from reading any answer.
 * Errors carry the headers too (this runs outside the error handler's answer), so an app reads its 401/422.
 */
export function cors(origins: readonly string[]): Middleware {
  const any = origins.includes('*');
  const allowed = new Set(origins);
  return async (ctx, next) => {
    if (!any && !allowed.size) return next();
    const origin = ctx.get('origin');
    ctx.vary('Origin');
    if (!origin || (!any && !allowed.has(origin))) return next();
    ctx.set('Access-Control-Allow-Origin', any ? '*' : origin);
    const preflight = ctx.method === 'OPTIONS' && ctx.get('access-control-request-method') !== '';
    if (!preflight) {
      ctx.set('Access-Control-Expose-Headers', EXPOSED_HEADERS.join(', '));
      return next();
    }
    ctx.set('Access-Control-Allow-Methods', METHODS);
    ctx.set('Access-Control-Allow-Headers', ALLOWED_HEADERS.join(', '));
    ctx.set('Access-Control-Max-Age', PREFLIGHT_MAX_AGE);
    ctx.status = 204;
  };
}
