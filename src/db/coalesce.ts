/**
 * Look-ups asked for in the same turn of the event loop, answered by one statement (the DataLoader
 * pattern). Concurrent requests and process managers each read a stream or a version row; on a 2-core
 * machine a round trip to PostgreSQL costs more CPU (a socket write, a wake-up of the backend, a parse of
 * the answer) than the look-up itself, so N look-ups in one statement cost little more than one.
 *
 * Never staler than a look-up of its own: a batch is sent after every call in it was made (at the end of
 * the turn, `setImmediate`), never joined once sent, so its snapshot is at least as recent as any of them.
 * A failed batch fails each of its callers.
 */
export function coalesced<K, V>(
  /** The answers to `keys` (distinct by `keyOf`), in their order. */
  run: (keys: K[]) => Promise<V[]>,
  keyOf: (key: K) => string,
  /** Keys per statement at most (bounds its size); more are sent as further statements at once. */
  maxKeys = 200,
): (key: K) => Promise<V> {
  let pending: Map<string, { key: K; waiters: { resolve(v: V): void; reject(e: unknown): void }[] }> | null =
    null;
  const flush = (batch: NonNullable<typeof pending>) => {
    const entries = [...batch.values()];
    for (let i = 0; i < entries.length; i += maxKeys) {
      const part = entries.slice(i, i + maxKeys);
      const fail = (err: unknown) => part.forEach((e) => e.waiters.forEach((w) => w.reject(err)));
      run(part.map((e) => e.key)).then((values) => {
        if (values.length !== part.length) return fail(new Error('coalesced: one answer per key expected'));
        part.forEach((e, k) => e.waiters.forEach((w) => w.resolve(values[k]!)));
      }, fail);
    }
  };
  return (key) =>
    new Promise<V>((resolve, reject) => {
      if (!pending) {
        const batch = (pending = new Map());
        setImmediate(() => {
          pending = null;
          flush(batch);
        });
      }
      const id = keyOf(key);
      const entry = pending.get(id);
      if (entry) entry.waiters.push({ resolve, reject });
      else pending.set(id, { key, waiters: [{ resolve, reject }] });
    });
}

/** `make(db)`, made once per database object (for look-ups coalesced per database). */
export function perDatabase<D extends object, T>(make: (db: D) => T): (db: D) => T {
  const made = new WeakMap<D, T>();
  return (db) => {
    let t = made.get(db);
    if (t === undefined) made.set(db, (t = make(db)));
    return t;
  };
}
