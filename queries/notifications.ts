import Router from '@koa/router';
import * as t from 'io-ts';
import type { AppDeps } from '../src/deps';
import { adminPageForBrowsers } from '../src/http/adminPage';
import { authenticated, currentPrincipal, requireRole } from '../src/http/auth';
import { ValidationError, notFound } from '../src/http/errors';
import { IsoInstant, Uuid, boundedString, decode, paging } from '../src/http/validation';
import { emailDeliveriesOfCause } from '../src/readModels/emailDeliveries';
import { notificationCode, type NotificationOut } from '../src/resources/notification';
import { utc } from './sessions';
import { deliveriesOfNotification } from './webhooks';

interface Row {
  id: string;
  userId: string;
  type: string;
  contentType: string;
  contentId: string;
  message: string;
  unread: boolean;
  createdAt: Date;
  readAt: Date | null;
  deliveredAt: Date | null;
  /** The event that caused it; null on rows written before migration 113 until a rebuild. */
  causeEventId: string | null;
}

const SELECT = `SELECT id, user_id AS "userId", type, content_type AS "contentType", content_id AS "contentId",
  message, unread, created_at AS "createdAt", read_at AS "readAt", delivered_at AS "deliveredAt",
  cause_event_id AS "causeEventId" FROM notifications`;
const ORDER = 'ORDER BY created_at DESC, seq DESC';

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString());
const out = (r: Row): NotificationOut => ({
  id: r.id,
  type: r.type,
  contentType: r.contentType,
  contentId: r.contentId,
  message: r.message,
  code: notificationCode(r.type),
  unread: r.unread,
  createdAt: iso(r.createdAt)!,
});
/** The admin view adds the owner and the read and delivery times. */
const adminOut = (r: Row) => ({
  ...out(r),
  userId: r.userId,
  readAt: iso(r.readAt),
  deliveredAt: iso(r.deliveredAt),
});

/**
 * `unread` filters; `before` (one of the caller's notification ids) starts the page after that one in the
 * list's order, so a client paging on is not shown again what new notifications pushed down.
 */
export const UnreadFilter = t.partial({ unread: t.keyof({ true: null, false: null }), before: Uuid });
/**
 * Filters of the admin list (29): the owner, the type, the read state, and the creation time between `from`
 * (inclusive) and `to` (exclusive), as the sessions list takes them.
 */
export const AdminFilter = t.partial({
  user: Uuid,
  type: boundedString(100, 1),
  unread: t.keyof({ true: null, false: null }),
  from: IsoInstant,
  to: IsoInstant,
});

export function notificationQueries(deps: AppDeps): Router {
  const router = new Router();
  const admin = requireRole('admin');

  // 24. The caller's notifications, newest first; `unread=true` (or false) filters; `before` pages on by id.
  router.get('/api/v1/notifications', authenticated(), async (ctx) => {
    const { limit, offset } = paging(ctx.query);
    const { unread, before } = decode(
      UnreadFilter,
      { unread: ctx.query.unread, before: ctx.query.before },
      'query',
    );
    const { userId } = currentPrincipal(ctx);
    const params: unknown[] = [userId, limit, offset];
    let where = 'user_id = $1';
    if (unread !== undefined) where += ` AND unread = $${params.push(unread === 'true')}`;
    if (before !== undefined) {
      const anchor = await deps.db.query('SELECT 1 FROM notifications WHERE id = $1 AND user_id = $2', [
        before.toLowerCase(),
        userId,
      ]);
      if (!anchor.rows.length)
        throw notFound('notification_not_found', 'no such notification of yours (before)');
      where += ` AND (created_at, seq) < (SELECT created_at, seq FROM notifications WHERE id = $${params.push(
        before.toLowerCase(),
      )})`;
    }
    const rows = await deps.db.query<Row>(`${SELECT} WHERE ${where} ${ORDER} LIMIT $2 OFFSET $3`, params);
    ctx.body = rows.rows.map(out);
  });

  // Added: the caller's delivery channels (27), in the order registered; a webhook's secret is never shown.
  router.get('/api/v1/notification/channel', authenticated(), async (ctx) => {
    const rows = await deps.db.query<{ id: string; type: string; address: string; createdAt: Date }>(
      `SELECT id, type, address, created_at AS "createdAt" FROM notification_channels
        WHERE user_id = $1 ORDER BY seq`,
      [currentPrincipal(ctx).userId],
    );
    ctx.body = rows.rows.map((r) => ({ ...r, createdAt: iso(r.createdAt) }));
  });

  // 29. Every user's notifications (admin), newest first; filters `user`, `type`, `unread`, `from` and `to`.
  router.get('/manage/admin/notifications', admin, async (ctx) => {
    const { limit, offset } = paging(ctx.query);
    const { user, type, unread, from, to } = ctx.query;
    const f = decode(AdminFilter, { user, type, unread, from, to }, 'query');
    if (f.from && f.to && Date.parse(f.to) < Date.parse(f.from))
      throw new ValidationError([
        { loc: ['query', 'to'], msg: 'to should not be before from', type: 'value_error' },
      ]);
    const params: unknown[] = [limit, offset];
    const where: string[] = [];
    if (f.user) where.push(`user_id = $${params.push(f.user.toLowerCase())}`);
    if (f.type) where.push(`type = $${params.push(f.type)}`);
    if (f.unread !== undefined) where.push(`unread = $${params.push(f.unread === 'true')}`);
    if (f.from) where.push(`created_at >= $${params.push(utc(f.from))}::timestamptz`);
    if (f.to) where.push(`created_at < $${params.push(utc(f.to))}::timestamptz`);
    const rows = await deps.db.query<Row>(
      `${SELECT} ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ${ORDER} LIMIT $1 OFFSET $2`,
      params,
    );
    ctx.body = rows.rows.map(adminOut);
  });

  // 30. One notification (admin), with its webhook deliveries and the e-mails its cause sent its user (null
  // when the cause is not recorded: a row written before migration 113, until a rebuild).
  router.get('/manage/admin/notifications/:notification_id', admin, async (ctx) => {
    const { notification_id } = decode(t.type({ notification_id: Uuid }), ctx.params, 'path');
    const row = (await deps.db.query<Row>(`${SELECT} WHERE id = $1`, [notification_id.toLowerCase()]))
      .rows[0];
    if (!row) throw notFound('notification_not_found', 'no such notification');
    const [webhookDeliveries, emailDeliveries] = await Promise.all([
      deliveriesOfNotification(deps.db, row.id),
      row.causeEventId === null ? null : emailDeliveriesOfCause(deps.db, row.causeEventId, row.userId),
    ]);
    ctx.body = { ...adminOut(row), webhookDeliveries, emailDeliveries };
  });

  // 31. Counts (admin): all, unread, delivered, and the same per type.
  // A browser asking for text/html gets the operators' page instead (src/http/adminPage.ts).
  router.get('/admin/notifications', adminPageForBrowsers(), admin, async (ctx) => {
    const rows = await deps.db.query<{ type: string; total: string; unread: string; delivered: string }>(
      `SELECT type, count(*)::text AS total, count(*) FILTER (WHERE unread)::text AS unread,
         count(*) FILTER (WHERE delivered_at IS NOT NULL)::text AS delivered
       FROM notifications GROUP BY type ORDER BY type`,
    );
    const byType = rows.rows.map((r) => ({
      type: r.type,
      total: Number(r.total),
      unread: Number(r.unread),
      delivered: Number(r.delivered),
    }));
    const sum = (k: 'total' | 'unread' | 'delivered') => byType.reduce((n, r) => n + r[k], 0);
    ctx.body = { total: sum('total'), unread: sum('unread'), delivered: sum('delivered'), byType };
  });
  return router;
}
