import Router from '@koa/router';
import * as t from 'io-ts';
import type { Queryable } from '../src/db/database';
import type { AppDeps } from '../src/deps';
import { requireRole } from '../src/http/auth';
import { Uuid, decode, paging } from '../src/http/validation';

/** The states of a webhook delivery (the `webhook_deliveries.status` column). */
export type WebhookDeliveryStatus = 'pending' | 'sending' | 'delivered' | 'failed';

/** One webhook delivery of a notification to a channel, with every attempt (the admin's delivery log). */
export interface WebhookDeliveryOut {
  id: string;
  notificationId: string;
  channelId: string;
  userId: string;
  url: string;
  /** `pending` (waiting for its next attempt), `sending`, `delivered` or `failed` (given up). */
  status: WebhookDeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  createdAt: string;
  log: { attempt: number; at: string; statusCode: number | null; error: string | null; durationMs: number }[];
}

interface Row {
  id: string;
  notification_id: string;
  channel_id: string;
  user_id: string;
  url: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  created_at: Date;
}

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString());

async function withLog(db: Queryable, rows: Row[]): Promise<WebhookDeliveryOut[]> {
  if (!rows.length) return [];
  const attempts = await db.query<{
    delivery_id: string;
    attempt: number;
    at: Date;
    status_code: number | null;
    error: string | null;
    duration_ms: number;
  }>(
    `SELECT delivery_id, attempt, at, status_code, error, duration_ms FROM webhook_attempts
     WHERE delivery_id = ANY($1::uuid[]) ORDER BY delivery_id, attempt`,
    [rows.map((r) => r.id)],
  );
  return rows.map((r) => ({
    id: r.id,
    notificationId: r.notification_id,
    channelId: r.channel_id,
    userId: r.user_id,
    url: r.url,
    status: r.status,
    attempts: r.attempts,
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
    nextAttemptAt: iso(r.next_attempt_at),
    deliveredAt: iso(r.delivered_at),
    createdAt: iso(r.created_at)!,
    log: attempts.rows
      .filter((a) => a.delivery_id === r.id)
      .map((a) => ({
        attempt: a.attempt,
        at: iso(a.at)!,
        statusCode: a.status_code,
        error: a.error,
        durationMs: a.duration_ms,
      })),
  }));
}

const COLUMNS = `id, notification_id, channel_id, user_id, url, status, attempts, last_status_code, last_error,
  next_attempt_at, delivered_at, created_at`;

/** The webhook deliveries of one notification (one per webhook channel its user had). */
export async function deliveriesOfNotification(
  db: Queryable,
  notificationId: string,
): Promise<WebhookDeliveryOut[]> {
  const rows = await db.query<Row>(
    `SELECT ${COLUMNS} FROM webhook_deliveries WHERE notification_id = $1 ORDER BY created_at, channel_id`,
    [notificationId],
  );
  return withLog(db, rows.rows);
}

export const WebhookFilter = t.partial({
  user: Uuid,
  status: t.keyof({ pending: null, sending: null, delivered: null, failed: null }),
});

export function webhookQueries(deps: AppDeps): Router {
  const router = new Router();
  // Added: the webhook delivery log (admin), newest first; filters `user` and `status`.
  router.get('/manage/admin/webhook-deliveries', requireRole('admin'), async (ctx) => {
    const { limit, offset } = paging(ctx.query);
    const f = decode(WebhookFilter, { user: ctx.query.user, status: ctx.query.status }, 'query');
    const params: unknown[] = [limit, offset];
    const where: string[] = [];
    if (f.user) where.push(`user_id = $${params.push(f.user.toLowerCase())}`);
    if (f.status) where.push(`status = $${params.push(f.status)}`);
    const rows = await deps.db.query<Row>(
      `SELECT ${COLUMNS} FROM webhook_deliveries ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY created_at DESC, id LIMIT $1 OFFSET $2`,
      params,
    );
    ctx.body = await withLog(deps.db, rows.rows);
  });
  return router;
}
