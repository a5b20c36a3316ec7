import type { Migration } from './migration';

export const calendarFeedMigrations: Migration[] = [
  {
    version: 110,
    name: 'calendar feeds',
    sql: `
CREATE TABLE calendar_feeds (
  user_id uuid PRIMARY KEY,
  token_sha256 text NOT NULL UNIQUE,
  issued_at timestamptz NOT NULL
);
`,
  },
];
