import { coreMigrations } from './migrations/core';
import { catalogueMigrations } from './migrations/catalogue';
import { bookingMigrations } from './migrations/booking';
import { paymentMigrations } from './migrations/payments';
import { storageMigrations } from './migrations/storage';
import { notificationMigrations } from './migrations/notifications';
import type { Migration } from './migrations/migration';
import { leaseMigrations } from './migrations/leases';
import { readVersionMigrations } from './migrations/readVersions';
import { calendarFeedMigrations } from './migrations/calendarFeeds';

/** Read-model schema, in order. A migration is never edited once released; add a new one instead. */
export const migrations: Migration[] = [
  ...coreMigrations,
  ...catalogueMigrations,
  ...bookingMigrations,
  ...paymentMigrations,
  ...storageMigrations,
  ...notificationMigrations,
  ...leaseMigrations,
  ...readVersionMigrations,
  ...calendarFeedMigrations,
];
