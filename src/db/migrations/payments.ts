import type { Migration } from './migration';

/** Read models of payments: the payment itself, its status history, and the unpaid ones that can expire. */
export const paymentMigrations: Migration[] = [
  {
    version: 30,
    name: 'payments',
    sql: `
CREATE TABLE payments (
  id uuid PRIMARY KEY,
  group_id uuid NOT NULL,
  client_id uuid NOT NULL,
  coach_id uuid NOT NULL,
  service_id uuid NOT NULL,
  status text NOT NULL,
  price double precision NOT NULL,
  currency text NOT NULL,
  method_id integer NOT NULL,
  method text NOT NULL,
  client_secret text,
  checkout jsonb,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  seq numeric(20, 0) NOT NULL
);
CREATE INDEX payments_client ON payments (client_id, created_at DESC, seq DESC);
CREATE INDEX payments_coach ON payments (coach_id, created_at DESC);
`,
  },
  {
    version: 31,
    name: 'payment history',
    sql: `
CREATE TABLE payment_history (
  payment_id uuid NOT NULL,
  revision bigint NOT NULL,
  from_status text NOT NULL,
  to_status text NOT NULL,
  at timestamptz NOT NULL,
  reason text NOT NULL,
  actor jsonb,
  PRIMARY KEY (payment_id, revision)
);
`,
  },
  {
    version: 32,
    name: 'unpaid payments due to expire',
    sql: `
CREATE TABLE payment_expiry_due (
  payment_id uuid PRIMARY KEY,
  expires_at timestamptz NOT NULL
);
CREATE INDEX payment_expiry_due_at ON payment_expiry_due (expires_at);
`,
  },
  {
    version: 33,
    name: 'payments in checkout or review do not expire',
    sql: `
ALTER TABLE payment_expiry_due ADD COLUMN in_flight boolean NOT NULL DEFAULT false;
`,
  },
];
