import fs from 'node:fs';
import os from 'node:os';
import { PGlite, types } from '@electric-sql/pglite';
import type { Database, Queryable, QueryResult } from './database';

/** Another process holds the embedded database: an operator's situation, told in one line, not a crash. */
export class EmbeddedDatabaseInUseError extends Error {
  override name = 'EmbeddedDatabaseInUseError';
}

/** Data directories this process has open. */
const openHere = new Set<string>();

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * PGlite's files take one process at a time: a second one (a second `npm start`, a rebuild or seed run beside
 * the service) would write the same files and corrupt them. `<dataDir>.lock` names the holder; a lock whose
 * process is gone (a crash, `kill -9`) is taken over. Returns the release.
 */
export function lockDataDir(dataDir: string): () => void {
  const dir = fs.realpathSync(dataDir);
  const file = `${dir}.lock`;
  if (openHere.has(dir)) throw new Error(`the embedded database ${dir} is already open in this process`);
  const me = { pid: process.pid, host: os.hostname() };
  for (let tries = 0; ; tries++) {
    try {
      fs.writeFileSync(file, JSON.stringify({ ...me, since: new Date().toISOString() }), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || tries > 3) throw err;
    }
    let holder: { pid?: unknown; host?: unknown } = {};
    try {
      holder = JSON.parse(fs.readFileSync(file, 'utf8')) as typeof holder;
    } catch {
      /* unreadable (garbage, or a holder in the instant between creating and writing it): stale */
    }
    const pid = typeof holder.pid === 'number' ? holder.pid : null;
    const sameHost = holder.host === me.host;
    // Our own pid in the file is a previous life of this process number (a restarted container's pid 1).
    const held = pid !== null && (!sameHost || (pid !== me.pid && alive(pid)));
    if (held)
      throw new EmbeddedDatabaseInUseError(
        `the embedded database ${dir} is in use by process ${pid} on ${String(holder.host)} ` +
          `(${file}); PGlite opens in one process at a time: stop that process, or go through it over HTTP`,
      );
    fs.rmSync(file, { force: true });
  }
  openHere.add(dir);
  return () => {
    openHere.delete(dir);
    try {
      const holder = JSON.parse(fs.readFileSync(file, 'utf8')) as { pid?: unknown };
      if (holder.pid === me.pid) fs.rmSync(file, { force: true });
    } catch {
      /* gone already */
    }
  };
}

/**
 * PGlite is one in-process connection: a query issued while a transaction is open would run inside it.
 * Every statement and transaction therefore goes through one queue, so transactions never interleave.
 */
export async function createPgliteDatabase(dataDir?: string): Promise<Database> {
  if (dataDir) fs.mkdirSync(dataDir, { recursive: true });
  const release = dataDir ? lockDataDir(dataDir) : () => undefined;
  let db: PGlite;
  try {
    db = await PGlite.create({
      dataDir,
      // Same representation as the pg adapter: 64-bit integers and numerics as strings.
      parsers: { [types.INT8]: (v: string) => v, [types.NUMERIC]: (v: string) => v },
    });
  } catch (err) {
    release();
    throw err;
  }

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
    close: () =>
      exclusive(async () => {
        try {
          await db.close();
        } finally {
          release();
        }
      }),
  };
}
