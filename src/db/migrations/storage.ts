import type { Migration } from './migration';

/** Read models of stored media (versions 50 to 59): the coaches' preview videos, in each user's order;
 * profile images and certificates. */
export const storageMigrations: Migration[] = [
  {
    version: 50,
    name: 'videos',
    sql: `
CREATE TABLE videos (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  title text NOT NULL,
  description text NOT NULL,
  content_type text NOT NULL,
  origin_filename text NOT NULL,
  blob_key text NOT NULL,
  preview_key text,
  filesize bigint NOT NULL,
  status text NOT NULL,
  position integer NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX videos_user ON videos (user_id, position);
`,
  },
  {
    version: 51,
    name: 'profile images and certificates',
    sql: `
CREATE TABLE profile_media (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  kind text NOT NULL,
  title text NOT NULL,
  description text NOT NULL,
  content_type text NOT NULL,
  origin_filename text NOT NULL,
  blob_key text NOT NULL,
  preview_key text,
  filesize bigint NOT NULL,
  created_at timestamptz NOT NULL,
  seq bigint NOT NULL
);
CREATE INDEX profile_media_user ON profile_media (user_id, kind, seq);
`,
  },
];
