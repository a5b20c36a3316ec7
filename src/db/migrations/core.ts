import type { Migration } from './migration';

/** Checkpoints, idempotency keys and saved addresses: the first read-model tables. */
export const coreMigrations: Migration[] = [
  {
    version: 1,
    name: 'checkpoints and idempotency keys',
    sql: `
CREATE TABLE projection_checkpoints (
  name text PRIMARY KEY,
  commit_position numeric(20, 0) NOT NULL,
  prepare_position numeric(20, 0) NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE idempotency_keys (
  scope text NOT NULL,
  key text NOT NULL,
  request_hash text NOT NULL,
  status integer,
  response jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope, key)
);
`,
  },
  {
    version: 2,
    name: 'saved addresses',
    sql: `
CREATE TABLE addresses (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  lat double precision NOT NULL,
  lng double precision NOT NULL,
  zoom double precision NOT NULL,
  is_default boolean NOT NULL DEFAULT false,
  name text NOT NULL,
  address text NOT NULL,
  country text NOT NULL,
  state text NOT NULL,
  city text NOT NULL,
  line1 text NOT NULL,
  line2 text NOT NULL,
  zip text NOT NULL,
  details text NOT NULL,
  created_at timestamptz NOT NULL,
  seq bigint NOT NULL
);
CREATE INDEX addresses_user ON addresses (user_id, seq DESC);
CREATE UNIQUE INDEX addresses_one_default ON addresses (user_id) WHERE is_default;
`,
  },
];
