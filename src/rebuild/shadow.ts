import type { Queryable } from '../db/database';

/** Double quotes an identifier (schema and table names come from code, but quoting costs nothing). */
export const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Creates `shadow.table` shaped exactly like `live.table`: columns, defaults, CHECK and NOT NULL
 * constraints, and the primary key, unique constraints and indexes under their original names (names are
 * per schema, so they do not collide; after the swap the table carries the names its migrations gave it).
 */
export async function createShadowTable(db: Queryable, live: string, shadow: string, table: string) {
  // Unlogged while it fills (no WAL per row); setLogged writes it to the WAL in one go before the swap.
  const liveT = `${ident(live)}.${ident(table)}`;
  const shadowT = `${ident(shadow)}.${ident(table)}`;
  await db.query(
    `CREATE UNLOGGED TABLE ${shadowT} (LIKE ${liveT} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED
       INCLUDING IDENTITY)`,
  );
  const constraints = await db.query<{ conname: string; def: string }>(
    `SELECT c.conname, pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
     WHERE c.conrelid = $1::regclass AND c.contype IN ('p', 'u', 'x') ORDER BY c.conname`,
    [liveT],
  );
  for (const c of constraints.rows)
    await db.query(`ALTER TABLE ${shadowT} ADD CONSTRAINT ${ident(c.conname)} ${c.def}`);
  const indexes = await db.query<{ def: string }>(
    `SELECT pg_get_indexdef(i.indexrelid) AS def FROM pg_index i
     WHERE i.indrelid = $1::regclass
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid)
     ORDER BY i.indexrelid`,
    [liveT],
  );
  for (const { def } of indexes.rows) {
    // "CREATE [UNIQUE] INDEX name ON [schema.]table USING ..." -> the same on the shadow table.
    const moved = def.replace(/ ON (ONLY )?\S+ USING /, ` ON ${shadowT} USING `);
    if (moved === def) throw new Error(`cannot read the definition of an index on ${table}: ${def}`);
    await db.query(moved);
  }
}

/** Makes the filled shadow tables crash-safe like the live ones, before they are swapped in. */
export async function setLogged(db: Queryable, shadow: string, tables: string[]) {
  for (const t of tables) await db.query(`ALTER TABLE ${ident(shadow)}.${ident(t)} SET LOGGED`);
}

/**
 * In the caller's transaction: the live tables move to `retired`, the shadow's into the live schema.
 * `ALTER TABLE … SET SCHEMA` takes each table's exclusive lock until commit, so readers see either the
 * old tables or the new ones, never a mix.
 */
export async function swapTables(
  tx: Queryable,
  live: string,
  shadow: string,
  retired: string,
  tables: string[],
) {
  await tx.query(`CREATE SCHEMA ${ident(retired)}`);
  for (const t of tables) {
    await tx.query(`ALTER TABLE ${ident(live)}.${ident(t)} SET SCHEMA ${ident(retired)}`);
    await tx.query(`ALTER TABLE ${ident(shadow)}.${ident(t)} SET SCHEMA ${ident(live)}`);
  }
}

export interface TableDifference {
  table: string;
  onlyLive: unknown[];
  onlyRebuilt: unknown[];
  /** Rows on each side that have no equal on the other (may exceed the samples shown). */
  count: number;
}

/** Rows of `live.table` and `shadow.table` compared as whole rows (multiset difference, both ways). */
export async function compareTable(
  db: Queryable,
  live: string,
  shadow: string,
  table: string,
  sample = 10,
): Promise<TableDifference | null> {
  const l = `${ident(live)}.${ident(table)}`;
  const s = `${ident(shadow)}.${ident(table)}`;
  // to_jsonb makes every column comparable (json and point have no equality operator).
  const diff = async (a: string, b: string) =>
    db.query<{ row: unknown; n: string }>(
      `SELECT row, count(*) OVER () AS n FROM
         (SELECT to_jsonb(x) AS row FROM ${a} x EXCEPT ALL SELECT to_jsonb(y) FROM ${b} y) d
       LIMIT ${sample}`,
    );
  const onlyLive = await diff(l, s);
  const onlyRebuilt = await diff(s, l);
  const count = Number(onlyLive.rows[0]?.n ?? 0) + Number(onlyRebuilt.rows[0]?.n ?? 0);
  if (count === 0) return null;
  return {
    table,
    onlyLive: onlyLive.rows.map((r) => r.row),
    onlyRebuilt: onlyRebuilt.rows.map((r) => r.row),
    count,
  };
}
