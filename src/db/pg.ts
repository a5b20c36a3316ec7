import { Pool, types, type PoolClient } from 'pg';
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
      // A connection lost between two statements is reported as an 'error' event; the next statement fails
      // anyway, so the event only needs a listener (without one Node would end the process).
      let lost = false;
      const onLost = () => {
        lost = true;
      };
      client.on('error', onLost);
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
        client.off('error', onLost);
        client.release(lost); // a lost connection is destroyed, not handed to the next caller
      }
    },
    async listen(channel, onNotify) {
      // A dedicated connection. If the server drops it (restart, failover), it is replaced after a pause,
      // and listeners are woken once, since notifications sent meanwhile are lost.
      let client: PoolClient | null = null;
      let closed = false;
      const handler = (msg: { channel: string; payload?: string }) => {
        if (msg.channel === channel) onNotify(msg.payload ?? '');
      };
      const connect = async (): Promise<void> => {
        try {
          const c = await pool.connect();
          c.on('notification', handler);
          let broken = false;
          c.on('error', () => {
            // 'error' may fire more than once on a dying client; a listener must stay, or Node throws.
            if (broken) return;
            broken = true;
            c.release(true);
            if (client === c) client = null;
            onNotify('');
            if (!closed) setTimeout(() => void connect(), 1000);
          });
          await c.query(`LISTEN ${channel}`);
          client = c;
        } catch {
          if (!closed) setTimeout(() => void connect(), 1000);
        }
      };
      await connect();
      return async () => {
        closed = true;
        const c = client;
        client = null;
        if (!c) return;
        c.off('notification', handler);
        await c.query(`UNLISTEN ${channel}`).catch(() => undefined);
        c.release();
      };
    },
    close: () => pool.end(),
  };
}
