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
  {
    version: 3,
    name: 'checkpoints locked as expected',
    // A shared read-model transaction on PostgreSQL states the checkpoints it expects instead of reading
    // them first (projections/runner.ts, "one round trip"): this locks them in name order, as every other
    // locker does, and fails with RM001 unless each still holds what the instance last saw.
    sql: `
CREATE OR REPLACE FUNCTION rm_lock_expected_checkpoints(names text[], commits numeric[], prepares numeric[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  matched integer;
BEGIN
  SELECT count(*) INTO matched FROM (
    SELECT 1 FROM projection_checkpoints k
    JOIN unnest(names, commits, prepares) AS v(name, c, p) ON k.name = v.name
    WHERE k.commit_position = v.c AND k.prepare_position = v.p
    ORDER BY k.name FOR UPDATE OF k) AS locked;
  IF matched <> cardinality(names) THEN
    RAISE EXCEPTION 'read-model checkpoints moved' USING ERRCODE = 'RM001';
  END IF;
END $$;
`,
  },
  {
    version: 4,
    name: 'idempotency keys by age',
    // The pruner (src/idempotencyPruner.ts) deletes keys past their 24 h by this index.
    sql: `CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);`,
  },
  {
    version: 5,
    name: 'idempotency keys: the request as a JSON value',
    // src/http/idempotency.ts: retries are compared by the body's value (its object keys in any order);
    // request_hash keeps the hash of the text as received (the tag derives from it; null in older rows).
    sql: `ALTER TABLE idempotency_keys ADD COLUMN value_hash text;`,
  },
  {
    version: 6,
    name: 'idempotency keys: no webhook secrets kept',
    // Answers to webhook registrations (27) kept their channel's signing secret; it is now derived again
    // for a replay (commands/notifications/routes.ts), so the kept answers lose it for the same mark.
    sql: `
UPDATE idempotency_keys
   SET response = (response - 'secret') || '{"$secretDerived": true}'::jsonb
 WHERE status BETWEEN 200 AND 299 AND jsonb_typeof(response) = 'object'
   AND response->>'secret' LIKE 'whsec\\_%';
`,
  },
  {
    version: 7,
    name: 'idempotency keys: headers of the answer',
    // A replay gives back the headers that name what the first run made (14's X-Media-Id), not only its
    // body (src/http/idempotency.ts). Null in older rows and in answers without such headers.
    sql: `ALTER TABLE idempotency_keys ADD COLUMN headers jsonb;`,
  },
];
