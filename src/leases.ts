import { performance } from 'node:perf_hooks';
import { sqlLiteral, type Database, type Queryable } from './db/database';
import type { Logger } from './log';

/**
 * The work that must run on one instance at a time: the process managers (effects on other streams, mail)
 * and the sweepers. Read-model projections run on every instance (their checkpoint row decides).
 */
export const LEASES = {
  bookingProcess: 'booking-process',
  notificationProcess: 'notification-process',
  /** The e-mail process manager and the deferred-mail retry: one sender of mail. */
  mail: 'mail',
  paymentExpiry: 'payment-expiry',
  /** The session reminder sweeper (src/sessionReminderSweeper.ts). */
  sessionReminders: 'session-reminders',
  /** The webhook process manager (queues deliveries) and the dispatcher (sends them). */
  webhooks: 'webhooks',
  /** The process manager removing files that events made unreferenced (projections/blobCleanupProcess). */
  blobCleanup: 'blob-cleanup',
} as const;

/** What `/healthz` shows of a lease: who holds it and until when. */
export interface LeaseInfo {
  name: string;
  owner: string | null;
  expiresAt: string | null;
  /** Held by this instance. */
  mine: boolean;
}

/**
 * One owner at a time for each process manager and sweeper, across every instance of the service.
 * `holds` is what a worker checks before each effect; `watch` tells it when to start and stop.
 */
export interface Leases {
  readonly instanceId: string;
  holds(name: string): boolean;
  /** Calls `fn(true)` when this instance takes the lease (at once if it holds it), `fn(false)` when it loses it. */
  watch(name: string, fn: (held: boolean) => void): () => void;
  /** Inside a transaction: throws LeaseLostError unless the lease is still this instance's in the database. */
  fence(tx: Queryable, name: string): Promise<void>;
  /**
   * The same check as a parameterless SQL condition, to travel inside a statement the caller sends anyway
   * (null: nothing to check in the database); the caller throws LeaseLostError when it is false.
   */
  fenceCondition(name: string): string | null;
  status(): Promise<LeaseInfo[]>;
  /** Takes what it can at once, then renews (and tries to take the others) every `renewEveryMs`. */
  start(): Promise<void>;
  /** Gives every lease up, so another instance takes over at its next attempt instead of after expiry. */
  stop(): Promise<void>;
}

export class LeaseLostError extends Error {
  constructor(readonly lease: string) {
    super(`lease ${lease} is no longer held by this instance`);
    this.name = 'LeaseLostError';
  }
}

export interface LeaseOptions {
  instanceId: string;
  names: readonly string[];
  /** How long a lease lasts without renewal: the longest a dead owner's work waits for a taker. */
  ttlMs?: number;
  renewEveryMs?: number;
  log: Logger;
}

/** Watchers per lease name, and the transitions between held and not held. */
function watchers() {
  const byName = new Map<string, Set<(held: boolean) => void>>();
  return {
    add(name: string, fn: (held: boolean) => void) {
      const set = byName.get(name) ?? new Set();
      byName.set(name, set);
      set.add(fn);
      return () => void set.delete(fn);
    },
    emit(name: string, held: boolean) {
      for (const fn of [...(byName.get(name) ?? [])]) fn(held);
    },
  };
}

/**
 * Leases in PostgreSQL (`process_leases`). Time is the database's (`now()`), so instances' clocks may
 * disagree. A renewal sent at local time t extends the lease to the database's now + ttl, which is no
 * earlier than t + ttl, so this instance trusts its lease until t + ttl by its own monotonic clock and no
 * longer: when renewals stop succeeding (database unreachable, process stalled), it stops acting before
 * another instance can take the lease over. The epoch counts owners, for the record.
 */
export function createPgLeases(db: Database, opts: LeaseOptions): Leases {
  const { instanceId, names, ttlMs = 5000, log } = opts;
  // Several renewals per lifetime, so one slow answer does not lose the lease.
  const renewEveryMs = opts.renewEveryMs ?? Math.min(1000, Math.floor(ttlMs / 3));
  /** Local monotonic deadline of each lease held. */
  const validUntil = new Map<string, number>();
  const held = new Set<string>();
  const w = watchers();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let ticking: Promise<void> = Promise.resolve();

  const holds = (name: string) => held.has(name) && performance.now() < (validUntil.get(name) ?? 0);

  const lose = (name: string, why: string) => {
    if (!held.delete(name)) return;
    validUntil.delete(name);
    log.warn('lease lost', { lease: name, instance: instanceId, why });
    w.emit(name, false);
  };

  const tick = async () => {
    const sentAt = performance.now();
    let mine: Set<string>;
    try {
      const res = await db.query<{ name: string }>(
        `INSERT INTO process_leases (name, owner, expires_at, epoch, acquired_at)
         SELECT n, $2, now() + $3::int * interval '1 millisecond', 1, now() FROM unnest($1::text[]) AS n
         ON CONFLICT (name) DO UPDATE SET
           owner = EXCLUDED.owner,
           expires_at = EXCLUDED.expires_at,
           epoch = process_leases.epoch + CASE WHEN process_leases.owner = EXCLUDED.owner THEN 0 ELSE 1 END,
           acquired_at = CASE WHEN process_leases.owner = EXCLUDED.owner
                              THEN process_leases.acquired_at ELSE now() END
         WHERE process_leases.owner = EXCLUDED.owner OR process_leases.expires_at <= now()
         RETURNING name`,
        [names, instanceId, ttlMs],
      );
      mine = new Set(res.rows.map((r) => r.name));
    } catch (err) {
      // Nothing known: leases held stay trusted until their deadline, and no longer.
      for (const name of [...held])
        if (!holds(name)) lose(name, `not renewed: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    if (stopped) return;
    // An answer that took longer than the lease itself proves nothing about now: not trusted. Workers that
    // stopped meanwhile hear of a loss, and of a new start once a renewal comes back in time.
    const late = performance.now() >= sentAt + ttlMs;
    for (const name of names) {
      if (mine.has(name) && !late) {
        if (held.has(name) && !holds(name)) lose(name, 'renewed after its local deadline');
        validUntil.set(name, sentAt + ttlMs);
        if (!held.has(name)) {
          held.add(name);
          log.info('lease taken', { lease: name, instance: instanceId });
          w.emit(name, true);
        }
      } else lose(name, late ? 'renewal answered too late' : 'another instance holds it');
    }
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      ticking = tick().finally(schedule);
    }, renewEveryMs);
    timer.unref();
  };

  return {
    instanceId,
    holds,
    watch(name, fn) {
      const off = w.add(name, fn);
      if (holds(name)) fn(true);
      return off;
    },
    async fence(tx, name) {
      const res = await tx.query(
        'SELECT 1 FROM process_leases WHERE name = $1 AND owner = $2 AND expires_at > now()',
        [name, instanceId],
      );
      if (res.rowCount === 0 || !holds(name)) throw new LeaseLostError(name);
    },
    fenceCondition: (name) =>
      `EXISTS (SELECT 1 FROM process_leases WHERE name = ${sqlLiteral(name)} AND owner = ${sqlLiteral(
        instanceId,
      )} AND expires_at > now())`,
    async status() {
      const res = await db.query<{ name: string; owner: string; expires_at: Date | string }>(
        'SELECT name, owner, expires_at FROM process_leases WHERE name = ANY($1::text[]) ORDER BY name',
        [names],
      );
      const rows = new Map(res.rows.map((r) => [r.name, r]));
      return [...names].sort().map((name) => {
        const r = rows.get(name);
        return {
          name,
          owner: r?.owner ?? null,
          expiresAt: r ? new Date(r.expires_at).toISOString() : null,
          mine: holds(name),
        };
      });
    },
    async start() {
      stopped = false;
      ticking = tick();
      await ticking;
      schedule();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await ticking.catch(() => undefined);
      for (const name of [...held]) lose(name, 'instance stopping');
      await db
        .query('UPDATE process_leases SET expires_at = now() WHERE owner = $1', [instanceId])
        .catch(() => undefined); // not released: it expires after ttl instead
    },
  };
}

/** One process by nature (embedded PGlite): every lease is this instance's, from start to stop. */
export function createLocalLeases(opts: Pick<LeaseOptions, 'instanceId' | 'names'>): Leases {
  const { instanceId, names } = opts;
  const held = new Set<string>();
  const w = watchers();
  return {
    instanceId,
    holds: (name) => held.has(name),
    watch(name, fn) {
      const off = w.add(name, fn);
      if (held.has(name)) fn(true);
      return off;
    },
    async fence(_tx, name) {
      if (!held.has(name)) throw new LeaseLostError(name);
    },
    fenceCondition: () => null,
    async status() {
      return [...names].sort().map((name) => ({
        name,
        owner: held.has(name) ? instanceId : null,
        expiresAt: null,
        mine: held.has(name),
      }));
    },
    async start() {
      for (const name of names)
        if (!held.has(name)) {
          held.add(name);
          w.emit(name, true);
        }
    },
    async stop() {
      for (const name of [...held]) {
        held.delete(name);
        w.emit(name, false);
      }
    },
  };
}
