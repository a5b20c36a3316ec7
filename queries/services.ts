import Router from '@koa/router';
import * as t from 'io-ts';
import type { ServiceFields, ServiceStatus } from '../commands/services/events';
import { isCoach } from '../src/readModels/users';
import { toServiceOut, type ServiceOut } from '../src/resources/service';
import type { Queryable } from '../src/db/database';
import type { AppDeps } from '../src/deps';
import type { Principal } from '../src/http/auth';
import { notFound } from '../src/http/errors';
import { Paging, Uuid, decode } from '../src/http/validation';
import { optionalPrincipal } from './caller';
import { coalesced, perDatabase } from '../src/db/coalesce';
import { clientPackages } from './packages';

interface ServiceRow {
  id: string;
  coach_id: string;
  status: ServiceStatus;
  fields: ServiceFields;
}
const rowToOut = (r: ServiceRow) => toServiceOut({ ...r.fields, id: r.id, status: r.status });

/** Services in review or rejected are seen only by their coach and by admins. */
const canSeeUnapproved = (caller: Principal | null, coachId: string) =>
  !!caller && (caller.userId === coachId || caller.roles.includes('admin'));

/**
 * The services not approved (withdrawn, or back in review after an edit) of which the caller holds an open
 * package: its remaining sessions are owed, so the client sees the service (7), its slots (6, 11) and books
 * them, as the calendar decider allows.
 */
async function owedServiceIds(
  db: Queryable,
  caller: Principal | null,
  filter: { coachId?: string; serviceId?: string },
  now: Date,
): Promise<Set<string>> {
  if (!caller) return new Set();
  const packages = await clientPackages(db, caller.userId, filter, now);
  return new Set(packages.filter((p) => p.open).map((p) => p.serviceId));
}

/** Service rows asked for in the same turn (concurrent GETs) read by one statement (src/db/coalesce.ts). */
const serviceRow = perDatabase((db: Queryable) =>
  coalesced<string, ServiceRow | undefined>(
    async (ids) => {
      const res = await db.query<ServiceRow>(
        'SELECT id, coach_id, status, fields FROM services WHERE id = ANY($1::uuid[])',
        [ids],
        { name: 'services_by_id' },
      );
      const byId = new Map(res.rows.map((r) => [r.id, r]));
      return ids.map((id) => byId.get(id));
    },
    (id) => id,
  ),
);

export async function findService(
  db: Queryable,
  serviceId: string,
): Promise<(ServiceOut & { coachId: string }) | null> {
  const row = await serviceRow(db)(serviceId);
  return row ? { ...rowToOut(row), coachId: row.coach_id } : null;
}

/** A coach's services, newest first; only approved ones unless `all`. */
/** The coach's services, newest first; `limit` (none: all) and `offset` page through them. */
export async function coachServices(
  db: Queryable,
  coachId: string,
  all: boolean,
  { limit, offset = 0 }: { limit?: number; offset?: number } = {},
): Promise<ServiceOut[]> {
  const res = await db.query<ServiceRow>(
    `SELECT id, coach_id, status, fields FROM services WHERE coach_id = $1 ${all ? '' : "AND status = 'approved'"}
     ORDER BY created_at DESC, id LIMIT $2 OFFSET $3`,
    [coachId, limit ?? null, offset],
  );
  return res.rows.map(rowToOut);
}

export function serviceQueries(deps: AppDeps): Router {
  const router = new Router();
  // 7. One service.
  router.get('/api/v1/service/:service_id', async (ctx) => {
    const serviceId = decode(t.type({ service_id: Uuid }), ctx.params, 'path').service_id.toLowerCase();
    const caller = optionalPrincipal(ctx);
    const found = await findService(deps.db, serviceId);
    if (
      !found ||
      (found.status !== 'approved' &&
        !canSeeUnapproved(caller, found.coachId) &&
        !(await owedServiceIds(deps.db, caller, { serviceId }, deps.clock())).has(serviceId))
    )
      throw notFound('service_not_found', 'no such service');
    const { coachId: _owner, ...service } = found;
    ctx.body = service;
  });
  // 10. A coach's services.
  router.get('/api/v1/coach/:coach_id/services', async (ctx) => {
    const coachId = decode(t.type({ coach_id: Uuid }), ctx.params, 'path').coach_id.toLowerCase();
    // "Lists all services": all without `limit`, as the interface document says; `limit`/`offset` page.
    const page = decode(Paging, ctx.query, 'query');
    const caller = optionalPrincipal(ctx);
    if (!(await isCoach(deps.db, coachId))) throw notFound('coach_not_found', 'no such coach');
    ctx.body = await coachServices(deps.db, coachId, canSeeUnapproved(caller, coachId), page);
  });
  return router;
}
