import type { Config } from '../config';
import type { Database } from '../db/database';
import type { Logger } from '../log';
import type { EventStore } from '../eventstore/types';
import { LEASES, type Leases } from '../leases';
import { removeGoneChannel } from './goneChannel';
import { SIGNATURE_HEADER, channelSecret, signatureHeader } from './signing';
import { WebhookTargetError, postWebhook, type HostResolver } from './target';

/** Attempts per delivery before it is given up (`failed`). */
export const MAX_WEBHOOK_ATTEMPTS = 10;
/** Wait before attempt n + 1: 30 s, 1, 2, 4 … minutes, at most an hour (ten attempts span about 3 h). */
export const webhookRetryDelayMs = (attempts: number) => Math.min(30_000 * 2 ** (attempts - 1), 3_600_000);
/** A claim left `sending` this long belongs to a process that died mid-send; it may be taken over. */
const STALE_CLAIM_MS = 120_000;
const TIMEOUT_MS = 10_000;
/** First wait before recording an attempt's outcome again when the database refused it (then doubled, up to 5 s). */
const RECORD_RETRY_MS = 250;
/** Attempts under way at once (at most one per channel). */
const MAX_IN_FLIGHT = 20;
/**
 * Attempts under way at once for one user's channels: a user whose 20 channels point at receivers that never
 * answer holds this many places for their 10 s, not every place, so other users' webhooks still go out.
 */
export const MAX_IN_FLIGHT_PER_USER = 4;

/**
 * Claims up to `limit` due deliveries ($1 now, $2 the time before which a claim is stale, $3 the channels
 * with an attempt under way here, $4 and $5 the users with attempts under way here and how many), the oldest
 * of each channel and at most MAX_IN_FLIGHT_PER_USER under way per user, each row with `due`: how many were due in
 * all (busy channels' included), so the caller knows whether it left some behind. It runs every second and
 * after attempts, so it reads the open deliveries by their indexes (migrations 43 and 49), never every
 * delivery ever made. A delivery whose channel is no longer registered (`notification_channels`, which the
 * removal's answer waits for) is not claimed until the webhook process has marked it.
 */
export const claimDueSql = (limit: number) =>
  `WITH due AS (
     SELECT id, channel_id, user_id, next_attempt_at, created_at FROM webhook_deliveries
     WHERE ((status = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= $1))
        OR (status = 'sending' AND claimed_at < $2))
       -- A channel removed (its read model row gone: the removal was answered) before the webhook process
       -- read the removal and marked its deliveries: nothing is sent to it meanwhile.
       AND (channel_removed_at IS NOT NULL
         OR EXISTS (SELECT 1 FROM notification_channels c WHERE c.id = webhook_deliveries.channel_id))),
   first_of_channel AS (
     SELECT DISTINCT ON (channel_id) id, user_id, next_attempt_at, created_at FROM due
     WHERE NOT (channel_id = ANY($3::uuid[]))
     ORDER BY channel_id, next_attempt_at NULLS FIRST, created_at, id),
   picked AS (
     SELECT id FROM (
       SELECT f.*, row_number() OVER (PARTITION BY f.user_id ORDER BY f.next_attempt_at NULLS FIRST, f.created_at, f.id)
         AS nth FROM first_of_channel f) AS ranked
     LEFT JOIN unnest($4::uuid[], $5::int[]) AS busy(user_id, running) USING (user_id)
     WHERE nth <= ${MAX_IN_FLIGHT_PER_USER} - coalesce(busy.running, 0)
     ORDER BY next_attempt_at NULLS FIRST, created_at LIMIT ${limit})
   UPDATE webhook_deliveries SET status = 'sending', claimed_at = $1
   WHERE id IN (SELECT id FROM picked)
     AND ((status = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= $1))
        OR (status = 'sending' AND claimed_at < $2))
   RETURNING id, notification_id, channel_id, user_id, url, payload, attempts,
     channel_removed_at IS NOT NULL AS removed,
     (SELECT count(*) FROM due)::int AS due`;

export interface WebhookDispatcher {
  /** Sends the deliveries due at `now` (default the clock's); resolves to how many were delivered. */
  deliverDue(now?: Date): Promise<number>;
  /** Runs a pass soon (the process manager queued something). */
  kick(): void;
  start(): void;
  stop(): Promise<void>;
}

interface Due {
  id: string;
  notification_id: string;
  channel_id: string;
  user_id: string;
  url: string;
  payload: string;
  attempts: number;
  /** The user removed the channel while this delivery was claimed. */
  removed: boolean;
  /** Deliveries due in all when it was claimed. */
  due: number;
}

/**
 * Sends queued webhook deliveries: each row is claimed (pending -> sending) before it is sent, so two
 * instances never send it at once, then recorded `delivered`, rescheduled with backoff, or `failed`; every
 * attempt is logged in `webhook_attempts`. The schedule lives in the table, so a restart loses nothing.
 * A crash between the receiver's answer and the record leaves the claim `sending`; it is taken over after
 * two minutes and sent again with the same delivery id (`X-Coaching-Delivery`), which the receiver uses to
 * drop the repeat. That is the one case of a second send.
 */
export function createWebhookDispatcher(
  deps: {
    db: Database;
    /** Where a channel whose receiver is gone (410) is removed. */
    store: EventStore;
    clock: () => Date;
    log: Logger;
    config: Pick<Config, 'webhooks'>;
    leases?: Leases;
    /** How receivers' host names are resolved (default: DNS through c-ares, see `createHostResolver`). */
    resolve?: HostResolver;
  },
  intervalMs = 1000,
): WebhookDispatcher {
  let timer: NodeJS.Timeout | null = null;
  let claiming: Promise<Promise<boolean>[]> | null = null;
  let again = false;
  /** The last claim may have left due deliveries behind (no free place, or their channel was busy). */
  let leftBehind = false;
  let stopped = false;
  let unwatch: (() => void) | undefined;

  const attempt = async (row: Due, now: Date, signingKey: string): Promise<boolean> => {
    if (row.removed) {
      // A claim left by a sender that died after its channel was removed: not sent again, closed.
      await deps.db.query(
        `UPDATE webhook_deliveries SET status = 'failed', claimed_at = NULL, next_attempt_at = NULL,
           last_error = 'channel removed' WHERE id = $1 AND status = 'sending' AND claimed_at = $2`,
        [row.id, now.toISOString()],
      );
      return false;
    }
    const n = row.attempts + 1;
    const timestamp = Math.floor(now.getTime() / 1000);
    const secret = channelSecret(signingKey, row.channel_id);
    const started = Date.now();
    let status: number | null = null;
    let error: string | null = null;
    let permanent = false;
    try {
      ({ status } = await postWebhook(
        row.url,
        row.payload,
        {
          'content-type': 'application/json',
          'user-agent': 'coaching-webhooks/1',
          'x-coaching-delivery': row.id,
          'x-coaching-event': 'notification.created',
          [SIGNATURE_HEADER.toLowerCase()]: signatureHeader(secret, timestamp, row.payload),
        },
        { allowLoopback: deps.config.webhooks.allowLoopback, timeoutMs: TIMEOUT_MS, resolve: deps.resolve },
      ));
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      permanent = err instanceof WebhookTargetError; // the address policy will refuse it every time
    }
    const ok = status !== null && status >= 200 && status < 300;
    if (!ok && !error) error = `answered ${status}`;
    // 410 Gone: the receiver says it is gone for good. Not tried again, and its channel is removed (below).
    const gone = status === 410;
    const giveUp = !ok && (permanent || gone || n >= MAX_WEBHOOK_ATTEMPTS);
    const durationMs = Date.now() - started;
    const record = () =>
      deps.db.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, error, duration_ms)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
          [row.id, n, now.toISOString(), status, error?.slice(0, 1000) ?? null, durationMs],
        );
        await tx.query(
          // A channel removed during the attempt: a failure is the last one (no retry to a removed channel).
          // Only while the claim is still this attempt's: a sender that stalled past STALE_CLAIM_MS, whose
          // claim was taken over meanwhile, must not undo what the taker recorded (a late failure would put
          // a delivered webhook back in the queue, and send it again); a late success is still news.
          `UPDATE webhook_deliveries SET attempts = $2, last_status_code = $3, last_error = $4, claimed_at = NULL,
           status = CASE WHEN $5 = 'pending' AND channel_removed_at IS NOT NULL THEN 'failed' ELSE $5 END,
           delivered_at = $6,
           next_attempt_at = CASE WHEN channel_removed_at IS NOT NULL THEN NULL ELSE $7::timestamptz END
         WHERE id = $1 AND ((status = 'sending' AND claimed_at = $8)
            OR ($5 = 'delivered' AND status IN ('pending', 'sending')))`,
          [
            row.id,
            n,
            status,
            error?.slice(0, 1000) ?? null,
            ok ? 'delivered' : giveUp ? 'failed' : 'pending',
            ok ? now.toISOString() : null,
            ok || giveUp ? null : new Date(now.getTime() + webhookRetryDelayMs(n)).toISOString(),
            now.toISOString(),
          ],
        );
      });
    // The receiver has answered: the outcome must not be lost to a database that is away for a moment
    // (restarting, failing over), or the claim would look like a dead sender's in two minutes and the
    // webhook be sent again. Kept trying while the claim is still this attempt's, and not after a stop.
    for (let wait = RECORD_RETRY_MS; ; wait = Math.min(wait * 2, 5_000)) {
      try {
        await record();
        break;
      } catch (err) {
        if (stopped || Date.now() - started + wait >= STALE_CLAIM_MS) throw err;
        deps.log.warn('webhook outcome not recorded yet, trying again', {
          deliveryId: row.id,
          error: err instanceof Error ? err.message : String(err),
        });
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    if (gone) await removeGone(row, now);
    if (!ok)
      deps.log[giveUp ? 'error' : 'warn'](
        giveUp ? 'webhook delivery given up' : 'webhook delivery deferred',
        {
          deliveryId: row.id,
          attempt: n,
          error,
        },
      );
    return ok;
  };

  /**
   * After the 410 is recorded: a removal that fails (the event store away) is logged, and the channel's next
   * delivery, answered 410 again, removes it.
   */
  const removeGone = async (row: Due, now: Date) => {
    try {
      const removed = await removeGoneChannel(deps.store, {
        userId: row.user_id,
        channelId: row.channel_id,
        deliveryId: row.id,
        notificationId: row.notification_id,
        at: now.toISOString(),
      });
      if (removed)
        deps.log.warn('webhook receiver answered 410 Gone: channel removed', {
          deliveryId: row.id,
          channelId: row.channel_id,
        });
    } catch (err) {
      deps.log.warn('webhook receiver answered 410 Gone; its channel is not removed yet', {
        deliveryId: row.id,
        channelId: row.channel_id,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  };

  /**
   * Attempts under way, by delivery id, with their channel. Each runs on its own: a pass does not wait for
   * the attempts it started, so a receiver that takes its whole 10 s holds back no one else's webhooks, and
   * a channel has one attempt under way at a time, so a dead receiver's backlog takes one of the
   * MAX_IN_FLIGHT places, not all of them.
   */
  const inFlight = new Map<string, { channelId: string; userId: string; done: Promise<boolean> }>();

  /** Claims what is due (as many as there are free places) and starts the attempts; does not wait for them. */
  const pass = async (now: Date): Promise<Promise<boolean>[]> => {
    const signingKey = deps.config.webhooks.signingKey;
    if (signingKey === null) return []; // no key: nothing can be signed (see src/config.ts)
    // With several instances, webhooks go out from the holder of their lease only.
    if (deps.leases && !deps.leases.holds(LEASES.webhooks)) return [];
    const free = MAX_IN_FLIGHT - inFlight.size;
    if (free <= 0) {
      leftBehind = true;
      return [];
    }
    const busyChannels = [...new Set([...inFlight.values()].map((a) => a.channelId))];
    const running = new Map<string, number>();
    for (const a of inFlight.values()) running.set(a.userId, (running.get(a.userId) ?? 0) + 1);
    const due = await deps.db.query<Due>(claimDueSql(free), [
      now.toISOString(),
      new Date(now.getTime() - STALE_CLAIM_MS).toISOString(),
      busyChannels,
      [...running.keys()],
      [...running.values()],
    ]);
    leftBehind = due.rows.length ? due.rows[0]!.due > due.rows.length : busyChannels.length > 0;
    return due.rows.map((row) => {
      const done = attempt(row, now, signingKey)
        .catch((err: unknown) => {
          deps.log.warn('webhook attempt failed', {
            deliveryId: row.id,
            error: err instanceof Error ? err.message : String(err),
          });
          return false;
        })
        .finally(() => {
          inFlight.delete(row.id);
          // A place (or the channel) is free: what waits goes out now, not at the next tick.
          if (leftBehind && !stopped) setImmediate(background);
        });
      inFlight.set(row.id, { channelId: row.channel_id, userId: row.user_id, done });
      return done;
    });
  };

  /**
   * One claim at a time (two at once could each see a channel free). The answer counts the deliveries among
   * the attempts this call started and those already under way when it came (its caller waits for them).
   */
  const deliverDue = async (now?: Date): Promise<number> => {
    const waitFor = [...inFlight.values()].map((a) => a.done);
    if (claiming) {
      again = true;
      waitFor.push(...(await claiming));
    } else {
      claiming = (async () => {
        const started: Promise<boolean>[] = [];
        do {
          again = false;
          started.push(...(await pass(now ?? deps.clock())));
        } while (again && !stopped);
        return started;
      })().finally(() => {
        claiming = null;
      });
      waitFor.push(...(await claiming));
    }
    const results = await Promise.all(waitFor);
    return results.filter(Boolean).length;
  };

  const background = () => {
    if (stopped) return;
    deliverDue().catch((err: unknown) =>
      deps.log.warn('webhook pass failed', { error: err instanceof Error ? err.message : String(err) }),
    );
  };

  return {
    deliverDue,
    kick() {
      if (!stopped) setImmediate(background);
    },
    start() {
      stopped = false;
      timer = setInterval(background, intervalMs);
      timer.unref();
      // Taking the lease over: what the previous owner left pending goes out now.
      unwatch = deps.leases?.watch(LEASES.webhooks, (held) => {
        if (held && !stopped) setImmediate(background);
      });
    },
    async stop() {
      stopped = true;
      unwatch?.();
      if (timer) clearInterval(timer);
      timer = null;
      await claiming?.catch(() => undefined);
      await Promise.all([...inFlight.values()].map((a) => a.done));
    },
  };
}
