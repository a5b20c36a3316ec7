import Router from '@koa/router';
import type { Queryable } from '../src/db/database';
import type { AppDeps } from '../src/deps';
import { authenticated, currentPrincipal } from '../src/http/auth';
import { Paging, decode } from '../src/http/validation';
import { toAddressOut, type AddressOut } from '../src/resources/address';
import { MAX_ADDRESSES } from '../commands/addresses/decider';

/** The user's addresses, newest first. */
export async function listAddresses(
  db: Queryable,
  userId: string,
  limit = 200,
  offset = 0,
): Promise<AddressOut[]> {
  const res = await db.query<Omit<AddressOut, 'position'>>(
    `SELECT id, lat, lng, zoom, is_default AS "isDefault", name, address, country, state, city, line1, line2, zip, details
       FROM addresses WHERE user_id = $1 ORDER BY seq DESC LIMIT $2 OFFSET $3`,
    [userId, limit, offset],
  );
  return res.rows.map(toAddressOut);
}

export function addressQueries(deps: AppDeps): Router {
  const router = new Router();
  // 32. GET /api/v1/nav/addreses (spelling as in the interface document): "all addresses of the current
  // user", so without `limit` the whole list (a user keeps at most MAX_ADDRESSES), as POST answers it; the
  // usual default of 50 hid the oldest, often the default address.
  router.get('/api/v1/nav/addreses', authenticated(), async (ctx) => {
    const { limit = MAX_ADDRESSES, offset = 0 } = decode(Paging, ctx.query, 'query');
    ctx.body = await listAddresses(deps.db, currentPrincipal(ctx).userId, limit, offset);
  });
  return router;
}
