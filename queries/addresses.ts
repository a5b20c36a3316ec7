import Router from '@koa/router';
import type { Queryable } from '../src/db/database';
import type { AppDeps } from '../src/deps';
import { authenticated, currentPrincipal } from '../src/http/auth';
import { paging } from '../src/http/validation';
import { toAddressOut, type AddressOut } from '../src/resources/address';

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
  // 32. GET /api/v1/nav/addreses (spelling as in the interface document)
  router.get('/api/v1/nav/addreses', authenticated(), async (ctx) => {
    const { limit, offset } = paging(ctx.query);
    ctx.body = await listAddresses(deps.db, currentPrincipal(ctx).userId, limit, offset);
  });
  return router;
}
