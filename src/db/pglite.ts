import fs from 'node:fs';
import { PGlite, types } from '@electric-sql/pglite';
import type { Database, Queryable, QueryResult } from './database';

/**
 * PGlite is one in-process connection: a query issued while a transaction is open would run inside it.
 * Every statement and transaction therefore goes through one queue, so transactions never interleave.
 */
export async function createPgliteDatabase(dataDir?: string): Promise<Database> {
  if (dataDir) fs.mkdirSync(dataDir, { recursive: true });
  const db = await PGlite.create({
    dataDir,
    // Same representation as the pg adapter: 64-bit integers and numerics as strings.
    parsers: { [types.INT8]: (v: string) => v, [types.NUMERIC]: (v: string) => v },
  });

  let queue: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const run = queue.then(work, work);
    queue = run.catch(() => undefined);
    return run;
  };
  const raw = async <R>(sql: string, params?: unknown[]): Promise<QueryResult<R>> => {
    const res = await db.query<R>(sql, params as unknown[]);
    // affectedRows counts DML; a SELECT reports 0 there, so its rows count instead.
    return { rows: res.rows, rowCount: Math.max(res.affectedRows ?? 0, res.rows.length) };
  };
  const transaction = <T>(fn: (tx: Queryable) => Promise<T>): Promise<T> =>
    exclusive(async () => {
      await raw('BEGIN');
      try {
        const result = await fn({ query: raw });
        await raw('COMMIT');
        return result;
      } catch (err) {
        await raw('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  const listeners = new Map<string, Set<(payload: string) => void>>();

  return {
    kind: 'pglite',
    query: (sql, params) => exclusive(() => raw(sql, params)),
    transaction,
    framedTransaction<R, T>(
      first: string,
      fn: (tx: Queryable, rows: R[]) => Promise<{ value: T; last: string }>,
    ): Promise<T> {
      // One connection in the process: no round trips to save, so the statements simply run in turn.
      return transaction(async (tx) => {
        const { value, last } = await fn(tx, (await tx.query<R>(first)).rows);
        if (last) await tx.query(last);
        return value;
      });
    },
    async listen(channel, onNotify) {
      let set = listeners.get(channel);
      if (!set) {
        const fresh = new Set<(payload: string) => void>();
        listeners.set(channel, fresh);
        set = fresh;
        await exclusive(() => db.listen(channel, (payload) => fresh.forEach((cb) => cb(payload))));
      }
      set.add(onNotify);
      return async () => {
        set.delete(onNotify);
      };
    },
    close: () => exclusive(() => db.close()),
  };
}
