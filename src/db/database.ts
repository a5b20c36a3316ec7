/**
 * The project's small database interface. Two adapters: node-postgres (a pool) and PGlite (one
 * in-process connection). Code above this line never knows which one it talks to.
 */
export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface QueryOptions {
  /**
   * A name for a hot statement of fixed text: on PostgreSQL it is prepared once per connection and its plan
   * reused (planning cost more than running the cached reads' version look-up). Ignored elsewhere.
   */
  name?: string;
}

export interface TransactionOptions {
  /** No bound on how long a statement may take (migrations: an index built on a big table, a lock held by
   * another instance's migrations); otherwise the database's query timeout applies. */
  unbounded?: boolean;
}

export interface Queryable {
  query<R = Record<string, unknown>>(
    sql: string,
    params?: unknown[],
    opts?: QueryOptions,
  ): Promise<QueryResult<R>>;
}

export interface Database extends Queryable {
  readonly kind: 'pg' | 'pglite';
  /** Runs fn in one transaction: commit when it resolves, roll back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, opts?: TransactionOptions): Promise<T>;
  /**
   * One transaction in two fewer round trips: `first` travels with BEGIN and the `last` that fn returns
   * travels with COMMIT (node-postgres sends each pair as one simple query). Both must be parameterless SQL
   * (build literals with `sqlLiteral`); fn gets the rows of `first`. Commit when fn resolves, roll back
   * when it throws or `last` fails.
   */
  framedTransaction<R, T>(
    first: string,
    fn: (tx: Queryable, rows: R[]) => Promise<{ value: T; last: string }>,
  ): Promise<T>;
  /** LISTEN on a channel; resolves to an unlisten function. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** A SQL string literal for the parameterless statements of `framedTransaction`. */
export const sqlLiteral = (value: string): string => `'${value.replace(/'/g, "''")}'`;
