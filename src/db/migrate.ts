import type { Database } from './database';
import { migrations } from './migrations';

/**
 * Applies the versioned read-model migrations that are not yet recorded, each in its own transaction.
 * An advisory lock keeps two instances starting at once from applying the same migration twice.
 */
export async function migrate(db: Database): Promise<number[]> {
  return db.transaction(
    async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(7150001)');
      await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      const done = new Set(
        (await tx.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map(
          (r) => r.version,
        ),
      );
      const applied: number[] = [];
      for (const m of migrations) {
        if (done.has(m.version)) continue;
        for (const statement of splitStatements(m.sql)) await tx.query(statement);
        await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        applied.push(m.version);
      }
      return applied;
    },
    { unbounded: true },
  );
}

/**
 * A migration's statements: split at semicolons that end a line, but not inside a dollar-quoted body
 * (a function's own statements end lines too). Plain `$$` only: a tagged quote (`$fn$`) or a `$$` in a
 * comment or string would be split wrongly, and the migration fail loudly.
 */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current = '';
  sql.split('$$').forEach((part, i) => {
    if (i % 2 === 1) {
      current += `$$${part}$$`;
      return;
    }
    const pieces = part.split(/;\s*$/m);
    current += pieces[0];
    for (const piece of pieces.slice(1)) {
      statements.push(current);
      current = piece;
    }
  });
  statements.push(current);
  return statements.filter((s) => s.trim());
}
