import type { Database } from './db/database';
import type { Logger } from './log';
import { IDEMPOTENCY_TTL_HOURS } from './http/idempotency';

export interface IdempotencyPruner {
  /** Deletes every key older than its 24 h; resolves to how many. */
  prune(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

/** Rows per statement: a short lock each, however many keys a day brought. */
const BATCH = 1000;

/**
 * Forgets Idempotency-Keys once their 24 h are over. Before, a key's row went only when the same key came
 * again, so the table (with every answer it replays, webhook secrets included) grew for ever. The log still
 * decides after that: a keyed request run again finds its events by their tag (src/http/idempotency.ts).
 * Every instance prunes; the deletes are idempotent, and rows one instance took are skipped by the others.
 */
export function createIdempotencyPruner(
  deps: { db: Database; log: Logger },
  intervalMs = 10 * 60_000,
): IdempotencyPruner {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<number> | null = null;

  const pruneAll = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const res = await deps.db.query(
        `DELETE FROM idempotency_keys WHERE (scope, key) IN (
           SELECT scope, key FROM idempotency_keys
            WHERE created_at < now() - interval '${IDEMPOTENCY_TTL_HOURS} hours'
            LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)`,
      );
      total += res.rowCount;
      if (res.rowCount < BATCH) return total;
    }
  };
  // Prunes never overlap: a caller arriving during one waits for it.
  const prune = async (): Promise<number> => {
    while (running) await running.catch(() => undefined);
    running = pruneAll();
    try {
      return await running;
    } finally {
      running = null;
    }
  };
  const tick = () =>
    void prune().catch((err: unknown) =>
      deps.log.warn('idempotency keys not pruned; tried again later', { error: String(err) }),
    );
  return {
    prune,
    start() {
      tick();
      timer = setInterval(tick, intervalMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      await running?.catch(() => undefined);
    },
  };
}
