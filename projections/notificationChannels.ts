import type { NotificationEvent } from '../commands/notifications/events';
import type { Projection } from './runner';

/** Read model `notification_channels`: each user's delivery channels, while registered. */
export const notificationChannelsProjection: Projection = {
  name: 'notification_channels',
  handles: ['NotificationChannelRegistered', 'NotificationChannelRemoved'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as NotificationEvent;
    switch (event.type) {
      case 'NotificationChannelRegistered': {
        const d = event.data;
        await tx.query(
          `INSERT INTO notification_channels (id, user_id, type, address, created_at, seq)
           VALUES ($1, $2, $3, $4, $5, $6::numeric) ON CONFLICT (id) DO NOTHING`,
          [d.channelId, d.userId, d.type, d.address, d.at, recorded.revision.toString()],
        );
        return;
      }
      case 'NotificationChannelRemoved':
        await tx.query('DELETE FROM notification_channels WHERE id = $1 AND user_id = $2', [
          event.data.channelId,
          event.data.userId,
        ]);
        return;
      default:
        return;
    }
  },
};
