import { addressesProjection } from './addresses';
import type { Projection } from './runner';
import type { EventStore } from '../src/eventstore/types';
import { calendarProjection } from './calendar';
import { sessionsProjection } from './sessions';
import { bookingProcess } from './bookingProcess';
import { bookingListProcess } from './bookingListProcess';
import { paymentsProjection } from './payments';
import { paymentHistoryProjection } from './paymentHistory';
import { paymentExpiryProjection } from './paymentExpiry';
import { sessionRemindersProjection } from './sessionReminders';
import { userProfilesProjection } from './userProfiles';
import { servicesProjection } from './services';
import { coachClientsProjection } from './coachClients';
import { reviewsProjection } from './reviews';
import { completedSessionsProjection } from './completedSessions';
import { videosProjection } from './videos';
import { profileMediaProjection } from './profileMedia';
import { calendarFeedsProjection } from './calendarFeeds';
import { emailProcess } from './emailProcess';
import { DEFAULT_MAIL_LEASE_MS } from '../src/config';
import { emailDeliveriesProjection } from './emailDeliveries';
import { notificationProcess } from './notificationProcess';
import { notificationsProjection } from './notifications';
import { notificationChannelsProjection } from './notificationChannels';
import { webhookProcess } from './webhookProcess';
import { blobCleanupProcess } from './blobCleanupProcess';
import type { Database } from '../src/db/database';
import type { Logger } from '../src/log';
import type { Mailer } from '../src/mail/mailer';
import type { BlobStore } from '../src/storage/types';

/** Every read model and process manager the service runs. */
export const allProjections = (ctx: {
  store: EventStore;
  clock: () => Date;
  db: Database;
  mailer: Mailer;
  log: Logger;
  /** Wakes this process's webhook dispatcher when deliveries were queued. */
  onWebhookQueued?: () => void;
  /** MAIL_LEASE_MS (default 2 minutes): how long an e-mail claim is exclusive. */
  mailLeaseMs?: number;
  /** The file storage: with it, the process manager removing files that events made unreferenced runs. */
  blobs?: BlobStore;
}): Projection[] => [
  addressesProjection,
  userProfilesProjection,
  servicesProjection,
  coachClientsProjection,
  reviewsProjection,
  completedSessionsProjection,
  paymentsProjection,
  paymentHistoryProjection,
  paymentExpiryProjection,
  calendarProjection,
  sessionsProjection,
  sessionRemindersProjection,
  bookingProcess(ctx.store, ctx.clock),
  bookingListProcess(ctx.store),
  videosProjection,
  profileMediaProjection,
  calendarFeedsProjection,
  notificationsProjection,
  notificationChannelsProjection,
  notificationProcess(ctx.store),
  emailProcess({ ...ctx, mailLeaseMs: ctx.mailLeaseMs ?? DEFAULT_MAIL_LEASE_MS }),
  webhookProcess({ store: ctx.store, db: ctx.db, onQueued: ctx.onWebhookQueued }),
  emailDeliveriesProjection,
  ...(ctx.blobs ? [blobCleanupProcess({ blobs: ctx.blobs, log: ctx.log })] : []),
];
