import { escapeLiteral } from 'pg';
import { prepareValue } from 'pg/lib/utils';
import type { Queryable, QueryResult } from '../db/database';

let batches = 0;

/**
 * A Queryable that records statements instead of running them, so a page of events replays in one round
 * trip. Each distinct statement is prepared once per page (`PREPARE`, typed by PostgreSQL exactly as the
 * extended protocol node-postgres uses would type it) and run with `EXECUTE`, its parameters written as
 * the text node-postgres would have sent (`prepareValue`), quoted as literals. The page then goes as one
 * multi-statement simple query, parsed and planned once per statement text instead of once per event.
 * Read models only write, so nothing needs a result; one that reads a result fails loudly here rather
 * than replaying wrong.
 */
export function recordingQueryable(): { tx: Queryable; take(): string } {
  const batch = ++batches;
  const names = new Map<string, string>();
  let prepares: string[] = [];
  let statements: string[] = [];
  const noResult = new Proxy({} as QueryResult<never>, {
    get(_, key) {
      if (key === 'then') return undefined; // not a thenable
      throw new Error('a read model read a query result during a batched rebuild; make its apply write-only');
    },
  });
  return {
    tx: {
      async query<R>(sql: string, params: unknown[] = []): Promise<QueryResult<R>> {
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
        return noResult as QueryResult<R>;
      },
    },
    take() {
      if (!statements.length) return '';
      const out = [
        // One plan per statement for the whole page; read-model statements are keyed look-ups.
        'SET LOCAL plan_cache_mode TO force_generic_plan',
        ...prepares,
        ...statements,
        ...[...names.values()].map((n) => `DEALLOCATE ${n}`),
      ].join(';\n');
      names.clear();
      prepares = [];
      statements = [];
      return out;
    },
  };
}

function literal(value: unknown): string {
  const text = prepareValue(value);
  if (text === null) return 'NULL';
  if (Buffer.isBuffer(text)) return `'\\x${text.toString('hex')}'::bytea`;
  return escapeLiteral(text);
}
