import zlib from 'node:zlib';
import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import bourne from '@hapi/bourne';
import { HttpError } from './errors';

declare module 'koa' {
  interface Request {
    /** What `jsonBody` read (a JSON value, `''` for an empty body, `{}` for another type); multer's form. */
    body?: unknown;
  }
}

/** Largest JSON body, after any Content-Encoding is undone. */
export const JSON_LIMIT = '256kb';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
/** One decoder for every body: without `stream`, each `decode` call stands alone. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The stream of the body's bytes once its Content-Encoding is undone; 415 for one we cannot undo. */
function decompressed(req: IncomingMessage) {
  const encoding = req.headers['content-encoding'] || 'identity';
  switch (encoding) {
    case 'identity':
      return req;
    case 'gzip':
    case 'deflate':
      return req.pipe(zlib.createUnzip());
    case 'br':
      return req.pipe(zlib.createBrotliDecompress());
    default:
      throw new HttpError(
        415,
        'unsupported_media_type',
        'the body is sent in a Content-Encoding the service does not read (use identity, gzip, deflate or br)',
      );
  }
}

/**
 * Reads a JSON body into `ctx.request.body`, in one place: its bytes (Content-Encoding undone, at most
 * `JSON_LIMIT`), decoded as UTF-8 with a decoder that refuses what is not UTF-8, then parsed. A decoder that
 * replaces bad bytes with U+FFFD stored a Latin-1 "René" (the byte E9) as "Ren\ufffd" and answered 200; the
 * bytes are decoded once, so the check costs no second pass. A leading byte order mark is dropped, as before.
 *
 * - Any type other than JSON (`application/json`, `+json`): `{}`, the stream left for the route (uploads).
 * - An empty body is `''` (`emptyJsonBodyIsEmptyObject` makes it `{}`), so is one of only white space.
 * - A JSON null or number is handed on as such: the codecs answer 422 for it.
 * - 400 `bad_request`: not UTF-8, not JSON, a `__proto__` key, a body cut short; 413 over the limit; 415
 *   for a Content-Encoding other than identity, gzip, deflate or br.
 */
export function jsonBody(): Middleware {
  return async (ctx, next) => {
    const request = ctx.request as { body?: unknown };
    if (!BODY_METHODS.has(ctx.method) || request.body !== undefined) return next();
    if (!ctx.is('application/json', '+json')) {
      request.body = {};
      return next();
    }
    const req = ctx.req;
    // The client went away before its body was read: nothing will arrive (the parser used before did so too).
    if (req.closed) {
      ctx.status = 499;
      ctx.body = 'Request already closed';
      return;
    }
    let text: string;
    try {
      const identity = (req.headers['content-encoding'] || 'identity') === 'identity';
      const length = req.headers['content-length'];
      const bytes = await getRawBody(decompressed(req), {
        length: length && identity ? Number(length) : null,
        limit: JSON_LIMIT,
      });
      try {
        text = strictUtf8.decode(bytes);
      } catch {
        throw new HttpError(400, 'bad_request', 'the body is not valid UTF-8 (send JSON in UTF-8)');
      }
    } catch (err) {
      // A body left unread (over the limit, refused part way) is discarded, as Node does for a body nobody
      // read: a paused one would hold the kept-alive connection for ever.
      if (!req.complete) {
        req.unpipe();
        req.resume();
      }
      if (err instanceof HttpError) throw err;
      const e = err as { status?: number; type?: string };
      if (e.status === 413 || e.type === 'entity.too.large')
        throw new HttpError(413, 'payload_too_large', `the JSON body is larger than ${JSON_LIMIT}`);
      throw new HttpError(400, 'bad_request', 'the body is not valid JSON');
    }
    if (text === '') request.body = '';
    else
      try {
        request.body = bourne.parse(text, { protoAction: 'error' }) as unknown;
      } catch (err) {
        // A body of only white space (a newline, a CRLF some clients send) is no JSON value: it reads as an
        // empty body, `{}`, not as a 400 "not valid JSON".
        if (text.trim() === '') request.body = {};
        // bourne refuses a `__proto__` key anywhere: valid JSON, but no field of ours, and the way to poison
        // an object's prototype. Said so rather than "not valid JSON".
        else if (err instanceof SyntaxError && /forbidden prototype property/.test(err.message))
          throw new HttpError(
            400,
            'bad_request',
            'the body holds a "__proto__" key, which the service does not take',
          );
        else throw new HttpError(400, 'bad_request', 'the body is not valid JSON');
      }
    await next();
  };
}
