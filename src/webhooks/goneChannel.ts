import { inbox } from '../../commands/notifications/decider';
import { notificationStream, type NotificationFields } from '../../commands/notifications/events';
import { uuidFrom } from '../../commands/notifications/sessionNotices';
import { SYSTEM_ACTOR } from '../../projections/bookingProcess';
import { handleCommand } from '../commandHandler';
import type { EventStore } from '../eventstore/types';

/**
 * A webhook receiver answered 410 Gone to `deliveryId`: the channel is removed, as its owner would remove it
 * (so the webhook process drops what is queued for it and nothing more is queued), and the owner gets a
 * `webhook_removed` notification in the same append. Decided on the inbox: a channel already removed (a second
 * 410, a retried call) appends nothing. Resolves to whether this call removed it.
 *
 * Both events are caused by the `NotificationCreated` whose delivery was answered 410 (its event, found on the
 * inbox by `notificationId`) and carry its correlation, so an auditor's chain leads from the removal to the
 * request behind that notification; the delivery id itself is in the removal's data.
 */
export async function removeGoneChannel(
  store: EventStore,
  d: { userId: string; channelId: string; deliveryId: string; notificationId: string; at: string },
): Promise<boolean> {
  const cause = (await store.readStream(notificationStream(d.userId))).events.find(
    (e) =>
      e.type === 'NotificationCreated' && (e.data as NotificationFields).notificationId === d.notificationId,
  );
  const notice: NotificationFields = {
    notificationId: uuidFrom('webhook-removed', d.channelId),
    userId: d.userId,
    type: 'webhook_removed',
    contentType: 'notification_channel',
    contentId: d.channelId,
    // No URL: a webhook URL is often a capability, and messages are not redacted in audits.
    message:
      'Your webhook channel was removed: its receiver answered 410 Gone, so nothing more is sent to it. ' +
      'Register its URL again to receive notifications there.',
    causationEventId: d.deliveryId,
    createdAt: d.at,
  };
  const outcome = await handleCommand(
    store,
    notificationStream(d.userId),
    inbox,
    {
      type: 'RemoveChannel',
      userId: d.userId,
      channelId: d.channelId,
      now: d.at,
      gone: { deliveryId: d.deliveryId, notice },
    },
    {
      causationId: cause?.id ?? d.deliveryId,
      correlationId: cause?.metadata.correlationId ?? cause?.id ?? d.deliveryId,
      actor: SYSTEM_ACTOR,
    },
    50,
  );
  if (!outcome.ok) throw new Error(outcome.error.message);
  return outcome.events.length > 0;
}
