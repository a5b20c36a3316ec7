import Router from '@koa/router';
import * as t from 'io-ts';
import type { ServiceFields, ServiceStatus } from '../commands/services/events';
import type { AppDeps } from '../src/deps';
import { requireRole } from '../src/http/auth';
import { Uuid, decode, paging } from '../src/http/validation';
import { describeSchema } from '../src/http/openapi/jsonSchema';
import { measureLag } from '../src/metrics';
import { toServiceOut } from '../src/resources/service';
import { DELIVERY_COLUMNS, deliveryOut, type DeliveryRow } from '../src/readModels/emailDeliveries';

/** `status` filter of the admin service list (default: the ones waiting for review). */
export const AdminServicesQuery = t.partial({
  // `review` (the queue waiting for approval) unless given.
  status: describeSchema(t.keyof({ review: null, approved: null, rejected: null }), {
    type: 'string',
    enum: ['review', 'approved', 'rejected'],
    default: 'review',
  }),
});

/** `status` and `user` (the recipient) filters of the e-mail deliveries list (default: all). */
export const EmailDeliveriesQuery = t.partial({
  status: t.keyof({ sending: null, sent: null, deferred: null, failed: null }),
  user: Uuid,
});

/** Reads for the operators' page (GET /admin/notifications in a browser): services and projections. */
export function adminQueries(deps: AppDeps): Router {
  const router = new Router();
  const admin = requireRole('admin');

  // Services by status, oldest first: the review queue is worked from its head.
  router.get('/api/v1/admin/services', admin, async (ctx) => {
    const { limit, offset } = paging(ctx.query);
    const { status = 'review' } = decode(AdminServicesQuery, { status: ctx.query.status }, 'query');
    const rows = await deps.db.query<{
      id: string;
      coach_id: string;
      status: ServiceStatus;
      fields: ServiceFields;
      created_at: Date | string;
    }>(
      `SELECT id, coach_id, status, fields, created_at FROM services WHERE status = $1
       ORDER BY created_at, id LIMIT $2 OFFSET $3`,
      [status, limit, offset],
    );
    ctx.body = rows.rows.map((r) => ({
      ...toServiceOut({ ...r.fields, id: r.id, status: r.status }),
      coachId: r.coach_id,
      createdAt: new Date(r.created_at).toISOString(),
    }));
  });

  // E-mail deliveries, latest change first: state (sending, sent, deferred, failed), attempts, last error.
  router.get('/api/v1/admin/emails', admin, async (ctx) => {
    const { limit, offset } = paging(ctx.query);
    const { status, user } = decode(
      EmailDeliveriesQuery,
      { status: ctx.query.status, user: ctx.query.user },
      'query',
    );
    // One user's e-mails by their index (migration 112), not by reading every delivery ever made.
    const rows = await deps.db.query<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM email_deliveries
        WHERE ($1::text IS NULL OR status = $1) AND ($4::text IS NULL OR recipient = $4)
       ORDER BY updated_at DESC, stream LIMIT $2 OFFSET $3`,
      [status ?? null, limit, offset, user?.toLowerCase() ?? null],
    );
    ctx.body = rows.rows.map(deliveryOut);
  });

  // Every projection of this instance: state, checkpoint and lag behind the log's head. While the event
  // store does not answer, the states are still shown (what an operator looks at then) and the lag is null.
  router.get('/api/v1/admin/projections', admin, async (ctx) => {
    const lag = await measureLag(deps.store, deps.runner).catch(() => null);
    ctx.body = deps.runner.status().map((p) => ({
      name: p.name,
      state: p.state,
      position: p.position?.commit ?? null,
      lagEvents: lag ? (lag.get(p.name)?.events ?? 0) : null,
      lagSeconds: lag ? (lag.get(p.name)?.seconds ?? 0) : null,
      ...(p.error ? { error: p.error } : {}),
    }));
  });
  return router;
}
