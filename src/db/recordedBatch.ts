import { prepareValue } from 'pg/lib/utils';
import type { Queryable, QueryResult } from '../db/database';

let batches = 0;

/** Rows per merged INSERT at most (bounds one statement's text). */
const MAX_ROWS = 1000;

/**
 * A Queryable that records statements instead of running them, so a page of events replays in one round
 * trip. Each distinct statement is prepared once per page (`PREPARE`, typed by PostgreSQL exactly as the
 * extended protocol node-postgres uses would type it) and run with `EXECUTE`, its parameters written as
 * the text node-postgres would have sent (`prepareValue`), quoted as literals. The page then goes as one
 * multi-statement simple query, parsed and planned once per statement text instead of once per event.
 *
 * Consecutive runs of the same plain INSERT or upsert (see `mergeableInsert`) become one multi-row INSERT: the same
 * rows in the same order, with a fifth of the server's work per row (no statement, portal and executor
 * per event). Anything else, and any run of one, is an EXECUTE as above.
 *
 * Read models only write, so nothing needs a result; one that reads a result fails loudly here rather
 * than replaying wrong.
 */
export function recordingQueryable(): { tx: Queryable; take(): string } {
  const batch = ++batches;
  let recorded: { sql: string; params: unknown[] }[] = [];
  const noResult = new Proxy({} as QueryResult<never>, {
    get(_, key) {
      if (key === 'then') return undefined; // not a thenable
      throw new Error('a read model read a query result during a batched rebuild; make its apply write-only');
    },
  });
  const shapes = new Map<string, InsertShape | null>();
  const shapeOf = (sql: string) => {
    let shape = shapes.get(sql);
    if (shape === undefined) shapes.set(sql, (shape = mergeableInsert(sql)));
    return shape;
  };
  return {
    tx: {
      async query<R>(sql: string, params: unknown[] = []): Promise<QueryResult<R>> {
        recorded.push({ sql, params });
        return noResult as QueryResult<R>;
      },
    },
    take() {
      if (!recorded.length) return '';
      const names = new Map<string, string>();
      const prepares: string[] = [];
      const statements: string[] = [];
      for (let i = 0; i < recorded.length;) {
        const { sql, params } = recorded[i]!;
        const shape = shapeOf(sql);
        let end = i + 1;
        if (shape) {
          // An upsert's run stops before a row whose key is already in it (DO UPDATE touches a row once).
          const keys = shape.key ? new Set([shape.key(params)]) : null;
          while (end < recorded.length && end - i < MAX_ROWS && recorded[end]!.sql === sql) {
            if (keys) {
              const key = shape.key!(recorded[end]!.params);
              if (keys.has(key)) break;
              keys.add(key);
            }
            end++;
          }
        }
        if (end - i > 1) {
          const rows = recorded.slice(i, end).map((r) => shape!.row(r.params.map(literal)));
          statements.push(`${shape!.head} VALUES ${rows.join(', ')}${shape!.tail}`);
          i = end;
          continue;
        }
        let name = names.get(sql);
        if (!name) {
          // Unique per page: a prepared statement outlives a failed transaction on its connection.
          name = `rebuild_${batch}_${names.size}`;
          names.set(sql, name);
          prepares.push(`PREPARE ${name} AS ${sql}`);
        }
        statements.push(
          params.length ? `EXECUTE ${name}(${params.map(literal).join(', ')})` : `EXECUTE ${name}`,
        );
        i++;
      }
      recorded = [];
      return [
        // One plan per statement for the whole page; read-model statements are keyed look-ups.
        'SET LOCAL plan_cache_mode TO force_generic_plan',
        ...prepares,
        ...statements,
        ...[...names.values()].map((n) => `DEALLOCATE ${n}`),
      ].join(';\n');
    },
  };
}

interface InsertShape {
  /** `INSERT INTO table (columns)` */
  head: string;
  /** ` ON CONFLICT ... DO NOTHING`, ` ON CONFLICT (cols) DO UPDATE SET col = EXCLUDED.col, ...` or empty */
  tail: string;
  /** For DO UPDATE: the conflict key of a row, from its parameters (rows of one statement must differ). */
  key?: (params: unknown[]) => string;
  /** One `(…)` row with each `$n` replaced by the n-th literal. */
  row(literals: string[]): string;
}

/** A VALUES item that cannot read anything: a parameter (maybe cast), a constant, NULL, true, false. */
const SIMPLE_ITEM =
  /^(\$\d+(::[a-z_][a-z0-9_ ]*(\[\])?)?|true|false|null|-?\d+(\.\d+)?|'[^'\\]*'(::[a-z_][a-z0-9_ ]*)?)$/i;
const INSERT =
  /^\s*(insert\s+into\s+[a-z_][a-z0-9_]*\s*\(([a-z0-9_,\s]+)\))\s*values\s*\(([^()]*)\)\s*(on\s+conflict(\s*\(([a-z0-9_,\s]+)\))?\s+do\s+(nothing|update\s+set\s+(.*?)))?\s*;?\s*$/is;
/** `col = EXCLUDED.col`: the new row's own value, nothing read from another row. */
const SET_ITEM = /^([a-z_][a-z0-9_]*)\s*=\s*excluded\.([a-z_][a-z0-9_]*)$/i;

/**
 * The shape of `INSERT INTO t (cols) VALUES (items) [ON CONFLICT [(cols)] DO NOTHING]` when merging
 * consecutive executions of it into one multi-row INSERT gives the same rows: every item a parameter or
 * a constant (no subquery or function that could read the table and see the earlier rows differently),
 * no RETURNING. `DO UPDATE` only as `SET col = EXCLUDED.col, ...` on a conflict target of parameters, and
 * then a run holds each key once (one statement may not touch a row twice; see `key`). Otherwise null.
 * PostgreSQL coerces each row's literals to the target columns' types, as it typed the parameters.
 */
export function mergeableInsert(sql: string): InsertShape | null {
  const m = INSERT.exec(sql);
  if (!m) return null;
  const [, head, columnList, valueList, conflict, , targetList, action, setList] = m;
  const columns = columnList!.split(',').map((x) => x.trim().toLowerCase());
  const items = valueList!.split(',').map((x) => x.trim());
  if (items.length !== columns.length || !items.every((x) => SIMPLE_ITEM.test(x))) return null;
  const parts = items.map((x) => {
    const p = /^\$(\d+)(.*)$/.exec(x);
    return p ? { param: Number(p[1]) - 1, rest: p[2]! } : { text: x };
  });
  let key: InsertShape['key'];
  if (action && !/^nothing$/i.test(action)) {
    // DO UPDATE: only `col = EXCLUDED.col` assignments, and a conflict target made of parameters.
    const sets = setList!.split(',').map((x) => SET_ITEM.exec(x.trim()));
    if (!targetList || sets.some((x) => !x || x[1]!.toLowerCase() !== x[2]!.toLowerCase())) return null;
    const keyParams = targetList.split(',').map((c) => {
      const part = parts[columns.indexOf(c.trim().toLowerCase())];
      return part?.param ?? -1; // a constant in the key: not merged
    });
    if (keyParams.includes(-1)) return null;
    key = (params) => JSON.stringify(keyParams.map((k) => prepareValue(params[k])));
  }
  return {
    head: head!.replace(/\s+/g, ' '),
    tail: conflict ? ` ${conflict.replace(/\s+/g, ' ')}` : '',
    ...(key ? { key } : {}),
    row: (literals) =>
      `(${parts
        .map((p) => {
          if ('text' in p) return p.text;
          const value = literals[p.param];
          if (value === undefined) throw new Error(`no parameter $${p.param + 1} for: ${sql}`);
          return value + p.rest;
        })
        .join(', ')})`,
  };
}

function literal(value: unknown): string {
  const text = prepareValue(value);
  if (text === null) return 'NULL';
  if (Buffer.isBuffer(text)) return `'\\x${text.toString('hex')}'::bytea`;
  return quoteLiteral(text);
}

/**
 * pg's `escapeLiteral`, the very same text, without its character-by-character concatenation: that built a
 * new string per character of every parameter (JSON documents included) and was most of a batched page's
 * garbage. Quotes doubled; with a backslash, the ` E'…'` form with backslashes doubled, as pg writes it.
 */
export function quoteLiteral(text: string): string {
  const quotes = text.includes("'") ? text.replace(/'/g, "''") : text;
  if (!text.includes('\\')) return `'${quotes}'`;
  return ` E'${quotes.replace(/\\/g, '\\\\')}'`;
}
