import type { Migration } from './migration';

/** Notifications read model, e-mail deliveries read model, and webhook deliveries. */
export const notificationMigrations: Migration[] = [
  {
    version: 40,
    name: 'sent e-mails (idempotency claims of the e-mail process manager)',
    sql: `
CREATE TABLE sent_emails (
  event_id text NOT NULL,
  recipient text NOT NULL,
  address text NOT NULL,
  template text NOT NULL,
  status text NOT NULL,
  message_id text,
  error text,
  claimed_at timestamptz NOT NULL DEFAULT now(),
  sent_at timestamptz,
  PRIMARY KEY (event_id, recipient)
);
`,
  },
  {
    version: 41,
    name: 'notifications',
    sql: `
CREATE TABLE notifications (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  type text NOT NULL,
  content_type text NOT NULL,
  content_id uuid NOT NULL,
  message text NOT NULL,
  unread boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL,
  read_at timestamptz,
  delivered_at timestamptz,
  seq numeric(20, 0) NOT NULL
);
CREATE INDEX notifications_user ON notifications (user_id, created_at DESC, seq DESC);
CREATE INDEX notifications_created ON notifications (created_at DESC, seq DESC);
`,
  },
  {
    version: 42,
    name: 'deferred e-mails',
    sql: `
ALTER TABLE sent_emails ADD COLUMN attempts integer NOT NULL DEFAULT 0;
ALTER TABLE sent_emails ADD COLUMN next_attempt_at timestamptz;
ALTER TABLE sent_emails ADD COLUMN message jsonb;
CREATE INDEX sent_emails_deferred ON sent_emails (next_attempt_at) WHERE status = 'deferred';
`,
  },
  {
    version: 43,
    name: 'webhook deliveries and their attempts',
    sql: `
CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY,
  notification_id uuid NOT NULL,
  channel_id uuid NOT NULL,
  user_id uuid NOT NULL,
  url text NOT NULL,
  payload text NOT NULL,
  status text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  claimed_at timestamptz,
  last_status_code integer,
  last_error text,
  delivered_at timestamptz,
  created_at timestamptz NOT NULL,
  UNIQUE (notification_id, channel_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_user ON webhook_deliveries (user_id, created_at DESC);
CREATE TABLE webhook_attempts (
  delivery_id uuid NOT NULL,
  attempt integer NOT NULL,
  at timestamptz NOT NULL,
  status_code integer,
  error text,
  duration_ms integer NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
);
`,
  },
  {
    version: 47,
    name: 'e-mail deliveries read model (the ledger itself moved to the event store)',
    sql: `
DROP TABLE sent_emails;
CREATE TABLE email_deliveries (
  stream text PRIMARY KEY,
  cause_event_id text NOT NULL,
  recipient text NOT NULL,
  address text NOT NULL,
  subject text NOT NULL,
  template text NOT NULL,
  status text NOT NULL,
  attempts integer NOT NULL,
  message_id text NOT NULL,
  lease_until timestamptz,
  next_attempt_at timestamptz,
  claimed_by text,
  error text,
  created_at timestamptz NOT NULL,
  sent_at timestamptz,
  updated_at timestamptz NOT NULL
);
CREATE INDEX email_deliveries_due ON email_deliveries (next_attempt_at) WHERE status = 'deferred';
CREATE INDEX email_deliveries_leased ON email_deliveries (lease_until) WHERE status = 'sending';
CREATE INDEX email_deliveries_recent ON email_deliveries (updated_at DESC);
`,
  },
  {
    version: 48,
    name: 'notification channels read model; webhook deliveries of removed channels',
    sql: `
CREATE TABLE notification_channels (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  type text NOT NULL,
  address text NOT NULL,
  created_at timestamptz NOT NULL,
  seq numeric(20, 0) NOT NULL
);
CREATE INDEX notification_channels_user ON notification_channels (user_id, seq);
ALTER TABLE webhook_deliveries ADD COLUMN channel_removed_at timestamptz;
`,
  },
  {
    version: 49,
    name: 'webhook deliveries: index of claims (the dispatcher read every delivery every second)',
    sql: `
CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries (claimed_at) WHERE status = 'sending';
`,
  },
  {
    version: 112,
    // GET /api/v1/admin/emails?user=: one user's e-mail deliveries, latest change first.
    name: 'e-mail deliveries by recipient',
    sql: `
CREATE INDEX email_deliveries_recipient ON email_deliveries (recipient, updated_at DESC);
`,
  },
  {
    version: 113,
    // GET /manage/admin/notifications/{id}: the e-mails the notification's cause sent its user. Null on rows
    // written before (their e-mails are not shown) until a rebuild of the notifications read model fills it.
    name: "a notification's cause; e-mail deliveries by cause",
    sql: `
ALTER TABLE notifications ADD COLUMN cause_event_id text;
CREATE INDEX email_deliveries_cause ON email_deliveries (cause_event_id, recipient);
`,
  },
  {
    version: 114,
    // projections/sessionReminders.ts: the sessions still on, read by the reminder sweeper by start.
    name: 'sessions due for a reminder',
    sql: `
CREATE TABLE session_reminder_due (
  session_id uuid PRIMARY KEY,
  group_id uuid NOT NULL,
  starts_at timestamptz NOT NULL
);
CREATE INDEX session_reminder_due_start ON session_reminder_due (starts_at, session_id);
`,
  },
];
