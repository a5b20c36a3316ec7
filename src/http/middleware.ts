import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../log';
import { HttpError } from './errors';
import { renderError } from './render';

/** A calendar feed's address: its token, and whatever may follow it. */
const FEED_PATH = /^(\/api\/v1\/calendar\/feed\/).+$/is;

/**
 * The path as the access log keeps it: a calendar feed's token opens the feed, so it is not written, whatever
 * follows it (the feed is served with a trailing slash too).
 */
export const loggedPath = (path: string) => path.replace(FEED_PATH, '$1[token]');

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
        path: loggedPath(ctx.path),
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
        // A feed address with more path segments is a malformed feed address: answered as every other one,
        // without echoing the path (it may hold the token).
        ctx.body = FEED_PATH.test(ctx.path)
          ? { error: 'feed_not_found', message: 'no calendar feed at this address', code: 404 }
          : { error: 'not_found', message: `no route for ${ctx.method} ${ctx.path}`, code: 404 };
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
      // "Retry shortly" (a dependency away, contention): said in the header clients and proxies read too.
      if (r.retryable) ctx.set('Retry-After', RETRY_AFTER_SECONDS);
    }
  };
}

/** How long a client told to retry (503, 409 `conflict`) waits first: these states last a moment. */
const RETRY_AFTER_SECONDS = '1';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** Charsets a JSON body may name: UTF-8 (and US-ASCII, a subset of it). */
const UTF8_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii']);

/**
 * A body must come as JSON (or as multipart/form-data to an upload route), else 415. The body parser only
 * reads JSON and hands the routes `{}` for any other type, so a text/plain, form or multipart body sent to a
 * route whose body is optional (decline, cancel, reject, a profile upsert, ...) was silently dropped and
 * answered 200 as if nothing had been sent. Runs before the body parser, so such a body is never read.
 */
export function requireJsonBody(isUpload: (method: string, path: string) => boolean): Middleware {
  return async (ctx, next) => {
    const length = Number(ctx.get('content-length') || '0');
    const hasBody = length > 0 || ctx.get('transfer-encoding') !== '';
    // Upload routes answer a body that is not multipart themselves (415 naming the fields they take).
    if (hasBody && BODY_METHODS.has(ctx.method) && !isUpload(ctx.method, ctx.path)) {
      if (!ctx.is('application/json', '+json'))
        throw new HttpError(
          415,
          'unsupported_media_type',
          `send the body as application/json (got ${ctx.get('content-type') || 'no Content-Type'})`,
        );
      // JSON is UTF-8 (RFC 8259) and the parser reads every body as UTF-8: a body declared in another
      // charset (iso-8859-1, utf-16) had its text garbled ("René" stored as "Ren\ufffd") and answered 200.
      const charset = ctx.request.charset.toLowerCase();
      if (charset && !UTF8_CHARSETS.has(charset))
        throw new HttpError(
          415,
          'unsupported_media_type',
          `send the JSON body in UTF-8 (got charset=${charset.slice(0, 40)})`,
        );
    }
    await next();
  };
}

/**
 * `Content-Type: application/json` with no body reads as `{}`. The interface document sends that header on
 * every call, also where the body is optional (e-mails 18 to 23, session decline and cancel, ...); the
 * parser hands such an empty body over as `''`, which every codec refused as "Input should be an object".
 * A route whose body is required still answers 422, naming the missing fields. Runs after the body parser.
 */
export function emptyJsonBodyIsEmptyObject(): Middleware {
  return async (ctx, next) => {
    const body = (ctx.request as { body?: unknown }).body;
    if (BODY_METHODS.has(ctx.method) && typeof body === 'string' && body.trim() === '')
      (ctx.request as { body?: unknown }).body = {};
    await next();
  };
}
