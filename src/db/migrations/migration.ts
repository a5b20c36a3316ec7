/**
 * One step of the read-model schema; `src/db/migrations.ts` lists them in order. Statements are separated by a semicolon at the end of a line.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}
