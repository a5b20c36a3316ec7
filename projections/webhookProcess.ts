import type {
  NotificationChannelRegistered,
  NotificationChannelRemoved,
  NotificationFields,
} from '../commands/notifications/events';
import { notificationStream } from '../commands/notifications/events';
import { uuidFrom } from '../commands/notifications/sessionNotices';
import type { Database } from '../src/db/database';
import { loadStateThrough } from '../src/foldedStates';
import type { DomainEvent } from '../src/decider';
import type { EventStore } from '../src/eventstore/types';
import { toNotificationOut, type NotificationOut } from '../src/resources/notification';
import type { Projection } from './runner';
import { LEASES } from '../src/leases';

/** What a webhook receives for each new notification of its user (the body is fixed when queued). */
export interface WebhookPayload {
  /** The delivery id: the same on every attempt, so a receiver can drop a repeat. */
  id: string;
  type: 'notification.created';
  createdAt: string;
  /** The interface document's Notification, as the user's inbox shows it when created. */
  data: { notification: NotificationOut };
}

/**
 * The user's webhook channels still registered, each with the revision that registered it (the fold counts
 * the stream's events, so it knows every event's revision), kept between notifications instead of reading
 * the whole inbox for each one.
 */
const webhookChannels = {
  initialState: () => ({ seen: 0n, channels: [] as { revision: bigint; channel: Channel }[] }),
  evolve: (s: { seen: bigint; channels: { revision: bigint; channel: Channel }[] }, e: DomainEvent) => {
    const channel = e.data as Channel;
    return {
      seen: s.seen + 1n,
      channels:
        e.type === 'NotificationChannelRegistered' && channel.type === 'webhook'
          ? [...s.channels, { revision: s.seen, channel }]
          : e.type === 'NotificationChannelRemoved'
            ? s.channels.filter((c) => c.channel.channelId !== channel.channelId)
            : s.channels,
    };
  },
};
type Channel = NotificationChannelRegistered['data'];

/**
 * Process manager of webhooks: each `NotificationCreated` is queued once for every webhook channel its user
 * had registered before it (decided from the user's `notifications-<userId>` stream, so a replay queues the
 * same set). The delivery row is keyed by (notification, channel) and inserted with ON CONFLICT DO NOTHING:
 * a replay or a second instance queues nothing twice. Sending is `src/webhooks/dispatcher.ts`'s job, so a
 * slow receiver never holds back the log.
 */
export function webhookProcess(deps: {
  store: EventStore;
  db: Database;
  /** Called after something was queued (wakes the dispatcher of this process at once). */
  onQueued?: () => void;
}): Projection {
  // When this read-model database was made (its first migrations): a notification recorded before it was
  // queued, and sent, by the database before this one (see `react`). Asked once, again after a failure.
  let bornAt: Promise<Date | null> | undefined;
  const databaseBornAt = () =>
    (bornAt ??= deps.db
      .query<{ at: Date | string | null }>('SELECT min(applied_at) AS at FROM schema_migrations')
      .then((r) => (r.rows[0]?.at ? new Date(r.rows[0].at) : null))
      .catch((err: unknown) => {
        bornAt = undefined;
        throw err;
      }));
  return {
    name: 'webhook-process',
    lease: LEASES.webhooks,
    handles: ['NotificationCreated', 'NotificationChannelRemoved'],
    // Each user's notifications in order; different users' side by side.
    orderedBy: (e) => [(e.data as NotificationFields).userId],
    async react(recorded) {
      if (recorded.type === 'NotificationChannelRemoved') {
        // What was queued for the channel and not sent yet is dropped; an attempt already under way ends as it
        // ends, and is neither tried again nor taken over (the dispatcher reads the mark).
        const { channelId, at } = recorded.data as NotificationChannelRemoved['data'];
        await deps.db.query(
          `UPDATE webhook_deliveries SET channel_removed_at = $2,
             status = CASE status WHEN 'pending' THEN 'failed' ELSE status END,
             next_attempt_at = CASE status WHEN 'pending' THEN NULL ELSE next_attempt_at END,
             last_error = CASE status WHEN 'pending' THEN 'channel removed' ELSE last_error END
            WHERE channel_id = $1 AND status IN ('pending', 'sending')`,
          [channelId, at],
        );
        return;
      }
      const n = recorded.data as NotificationFields;
      // A service started on a new, empty read-model database beside an existing log (EventStoreDB, or a
      // separate EVENTSTORE_URL) reads the whole log again: the notifications recorded before this database
      // existed had their webhooks queued and sent by its predecessor, whose queue is gone. Queueing them
      // again here would send every webhook ever sent once more (the e-mail process has its ledger in the
      // event store for this; the webhook queue lives here).
      const born = await databaseBornAt();
      if (born && recorded.createdAt < born) return;
      // Only channels registered before this notification count: a fold through the event before it is
      // enough (none for a user's first notification), so a user's notifications in a row read nothing.
      const { channels } = await loadStateThrough(
        deps.store,
        notificationStream(n.userId),
        webhookChannels,
        recorded.revision - 1n,
      );
      const hooks = channels.filter((c) => c.revision < recorded.revision).map((c) => c.channel);
      let queued = 0;
      for (const channel of hooks) {
        const id = uuidFrom('webhook', n.notificationId, channel.channelId);
        const payload: WebhookPayload = {
          id,
          type: 'notification.created',
          createdAt: n.createdAt,
          data: {
            notification: toNotificationOut({ ...n, unread: true }),
          },
        };
        const res = await deps.db.query(
          `INSERT INTO webhook_deliveries (id, notification_id, channel_id, user_id, url, payload, status, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7)
           ON CONFLICT (notification_id, channel_id) DO NOTHING`,
          [
            id,
            n.notificationId,
            channel.channelId,
            n.userId,
            channel.address,
            JSON.stringify(payload),
            n.createdAt,
          ],
        );
        queued += res.rowCount ?? 0;
      }
      if (queued) deps.onQueued?.();
    },
  };
}
