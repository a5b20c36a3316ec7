import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../log';
import { renderError } from './render';

/** Request id (taken from `X-Request-Id` when sane) and one JSON access-log line per request. */
export function requestContext(log: Logger): Middleware {
  return async (ctx, next) => {
    const given = ctx.get('x-request-id');
    const requestId = /^[\w-]{1,100}$/.test(given) ? given : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      log.info('request', {
        requestId,
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        ms: Math.round(ms * 10) / 10,
      });
    }
  };
}

/** Every error becomes the documented body; a 500 is logged with its stack and never shows it. */
export function errorHandler(log: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        ctx.status = 404;
        ctx.body = { error: 'not_found', message: `no route for ${ctx.method} ${ctx.path}`, code: 404 };
      }
    } catch (err) {
      const r = renderError(err);
      if (!r.expected) {
        log.error('unhandled error', {
          requestId: ctx.state.requestId,
          error: err instanceof Error ? err.message : String(err),
          stack: err instanceof Error ? err.stack : undefined,
        });
      }
      ctx.status = r.status;
      ctx.body = r.body;
    }
  };
}
