import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Config } from '../config';
import type { Database } from '../db/database';
import type { Principal } from './auth';
import { busy, HttpError, ValidationError } from './errors';
import { renderError } from './render';
import { receivedRequestHash, requestHash } from './requestIdentity';

/** How long a key is kept (then forgotten: src/idempotencyPruner.ts). */
export const IDEMPOTENCY_TTL_HOURS = 24;

export { requestHash } from './requestIdentity';

/**
 * The tag a keyed request's events carry in their metadata (`idempotencyTag`): derived from the caller,
 * the key and the request, so a run of the same request again (after a crash) finds in the log what the
 * first run wrote (see `handleCommand`), and the same key with another body never matches.
 */
export const idempotencyTag = (scope: string, key: string, hash: string) =>
  createHash('sha256').update(`${scope}\n${key}\n${hash}`).digest('hex').slice(0, 32);

const ok = (status: number) => status >= 200 && status < 300;

/**
 * Answer headers that name what a run made (14's new picture, the payment 15 to 17 moved): kept with the answer,
 * given back on a replay.
 */
const KEPT_HEADERS = ['X-Media-Id', 'X-Payment-Id'];

const HONOURS_KEY = Symbol('idempotencyKey');
/** Marks a route middleware as honouring `Idempotency-Key` (read by the OpenAPI document). */
export const honouringKey = <M extends Middleware>(mw: M): M => Object.assign(mw, { [HONOURS_KEY]: true });
/** Whether a route's middleware stack honours `Idempotency-Key` (`idempotent`, or a keyed upload route). */
export const honoursIdempotencyKey = (stack: readonly unknown[]): boolean =>
  stack.some((mw) => (mw as { [HONOURS_KEY]?: true } | null)?.[HONOURS_KEY] === true);

const keyed = new AsyncLocalStorage<{ tag: string; n: number }>();

/**
 * `newId` for the service: inside a keyed request, ids are derived from the request's tag and their order
 * (the n-th id of a run is the n-th id of every run of it), so a run again after a crash names the same
 * booking, service or address as the first; elsewhere `fallback` (random UUIDs).
 */
export function keyedNewId(fallback: () => string): () => string {
  return () => {
    const run = keyed.getStore();
    if (!run) return fallback();
    const h = createHash('sha256').update(`${run.tag}/${run.n++}`).digest('hex');
    // Shaped like an RFC 9562 version-8 (custom) UUID.
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
  };
}

/**
 * How a route's successful answer is kept for its key and given back on a replay, when it holds what must
 * not be stored as is (a webhook's secret: kept as a mark, derived again for the replay).
 */
export interface KeptAnswer {
  store(body: unknown): unknown;
  replay(stored: unknown): unknown;
}

/**
 * `Idempotency-Key` for POST commands (DESIGN section 5). Keys are scoped to the caller and kept 24 h:
 * the same key and request (the same JSON value: `requestHash`) replays the first answer; the same key
 * with another request is 422 `idempotency_key_reused`; a repeat while the first is still running is 409.
 * Server errors (every 5xx) and the 409 `conflict` answers that ask to retry (contention) are not
 * remembered, so the client may retry them with the same key.
 *
 * Crash safety: a request that died without an answer leaves its key claimed with no answer. Once the
 * claim is older than `IDEMPOTENCY_LEASE_MS` (30 s) a retry takes it over and runs the request again, with
 * the same ids (`keyedNewId`) and the same `idempotencyTag`; every command that the first run stored is
 * then found in its stream and answered from there instead of being decided again (`handleCommand`), so
 * the retry gets the original outcome and nothing happens twice. The table is only a lock and an answer
 * cache: the log decides, so a lost or rebuilt read-model database loses no idempotency either (for a
 * retry sent as the first was: without the row, the tag is that of the body's text as received).
 */
export function idempotent(
  deps: { db: Database; config: Pick<Config, 'idempotencyLeaseMs'> },
  kept?: KeptAnswer,
): Middleware {
  const { db } = deps;
  const leaseMs = deps.config.idempotencyLeaseMs;
  return honouringKey(async (ctx, next) => {
    const key = ctx.get('idempotency-key');
    if (!key) return next();
    if (key.length > 200)
      throw new ValidationError([
        {
          loc: ['header', 'idempotency-key'],
          msg: 'Idempotency-Key is longer than 200 characters',
          type: 'too_long',
        },
      ]);
    const scope = (ctx.state.principal as Principal | undefined)?.userId ?? 'anonymous';
    // A claim stores both hashes of the request: its value's (value_hash), which retries are compared by,
    // and its text's as received (request_hash, as before bodies were compared as values), which the tag
    // (and so every id) is derived from: a request run before that change keeps its tag, even where its
    // key's row is lost, and an instance still running the code before reads the rows as it did.
    const value = requestHash(ctx.method, ctx.path, ctx.request.body);
    let received = receivedRequestHash(ctx.method, ctx.path, ctx.request.body);

    await db.query(
      `DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND created_at < now() - interval '${IDEMPOTENCY_TTL_HOURS} hours'`,
      [scope, key],
    );
    const claim = () =>
      db.query(
        `INSERT INTO idempotency_keys (scope, key, request_hash, value_hash) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING RETURNING key`,
        [scope, key, received, value],
      );
    const read = async () =>
      (
        await db.query<{
          request_hash: string;
          value_hash: string | null;
          status: number | null;
          response: unknown;
          headers: Record<string, string> | null;
        }>(
          'SELECT request_hash, value_hash, status, response, headers FROM idempotency_keys WHERE scope = $1 AND key = $2',
          [scope, key],
        )
      ).rows[0];
    let claimed = await claim();
    let row = claimed.rowCount === 0 ? await read() : undefined;
    // The claim went between the two (its run forgot its answer: a 422, a retry asked for): this request
    // claims the key itself. It was a 409 without Retry-After.
    for (let tries = 0; claimed.rowCount === 0 && !row && tries < 3; tries++) {
      claimed = await claim();
      if (claimed.rowCount === 0) row = await read();
    }
    if (claimed.rowCount === 0) {
      if (!row) throw busy('the request with this Idempotency-Key is being retried; try again');
      if (row.value_hash !== value && row.request_hash !== received)
        throw new HttpError(
          422,
          'idempotency_key_reused',
          'this Idempotency-Key was used for a different request',
        );
      // The first run's tag: a run again names the same ids, however this retry ordered its body's keys.
      received = row.request_hash;
      if (row.status !== null) {
        ctx.status = row.status;
        ctx.body = kept && ok(row.status) ? kept.replay(row.response) : row.response;
        for (const [name, value] of Object.entries(row.headers ?? {})) ctx.set(name, value);
        ctx.set('Idempotent-Replayed', 'true');
        return;
      }
      // No answer yet: still running, or its process died. Only a claim older than the lease is taken over.
      const takenOver = await db.query(
        `UPDATE idempotency_keys SET created_at = now()
         WHERE scope = $1 AND key = $2 AND status IS NULL AND request_hash = $3
           AND created_at < now() - make_interval(secs => $4::double precision / 1000)
         RETURNING key`,
        [scope, key, received, leaseMs],
      );
      if (takenOver.rowCount === 0) throw busy('a request with this Idempotency-Key is still in progress');
    }

    const remember = (status: number, body: unknown) => {
      const headers: Record<string, string> = {};
      for (const name of KEPT_HEADERS) if (ctx.response.get(name)) headers[name] = ctx.response.get(name);
      return db.query(
        'UPDATE idempotency_keys SET status = $3, response = $4::jsonb, headers = $5::jsonb WHERE scope = $1 AND key = $2',
        [
          scope,
          key,
          status,
          JSON.stringify(body ?? null),
          Object.keys(headers).length ? JSON.stringify(headers) : null,
        ],
      );
    };
    const tag = idempotencyTag(scope, key, received);
    ctx.state.idempotencyTag = tag;
    try {
      await keyed.run({ tag, n: 0 }, () => next());
    } catch (err) {
      const r = renderError(err);
      // An answer that only says "not now" (a 409 to retry, a 503) is not the request's outcome: forgotten
      // like a server error, so a retry with the same key runs the request again. So is a 422: nothing was
      // done, and the client corrects its body and sends it again under the same key (as payment APIs do).
      // No 5xx is an outcome either, one answered by name included (503 `webhooks_not_configured`).
      if (r.expected && !r.retryable && r.status < 500 && !(err instanceof ValidationError))
        await remember(r.status, r.body);
      else await db.query('DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2', [scope, key]);
      throw err;
    }
    await remember(ctx.status, kept && ok(ctx.status) ? kept.store(ctx.body) : ctx.body);
  });
}
