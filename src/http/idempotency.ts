import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Database } from '../db/database';
import type { Principal } from './auth';
import { HttpError } from './errors';
import { renderError } from './render';

const TTL_HOURS = 24;

/**
 * `Idempotency-Key` for POST commands (DESIGN section 5). Keys are scoped to the caller and kept 24 h:
 * the same key and request replays the first answer; the same key with another request is 422
 * `idempotency_key_reused`; a repeat while the first is still running is 409. Server errors are not
 * remembered, so the client may retry them with the same key.
 */
export function idempotent(db: Database): Middleware {
  return async (ctx, next) => {
    const key = ctx.get('idempotency-key');
    if (!key) return next();
    if (key.length > 200)
      throw new HttpError(422, 'validation', 'Idempotency-Key is longer than 200 characters');
    const scope = (ctx.state.principal as Principal | undefined)?.userId ?? 'anonymous';
    const hash = createHash('sha256')
      .update(`${ctx.method} ${ctx.path}\n${JSON.stringify(ctx.request.body ?? null)}`)
      .digest('hex');

    await db.query(
      `DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND created_at < now() - interval '${TTL_HOURS} hours'`,
      [scope, key],
    );
    const claimed = await db.query(
      `INSERT INTO idempotency_keys (scope, key, request_hash) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING key`,
      [scope, key, hash],
    );
    if (claimed.rowCount === 0) {
      const prior = await db.query<{ request_hash: string; status: number | null; response: unknown }>(
        'SELECT request_hash, status, response FROM idempotency_keys WHERE scope = $1 AND key = $2',
        [scope, key],
      );
      const row = prior.rows[0];
      if (!row)
        throw new HttpError(
          409,
          'conflict',
          'the request with this Idempotency-Key is being retried; try again',
        );
      if (row.request_hash !== hash)
        throw new HttpError(
          422,
          'idempotency_key_reused',
          'this Idempotency-Key was used for a different request',
        );
      if (row.status === null)
        throw new HttpError(409, 'conflict', 'a request with this Idempotency-Key is still in progress');
      ctx.status = row.status;
      ctx.body = row.response;
      ctx.set('Idempotent-Replayed', 'true');
      return;
    }

    const remember = (status: number, body: unknown) =>
      db.query(
        'UPDATE idempotency_keys SET status = $3, response = $4::jsonb WHERE scope = $1 AND key = $2',
        [scope, key, status, JSON.stringify(body ?? null)],
      );
    try {
      await next();
    } catch (err) {
      const r = renderError(err);
      if (r.expected) await remember(r.status, r.body);
      else await db.query('DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2', [scope, key]);
      throw err;
    }
    await remember(ctx.status, ctx.body);
  };
}
