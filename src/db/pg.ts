import { Pool, types, type PoolClient } from 'pg';
import type { Database, Queryable, QueryOptions, QueryResult, TransactionOptions } from './database';

// int8 and numeric come back as strings; callers convert to bigint where they need it.
types.setTypeParser(types.builtins.INT8, (v) => v);

export interface PgOptions {
  max?: number;
  /**
   * Longest wait for a connection: a new one to a server that does not answer (a dropped network, a
   * blackholed route), or a free one of the pool. Beyond it the query fails as "database unavailable"
   * (HTTP 503, a projection retries) instead of waiting for ever. Default 10 s.
   */
  connectTimeoutMs?: number;
  /**
   * Longest wait for the answer to one statement (0: none). A server that stops answering on a connection
   * it keeps open (stopped, blackholed, a hung failover) is found by TCP keepalive only after minutes, if at
   * all: beyond this the statement fails as "database unavailable" (HTTP 503, a projection retries) and its
   * connection is closed, so the next caller gets a new one. Default 10 s; migrations are not bounded.
   */
  queryTimeoutMs?: number;
}

/** node-postgres's error for a statement whose answer did not come within its `query_timeout`. */
const isQueryTimeout = (err: unknown) =>
  (err as { message?: unknown } | null)?.message === 'Query read timeout';

export function createPgDatabase(connectionString: string, opts: PgOptions = {}): Database {
  const pool = new Pool({
    connectionString,
    max: opts.max ?? 10,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 10_000,
    // A server that vanished without closing the connection is found by TCP keepalive, not never.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    // The event store's ordering and every read model's upserts are written for READ COMMITTED, whatever a
    // database or role was set to default to (the pool awaits this before it hands the connection out).
    onConnect: async (client) => {
      await client.query("SET default_transaction_isolation TO 'read committed'");
    },
  });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => undefined);
  const bound = opts.queryTimeoutMs ?? 10_000;
  // node-postgres reads 0 as "the connection's default", which is none here.
  const statement = (
    text: string,
    params: unknown[] | undefined,
    name: string | undefined,
    timeoutMs: number,
  ) => ({
    text,
    values: params,
    ...(name ? { name } : {}),
    query_timeout: timeoutMs,
  });

  // A timed-out statement's connection goes: pool.query releases it with the error, which destroys it.
  const query = async <R>(sql: string, params?: unknown[], opts?: QueryOptions): Promise<QueryResult<R>> => {
    const res = await pool.query(statement(sql, params, opts?.name, bound));
    return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
  };

  /** BEGIN (with whatever travels with it), fn, then COMMIT (with whatever fn sends along), on one client. */
  const inTransaction = async <T>(
    begin: string,
    fn: (tx: Queryable, rows: unknown[]) => Promise<{ value: T; last: string }>,
    timeoutMs = bound,
  ): Promise<T> => {
    const client = await pool.connect();
    // A connection lost between two statements is reported as an 'error' event; the next statement fails
    // anyway, so the event only needs a listener (without one Node would end the process).
    let lost = false;
    const onLost = () => {
      lost = true;
    };
    client.on('error', onLost);
    try {
      // Several statements in one simple query answer an array of results: the last one is `first`'s.
      const opened = (await client.query(statement(begin, undefined, undefined, timeoutMs))) as unknown as
        { rows: unknown[] } | { rows: unknown[] }[];
      const rows = Array.isArray(opened) ? opened[opened.length - 1]!.rows : opened.rows;
      const tx: Queryable = {
        query: async <R>(sql: string, params?: unknown[], opts?: QueryOptions) => {
          const res = await client.query(statement(sql, params, opts?.name, timeoutMs));
          return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
        },
      };
      const { value, last } = await fn(tx, rows);
      // An error in `last` ends the simple query before its COMMIT: the catch below rolls back.
      await client.query(statement(last ? `${last}; COMMIT` : 'COMMIT', undefined, undefined, timeoutMs));
      return value;
    } catch (err) {
      // The connection of a statement that got no answer still waits for it: closed, not asked to roll
      // back (the server rolls back a transaction whose connection closes before its COMMIT).
      if (isQueryTimeout(err)) lost = true;
      else await client.query(statement('ROLLBACK', undefined, undefined, timeoutMs)).catch(() => undefined);
      throw err;
    } finally {
      client.off('error', onLost);
      client.release(lost); // a lost connection is destroyed, not handed to the next caller
    }
  };

  return {
    kind: 'pg',
    query,
    transaction<T>(fn: (tx: Queryable) => Promise<T>, opts?: TransactionOptions): Promise<T> {
      return inTransaction(
        'BEGIN',
        async (tx) => ({ value: await fn(tx), last: '' }),
        opts?.unbounded ? 0 : bound,
      );
    },
    framedTransaction<R, T>(
      first: string,
      fn: (tx: Queryable, rows: R[]) => Promise<{ value: T; last: string }>,
    ): Promise<T> {
      return inTransaction(`BEGIN; ${first}`, (tx, rows) => fn(tx, rows as R[]));
    },
    async listen(channel, onNotify) {
      // A dedicated connection. If the server drops it (restart, failover), it is replaced at once (then
      // every second while that fails), and listeners are woken once LISTEN is back, since notifications
      // sent meanwhile are lost.
      let closed = false;
      let current: { client: PoolClient; drop: (destroy: boolean) => void } | null = null;
      let timer: NodeJS.Timeout | undefined;
      const handler = (msg: { channel: string; payload?: string }) => {
        if (msg.channel === channel) onNotify(msg.payload ?? '');
      };
      let replacing = false;
      const retry = (delay: number) => {
        replacing = true;
        clearTimeout(timer); // one reconnection at a time
        if (!closed) timer = setTimeout(() => void connect(), delay);
      };
      const connect = async (): Promise<void> => {
        if (closed) return;
        let c: PoolClient;
        try {
          c = await pool.connect();
        } catch {
          return retry(1000);
        }
        let released = false;
        const drop = (destroy: boolean) => {
          if (released) return;
          released = true;
          c.off('notification', handler);
          c.release(destroy);
          if (current?.client === c) current = null;
        };
        // Closed while this connection was being made: it goes back, or pool.end() would wait for it.
        if (closed) return drop(false);
        c.on('notification', handler);
        // Stays attached for the client's life: 'error' can fire more than once on a dying connection,
        // and an 'error' event without a listener would end the process.
        // A connection's one way out when it fails: the error event and a failed LISTEN can both come for
        // the same death, and must not start two replacements (two listeners, one never given back).
        const fail = (delay: number) => {
          if (released) return;
          drop(true);
          onNotify('');
          retry(delay);
        };
        c.on('error', () => fail(0));
        try {
          await c.query(`LISTEN ${channel}`);
        } catch {
          return fail(1000);
        }
        if (closed) return drop(true);
        current = { client: c, drop };
        // Notifications sent while no connection listened are lost: wake listeners once LISTEN is back.
        if (replacing) {
          replacing = false;
          onNotify('');
        }
      };
      await connect();
      return async () => {
        closed = true;
        clearTimeout(timer);
        const held = current;
        if (!held) return;
        await held.client.query(`UNLISTEN ${channel}`).catch(() => undefined);
        held.drop(false);
      };
    },
    close: () => pool.end(),
  };
}
