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
  {
    version: 111,
    // A calendar feed's SEQUENCE (queries/calendarFeed.ts): each change of a session the feed shows counts
    // one. Rows written before count from 0 until a rebuild of the sessions read model counts them.
    name: 'changes of a session',
    sql: `
ALTER TABLE sessions ADD COLUMN revision integer NOT NULL DEFAULT 0;
`,
  },
];
