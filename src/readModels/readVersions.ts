import { coalesced, perDatabase } from '../db/coalesce';
import type { Queryable } from '../db/database';

/**
 * Versions of what the cached reads show (table `read_versions`, migration 100).
 *
 * A row per (scope, source): `scope` names whose data changed (`user:<id>` for a user's own rows, `*` for
 * everything, bumped when a rebuild swaps read models in), `source` the read model that changed it (one row
 * per read model, so projections running side by side never wait on each other's row lock). A projection
 * sets its rows to the id of its transaction (`pg_current_xact_id()`) in the statement that changes the read
 * model, so a change and its bump commit together. A transaction id is never reused, so a row never goes
 * back to a value a cache saw: an unchanged token (every row of a scope, see `readTokens`) means nothing of
 * that scope changed since. Only a crash of the server breaks that: read-model commits are asynchronous,
 * and the id of a transaction it lost can be given out again after it. So every token also names when the
 * server started (`pg_postmaster_start_time()`): after a crash, or a failover, no token matches an earlier one.
 */

/** SQL text of the new version: the writing transaction's id. */
const XACT = 'pg_current_xact_id()::text::bigint';

/** Read with every version row: when the server started (see above). */
const STARTED = 'pg_postmaster_start_time()::text AS started';

/**
 * Each statement that bumps, mapped to the read model's write it wraps (null: a bump alone), so a rebuild
 * can replay the plain writes (see `withoutBumps`).
 */
const plainOf = new Map<string, { sql: string | null; dropLast: boolean }>();

const highestParam = (sql: string) => Math.max(0, ...[...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));

/**
 * `sql` (a read model's write) made to also bump `source`'s row of every scope in one more, last parameter
 * (text[]), in the same statement: `query(bumped(SQL, 'calendar'), [...params, [userScope(coachId)]])`.
 */
export function bumped(sql: string, source: string): string {
  const param = `$${highestParam(sql) + 1}`;
  const out = `WITH read_version_bump AS (INSERT INTO read_versions (scope, source, version)
     SELECT DISTINCT s, '${source}', ${XACT} FROM unnest(${param}::text[]) s ORDER BY 1
     ON CONFLICT (scope, source) DO UPDATE SET version = EXCLUDED.version)
${sql}`;
  plainOf.set(out, { sql, dropLast: true });
  return out;
}

/** A statement that only bumps `source`'s row of every scope in its one parameter (text[]). */
export function bumpOnly(source: string): string {
  const out = bumped('SELECT 1', source);
  plainOf.set(out, { sql: null, dropLast: true });
  return out;
}

/**
 * An `UPDATE …` (no RETURNING) made to also bump `source`'s row of the scope `user:<column>` of each row it
 * changes, in the same statement.
 */
export function bumpedRows(update: string, column: string, source: string): string {
  const out = `WITH changed AS (${update} RETURNING ${column} AS id)
INSERT INTO read_versions (scope, source, version)
  SELECT DISTINCT 'user:' || id, '${source}', ${XACT} FROM changed ORDER BY 1
  ON CONFLICT (scope, source) DO UPDATE SET version = EXCLUDED.version`;
  plainOf.set(out, { sql: update, dropLast: false });
  return out;
}

/**
 * The same Queryable, with each bumping statement replaced by the read model's write it wraps (or left out
 * when it only bumps). A rebuild replays through it: its writes land in shadow tables, where a bump would
 * mean nothing; it bumps the `*` scope when it swaps the tables in instead.
 */
export function withoutBumps(tx: Queryable): Queryable {
  return {
    async query<R>(sql: string, params?: unknown[]) {
      const plain = plainOf.get(sql);
      if (!plain) return tx.query<R>(sql, params);
      if (plain.sql === null) return { rows: [], rowCount: 0 };
      return tx.query<R>(plain.sql, plain.dropLast ? params?.slice(0, -1) : params);
    },
  };
}

export const userScope = (id: string) => `user:${id}`;
export const EVERYTHING = '*';

/**
 * The token of each scope (its rows as `source=version,…`), in one indexed read. `viaService`: also the
 * scope of that service's coach. A scope without rows is absent from the answer (see `ensureScopes`).
 */
export async function readTokens(
  db: Queryable,
  scopes: string[],
  viaService?: string,
): Promise<Map<string, string>> {
  if (!viaService) {
    const one = tokenReader(db);
    const tokens = new Map<string, string>();
    const found = await Promise.all(scopes.map(one));
    scopes.forEach((s, i) => found[i] !== undefined && tokens.set(s, found[i]!));
    return tokens;
  }
  const res = await db.query<TokenRow>(
    `SELECT scope, source, version, ${STARTED} FROM read_versions
     WHERE scope = ANY(array_append($1::text[], (SELECT 'user:' || coach_id FROM services WHERE id = $2::uuid)))
     ORDER BY scope, source`,
    [scopes, viaService],
    { name: 'read_versions_via_service' },
  );
  return joinTokens(res.rows);
}

interface TokenRow {
  scope: string;
  source: string;
  version: string;
  /** When the server started: see the top of this file. */
  started: string;
}

/** Rows in key order (the primary key's index), joined here: no sort or aggregate at the server. */
function joinTokens(rows: TokenRow[]): Map<string, string> {
  const tokens = new Map<string, string>();
  for (const r of rows) {
    const before = tokens.get(r.scope);
    tokens.set(r.scope, `${before === undefined ? `${r.started}|` : `${before},`}${r.source}=${r.version}`);
  }
  return tokens;
}

/**
 * One scope's token, read together with every other scope asked for in the same turn (concurrent reads
 * mostly share `*` and their coach's scope): one round trip for all of them (src/db/coalesce.ts).
 */
const tokenReader = perDatabase((db: Queryable) =>
  coalesced<string, string | undefined>(
    async (scopes) => {
      const res = await db.query<TokenRow>(
        `SELECT scope, source, version, ${STARTED} FROM read_versions WHERE scope = ANY($1::text[]) ORDER BY scope, source`,
        [scopes],
        { name: 'read_versions' },
      );
      const tokens = joinTokens(res.rows);
      return scopes.map((s) => tokens.get(s));
    },
    (s) => s,
  ),
);

/**
 * Gives scopes that have no row yet one (`init`), so their answers can be cached from the next read on.
 * The row commits before the answer is computed, so an answer cached under it is at least that fresh.
 */
export async function ensureScopes(db: Queryable, scopes: string[]): Promise<void> {
  if (!scopes.length) return;
  await db.query(
    `INSERT INTO read_versions (scope, source, version)
     SELECT DISTINCT s, 'init', ${XACT} FROM unnest($1::text[]) s ORDER BY 1 ON CONFLICT DO NOTHING`,
    [scopes],
  );
}

/** Bumps the `*` scope: every cached answer is recomputed (a rebuild swapped read models in). */
export const BUMP_EVERYTHING = `INSERT INTO read_versions (scope, source, version) VALUES ('*', 'epoch', ${XACT})
  ON CONFLICT (scope, source) DO UPDATE SET version = EXCLUDED.version`;
