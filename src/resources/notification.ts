import type { NotificationFields } from '../../commands/notifications/events';

/** The interface document's Notification. */
export interface NotificationOut {
  id: string;
  type: string;
  contentType: string;
  contentId: string;
  message: string;
  unread: boolean;
  createdAt: string;
}

export const toNotificationOut = (n: NotificationFields & { unread: boolean }): NotificationOut => ({
  id: n.notificationId,
  type: n.type,
  contentType: n.contentType,
  contentId: n.contentId,
  message: n.message,
  unread: n.unread,
  createdAt: n.createdAt,
});
