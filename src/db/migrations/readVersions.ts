import type { Migration } from './migration';

/** Versions of what the cached reads show (versions 100 to 109), see src/readModels/readVersions.ts. */
export const readVersionMigrations: Migration[] = [
  {
    version: 100,
    name: 'read versions',
    sql: `
CREATE TABLE read_versions (
  scope text NOT NULL,
  source text NOT NULL,
  version bigint NOT NULL,
  PRIMARY KEY (scope, source)
);
INSERT INTO read_versions (scope, source, version) VALUES ('*', 'epoch', pg_current_xact_id()::text::bigint);
`,
  },
];
