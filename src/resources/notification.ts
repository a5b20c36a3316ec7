import type { NotificationFields } from '../../commands/notifications/events';

/** The interface document's Notification. */
export interface NotificationOut {
  id: string;
  type: string;
  contentType: string;
  contentId: string;
  message: string;
  /** The interface document's integer `code`: a stable number per `type` (NOTIFICATION_CODES). */
  code: number;
  unread: boolean;
  createdAt: string;
}

/**
 * Notification.code: one number per notification type, for apps that switch on a number; 0 for a type not
 * listed here. Numbers are never reused for another type.
 */
export const NOTIFICATION_CODES: Readonly<Record<string, number>> = {
  session_booked: 1,
  session_approved: 2,
  session_declined: 3,
  session_canceled: 4,
  session_disputed: 5,
  service_rejected: 6,
  webhook_removed: 7,
  session_rescheduled: 8,
  session_reviewed: 9,
  payment_received: 10,
  payment_refund: 11,
  payment_canceled: 12,
  session_reminder: 13,
  payment_failed: 14,
};
export const notificationCode = (type: string): number =>
  Object.hasOwn(NOTIFICATION_CODES, type) ? NOTIFICATION_CODES[type]! : 0;

export const toNotificationOut = (n: NotificationFields & { unread: boolean }): NotificationOut => ({
  id: n.notificationId,
  type: n.type,
  contentType: n.contentType,
  contentId: n.contentId,
  message: n.message,
  code: notificationCode(n.type),
  unread: n.unread,
  createdAt: n.createdAt,
});
