import type { Database } from './db/database';
import type { EventStore } from './eventstore/types';
import type { Logger } from './log';
import { LEASES, type Leases } from './leases';
import { deliveries } from './mail/delivery';
import { SYSTEM_ACTOR } from './paymentExpirySweeper';
import type { Mailer } from './mail/mailer';

export { MAX_MAIL_ATTEMPTS, retryDelayMs } from '../commands/delivery/decider';

/** Candidates read from the read model at a time (a pass reads pages until none is due). */
const PAGE = 50;

export interface MailRetry {
  /** Sends the deferred e-mails due at `now`, and those whose sender died (lease over); resolves to how many went out. */
  retryDue(now?: Date): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

/**
 * Sends e-mails again: deferred ones when due, and claims left `sending` by a sender that died once their
 * lease is over. Candidates come from the `email_deliveries` read model; each is then claimed on its ledger
 * stream (the decision), so two instances, or a stale read model, never send one twice.
 */
export function createMailRetry(
  deps: {
    db: Database;
    store: EventStore;
    mailer: Mailer;
    clock: () => Date;
    log: Logger;
    leaseMs: number;
    /** With several instances, mail goes out from the holder of the mail lease only. */
    leases?: Leases;
  },
  intervalMs = 30_000,
): MailRetry {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<number> | null = null;
  let unwatch: (() => void) | undefined;
  let stopping = false;
  const owner = () => !deps.leases || deps.leases.holds(LEASES.mail);

  const retryOnce = async (now: Date): Promise<number> => {
    if (!owner()) return 0;
    // Claims and records are stamped with the clock as it runs on from `now`: a pass behind a slow or
    // failing relay sends one e-mail after the other for minutes, and a claim stamped with the pass's start
    // could be born with its lease over, free for another sender to take over while this one sends it.
    const started = performance.now();
    const ledger = deliveries({
      ...deps,
      clock: () => new Date(now.getTime() + performance.now() - started),
    });
    // Page after page until none is left: after a relay outage the whole backlog goes out in this pass, one
    // after the other (a sending slot at a time, the others left to new e-mail), not 50 every 30 s. A
    // delivery handled in this pass is not tried again in it, also while the read model still shows it due.
    const handled = new Set<string>();
    let sent = 0;
    for (;;) {
      const due = await deps.db.query<{ stream: string; cause_event_id: string }>(
        `(SELECT stream, cause_event_id, next_attempt_at AS due FROM email_deliveries
           WHERE status = 'deferred' AND next_attempt_at <= $1 AND stream <> ALL($2::text[])
           ORDER BY next_attempt_at LIMIT ${PAGE})
         UNION ALL
         (SELECT stream, cause_event_id, lease_until AS due FROM email_deliveries
           WHERE status = 'sending' AND lease_until <= $1 AND stream <> ALL($2::text[])
           ORDER BY lease_until LIMIT ${PAGE})
         ORDER BY due`,
        [now.toISOString(), [...handled]],
      );
      if (!due.rows.length) return sent;
      for (const row of due.rows) {
        // Lost the lease: the new owner sends the rest. Stopping: the next start does.
        if (!owner() || stopping) return sent;
        handled.add(row.stream);
        // In the cause's correlation, as the first attempt was (the ledger's first event carries it): an
        // auditor's chain of the cause then shows the retried sending among its effects.
        const first = (await deps.store.readStream(row.stream)).events[0];
        const correlationId = first?.metadata.correlationId ?? row.cause_event_id;
        const metadata = { causationId: row.cause_event_id, correlationId, actor: SYSTEM_ACTOR };
        // Skipped when sent, re-claimed or not due after all: the ledger says so.
        if ((await ledger.retry(row.stream, metadata)) === 'sent') sent++;
      }
    }
  };

  const retryDue = (now = deps.clock()) => {
    // One pass at a time: the timer and an on-demand call share it.
    running ??= retryOnce(now).finally(() => {
      running = null;
    });
    return running;
  };

  const tick = () =>
    retryDue().catch((err: unknown) =>
      deps.log.warn('e-mail retry pass failed', {
        error: err instanceof Error ? err.message : String(err),
      }),
    );

  return {
    retryDue,
    start() {
      stopping = false;
      timer = setInterval(tick, intervalMs);
      timer.unref();
      // Taking the mail lease over: what the previous owner deferred or left half-sent goes out from here.
      unwatch = deps.leases?.watch(LEASES.mail, (held) => {
        if (held) void tick();
      });
    },
    async stop() {
      stopping = true; // a pass under way ends after the e-mail it is sending
      unwatch?.();
      if (timer) clearInterval(timer);
      timer = null;
      await running?.catch(() => undefined);
    },
  };
}
