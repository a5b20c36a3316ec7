import type { Migration } from './migration';

/** Coordination of several service instances (versions 90 to 99): who runs each process manager. */
export const leaseMigrations: Migration[] = [
  {
    version: 90,
    name: 'process leases',
    sql: `
CREATE TABLE process_leases (
  name text PRIMARY KEY,
  owner text NOT NULL,
  expires_at timestamptz NOT NULL,
  epoch bigint NOT NULL,
  acquired_at timestamptz NOT NULL
);
`,
  },
];
