import type { NotificationEvent } from '../commands/notifications/events';
import type { Projection } from './runner';

/** Read model `notifications`: one row per Notification, with its read and delivery state. */
export const notificationsProjection: Projection = {
  name: 'notifications',
  handles: ['NotificationCreated', 'NotificationsRead', 'NotificationsDelivered'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as NotificationEvent;
    switch (event.type) {
      case 'NotificationCreated': {
        const d = event.data;
        await tx.query(
          `INSERT INTO notifications (id, user_id, type, content_type, content_id, message, unread, created_at, seq,
             cause_event_id)
           VALUES ($1, $2, $3, $4, $5, $6, true, $7, $8::numeric, $9) ON CONFLICT (id) DO NOTHING`,
          [
            d.notificationId,
            d.userId,
            d.type,
            d.contentType,
            d.contentId,
            d.message,
            d.createdAt,
            recorded.position.commit.toString(),
            d.causationEventId,
          ],
        );
        return;
      }
      case 'NotificationsRead':
        await tx.query(
          `UPDATE notifications SET unread = false, read_at = $3 WHERE user_id = $1 AND id = ANY($2::uuid[])`,
          [event.data.userId, event.data.notificationIds, event.data.at],
        );
        return;
      case 'NotificationsDelivered':
        await tx.query(
          `UPDATE notifications SET delivered_at = $3 WHERE user_id = $1 AND id = ANY($2::uuid[]) AND delivered_at IS NULL`,
          [event.data.userId, event.data.notificationIds, event.data.at],
        );
        return;
      default:
        return;
    }
  },
};
