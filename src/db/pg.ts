import { Pool, types } from 'pg';
import type { Database, Queryable, QueryResult } from './database';

// int8 and numeric come back as strings; callers convert to bigint where they need it.
types.setTypeParser(types.builtins.INT8, (v) => v);

export function createPgDatabase(connectionString: string, opts: { max?: number } = {}): Database {
  const pool = new Pool({ connectionString, max: opts.max ?? 10 });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => undefined);

  const query = async <R>(sql: string, params?: unknown[]): Promise<QueryResult<R>> => {
    const res = await pool.query(sql, params as unknown[]);
    return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
  };

  return {
    kind: 'pg',
    query,
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const tx: Queryable = {
          query: async <R>(sql: string, params?: unknown[]) => {
            const res = await client.query(sql, params as unknown[]);
            return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
          },
        };
        const result = await fn(tx);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    async listen(channel, onNotify) {
      const client = await pool.connect();
      const handler = (msg: { channel: string; payload?: string }) => {
        if (msg.channel === channel) onNotify(msg.payload ?? '');
      };
      client.on('notification', handler);
      await client.query(`LISTEN ${channel}`);
      return async () => {
        client.off('notification', handler);
        await client.query(`UNLISTEN ${channel}`).catch(() => undefined);
        client.release();
      };
    },
    close: () => pool.end(),
  };
}
