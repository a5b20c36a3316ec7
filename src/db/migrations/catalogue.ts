import type { Migration } from './migration';

/** Read models of the catalogue: users, services, who booked whom, reviews, completed sessions. */
export const catalogueMigrations: Migration[] = [
  {
    version: 10,
    name: 'user profiles',
    sql: `
CREATE TABLE user_profiles (
  id uuid PRIMARY KEY,
  type text NOT NULL,
  profile jsonb NOT NULL,
  updated_at timestamptz NOT NULL
);
`,
  },
  {
    version: 11,
    name: 'services',
    sql: `
CREATE TABLE services (
  id uuid PRIMARY KEY,
  coach_id uuid NOT NULL,
  status text NOT NULL,
  fields jsonb NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX services_coach ON services (coach_id, created_at DESC);
`,
  },
  {
    version: 12,
    name: 'coach clients',
    sql: `
CREATE TABLE coach_clients (
  coach_id uuid NOT NULL,
  client_id uuid NOT NULL,
  first_booked_at timestamptz NOT NULL,
  PRIMARY KEY (coach_id, client_id)
);
`,
  },
  {
    version: 13,
    name: 'reviews',
    sql: `
CREATE TABLE reviews (
  id uuid PRIMARY KEY,
  session_id uuid NOT NULL UNIQUE,
  coach_id uuid NOT NULL,
  client_id uuid NOT NULL,
  service_id uuid NOT NULL,
  rating integer NOT NULL,
  comment text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX reviews_coach ON reviews (coach_id, created_at DESC);
`,
  },
  {
    version: 14,
    name: 'completed sessions',
    sql: `
CREATE TABLE completed_sessions (
  session_id uuid PRIMARY KEY,
  coach_id uuid NOT NULL,
  client_id uuid NOT NULL,
  completed_at timestamptz NOT NULL
);
CREATE INDEX completed_sessions_coach ON completed_sessions (coach_id);
`,
  },
];
