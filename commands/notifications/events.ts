import type { DomainEvent } from '../../src/decider';

/** The interface document's Notification, as recorded (plus its owner and the event that caused it). */
export interface NotificationFields {
  notificationId: string;
  userId: string;
  type: string;
  contentType: string;
  contentId: string;
  message: string;
  /** Id of the event that caused it: the same cause never creates a second notification. */
  causationEventId: string;
  createdAt: string;
}

export type NotificationCreated = DomainEvent<'NotificationCreated', NotificationFields>;
/** The user marked these (previously unread) notifications read (endpoint 25). */
export type NotificationsRead = DomainEvent<
  'NotificationsRead',
  { userId: string; notificationIds: string[]; at: string }
>;
/** The user's app reported these notifications delivered/displayed (endpoint 26); first report only. */
export type NotificationsDelivered = DomainEvent<
  'NotificationsDelivered',
  { userId: string; notificationIds: string[]; at: string }
>;
export type ChannelType = 'email' | 'push' | 'webhook';
/** The user registered a delivery channel (endpoint 27). */
export type NotificationChannelRegistered = DomainEvent<
  'NotificationChannelRegistered',
  { userId: string; channelId: string; type: ChannelType; address: string; at: string }
>;

/**
 * The channel was removed: nothing more goes to it, and its queued webhook deliveries are dropped. By the
 * user, or (`reason: 'receiver_gone'`) by the service when its webhook receiver answered 410 Gone to the
 * delivery `deliveryId`.
 */
export type NotificationChannelRemoved = DomainEvent<
  'NotificationChannelRemoved',
  { userId: string; channelId: string; at: string; reason?: 'receiver_gone'; deliveryId?: string }
>;

export type NotificationEvent =
  | NotificationCreated
  | NotificationsRead
  | NotificationsDelivered
  | NotificationChannelRegistered
  | NotificationChannelRemoved;

export const notificationStream = (userId: string) => `notifications-${userId}`;
