import { left, right } from 'fp-ts/Either';
import { assertNever, type Decider } from '../../src/decider';
import { PersistentMap, PersistentSet } from '../../src/persistentMap';
import type { ChannelType, NotificationEvent, NotificationFields } from './events';

export interface NotificationRecord extends NotificationFields {
  unread: boolean;
  deliveredAt: string | null;
}

/** Channels a user keeps at once (removing one frees its place). */
export const MAX_CHANNELS = 20;

export interface Channel {
  id: string;
  type: ChannelType;
  address: string;
  createdAt: string;
}

/**
 * One user's notifications (by id), the causes already notified, and delivery channels. Persistent maps: a
 * busy coach's inbox grows for years, and a new notification must not copy all the earlier ones.
 */
export interface Inbox {
  notifications: PersistentMap<NotificationRecord>;
  causes: PersistentSet;
  channels: Channel[];
}

export type NotificationCommand =
  | { type: 'CreateNotification'; notification: NotificationFields }
  | { type: 'MarkRead'; userId: string; notificationIds: string[]; now: string }
  | { type: 'RecordDelivered'; userId: string; notificationIds: string[]; now: string }
  | {
      type: 'RegisterChannel';
      userId: string;
      channelId: string;
      channelType: ChannelType;
      address: string;
      now: string;
    }
  | {
      type: 'RemoveChannel';
      userId: string;
      channelId: string;
      now: string;
      /**
       * The service removes it: its receiver answered 410 Gone to this delivery, and the owner is told with
       * this notification (recorded with the removal, so one is never without the other).
       */
      gone?: { deliveryId: string; notice: NotificationFields };
    };

/** Every id must be one of the user's notifications; none is touched otherwise. */
const unknownIds = (state: Inbox, ids: string[]) => ids.filter((id) => !state.notifications.has(id));

const notFound = (ids: string[]) =>
  left({ code: 'notification_not_found', message: `no such notification of yours: ${ids.join(', ')}` });

const unique = (ids: string[]) => [...new Set(ids.map((i) => i.toLowerCase()))];

/**
 * The form in which channel addresses are compared (and stored since): a webhook URL as the WHATWG parser
 * writes it (scheme and host lower-case, default port dropped, `/` for an empty path) without its fragment,
 * which is never sent; an e-mail address lower-case. Two spellings of one URL are one channel, not two
 * that each get every notification, signed with different secrets.
 */
export function channelAddressKey(type: ChannelType, address: string): string {
  if (type === 'email') return address.toLowerCase();
  if (type === 'webhook') {
    try {
      const u = new URL(address);
      u.hash = '';
      return u.href;
    } catch {
      return address;
    }
  }
  return address;
}

/** The user's channel of this type at this address (in any spelling of it), if registered. */
export const findChannel = (state: Inbox, type: ChannelType, address: string): Channel | undefined => {
  const key = channelAddressKey(type, address);
  return state.channels.find((c) => c.type === type && channelAddressKey(c.type, c.address) === key);
};

export const inbox: Decider<NotificationCommand, NotificationEvent, Inbox> = {
  initialState: () => ({ notifications: PersistentMap.empty(), causes: PersistentSet.empty(), channels: [] }),

  evolve(state, event) {
    switch (event.type) {
      case 'NotificationCreated':
        return {
          ...state,
          notifications: state.notifications.set(event.data.notificationId, {
            ...event.data,
            unread: true,
            deliveredAt: null,
          }),
          causes: state.causes.add(event.data.causationEventId),
        };
      case 'NotificationsRead':
      case 'NotificationsDelivered': {
        let notifications = state.notifications;
        for (const id of event.data.notificationIds) {
          const n = notifications.get(id);
          if (!n) continue;
          notifications = notifications.set(
            id,
            event.type === 'NotificationsRead'
              ? { ...n, unread: false }
              : { ...n, deliveredAt: event.data.at },
          );
        }
        return { ...state, notifications };
      }
      case 'NotificationChannelRegistered': {
        const { channelId, type, address, at } = event.data;
        return { ...state, channels: [...state.channels, { id: channelId, type, address, createdAt: at }] };
      }
      case 'NotificationChannelRemoved':
        return { ...state, channels: state.channels.filter((c) => c.id !== event.data.channelId) };
      default:
        return assertNever(event);
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'CreateNotification': {
        const n = command.notification;
        // At-least-once delivery of the cause: a notification id or cause seen before is a repeat.
        if (state.notifications.has(n.notificationId) || state.causes.has(n.causationEventId))
          return right([]);
        return right([{ type: 'NotificationCreated', data: n }]);
      }
      case 'MarkRead': {
        const ids = unique(command.notificationIds);
        const missing = unknownIds(state, ids);
        if (missing.length) return notFound(missing);
        const unread = ids.filter((id) => state.notifications.get(id)!.unread);
        if (!unread.length) return right([]);
        return right([
          {
            type: 'NotificationsRead',
            data: { userId: command.userId, notificationIds: unread, at: command.now },
          },
        ]);
      }
      case 'RecordDelivered': {
        const ids = unique(command.notificationIds);
        const missing = unknownIds(state, ids);
        if (missing.length) return notFound(missing);
        const fresh = ids.filter((id) => state.notifications.get(id)!.deliveredAt === null);
        if (!fresh.length) return right([]);
        return right([
          {
            type: 'NotificationsDelivered',
            data: { userId: command.userId, notificationIds: fresh, at: command.now },
          },
        ]);
      }
      case 'RegisterChannel': {
        if (findChannel(state, command.channelType, command.address)) return right([]);
        if (state.channels.length >= MAX_CHANNELS)
          return left({ code: 'channel_limit_reached', message: 'a user keeps at most 20 channels' });
        return right([
          {
            type: 'NotificationChannelRegistered',
            data: {
              userId: command.userId,
              channelId: command.channelId,
              type: command.channelType,
              address: command.address,
              at: command.now,
            },
          },
        ]);
      }
      case 'RemoveChannel': {
        const id = command.channelId.toLowerCase();
        const { gone } = command;
        // Unknown, another user's, or removed before: the same answer, so ids of others are not probed. A
        // receiver found gone again (a delivery claimed before the removal) has nothing left to remove.
        if (!state.channels.some((c) => c.id === id))
          return gone ? right([]) : left({ code: 'channel_not_found', message: 'no such channel of yours' });
        const data = { userId: command.userId, channelId: id, at: command.now };
        if (!gone) return right([{ type: 'NotificationChannelRemoved', data }]);
        return right([
          {
            type: 'NotificationChannelRemoved',
            data: { ...data, reason: 'receiver_gone', deliveryId: gone.deliveryId },
          },
          ...(state.causes.has(gone.notice.causationEventId) ||
          state.notifications.has(gone.notice.notificationId)
            ? []
            : [{ type: 'NotificationCreated' as const, data: gone.notice }]),
        ]);
      }
      default:
        return assertNever(command);
    }
  },
};
