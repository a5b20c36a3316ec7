import type { Migration } from './migration';

/** Read models of calendars (schedules and active holds) and of booked sessions. */
export const bookingMigrations: Migration[] = [
  {
    version: 20,
    name: 'coach calendars and slot holds',
    sql: `
CREATE TABLE coach_calendars (
  coach_id uuid PRIMARY KEY,
  schedule jsonb NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE TABLE slot_holds (
  session_id uuid PRIMARY KEY,
  group_id uuid NOT NULL,
  coach_id uuid NOT NULL,
  service_id uuid NOT NULL,
  client_id uuid NOT NULL,
  starts_at timestamptz NOT NULL,
  ends_at timestamptz NOT NULL
);
CREATE INDEX slot_holds_coach ON slot_holds (coach_id, starts_at);
`,
  },
  {
    version: 21,
    name: 'sessions',
    sql: `
CREATE TABLE sessions (
  id uuid PRIMARY KEY,
  group_id uuid NOT NULL,
  coach_id uuid NOT NULL,
  client_id uuid NOT NULL,
  service_id uuid NOT NULL,
  payment_id uuid NOT NULL,
  state text NOT NULL,
  payment_state text NOT NULL,
  starts_at timestamptz NOT NULL,
  ends_at timestamptz NOT NULL,
  slot text NOT NULL,
  timezone text NOT NULL,
  terms jsonb NOT NULL,
  reviewed boolean NOT NULL DEFAULT false,
  booked_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX sessions_group ON sessions (group_id);
CREATE INDEX sessions_payment ON sessions (payment_id);
CREATE INDEX sessions_client ON sessions (client_id, starts_at DESC);
CREATE INDEX sessions_coach ON sessions (coach_id, starts_at DESC);
`,
  },
  {
    version: 22,
    name: 'travel time around slot holds',
    sql: `
ALTER TABLE slot_holds ADD COLUMN travel_minutes integer NOT NULL DEFAULT 0;
`,
  },
  {
    version: 23,
    // commands/calendar/slots.ts placeKey: group seats are shared at one place. Null on rows written
    // before (any place) until a rebuild of the calendar read model fills it.
    name: 'where a slot hold takes place',
    sql: `
ALTER TABLE slot_holds ADD COLUMN place text;
`,
  },
  {
    version: 52,
    // commands/calendar/slots.ts Reservation.shared: a one-on-one session is never a group seat, also after
    // its service became a group one. Null on rows written before (a seat, as then) until a rebuild fills it.
    name: 'whether a slot hold is a group seat',
    sql: `
ALTER TABLE slot_holds ADD COLUMN shared boolean;
`,
  },
];
