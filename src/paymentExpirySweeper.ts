import { handleCommand } from './commandHandler';
import type { Database } from './db/database';
import type { EventMetadata, EventStore } from './eventstore/types';
import type { Logger } from './log';
import { LEASES, type Leases } from './leases';
import { periodicSweep, type PeriodicSweep, type SweepGuards } from './periodicSweep';
import { paymentDecider } from '../commands/payments/decider';
import { paymentStream } from '../commands/payments/events';

/** Who expires payments: recorded as the actor of every expiry. */
export const SYSTEM_ACTOR = { userId: '00000000-0000-0000-0000-000000000000', role: 'system' };

export type PaymentExpirySweeper = PeriodicSweep;

/**
 * Cancels unpaid payments whose `expiresAt` has passed. The deadlines live in the `payment_expiry_due`
 * read model, not in timers, so a restart loses nothing: the sweeper runs at start and then every
 * `intervalMs`. Each expiry goes through the decider, which does nothing to a payment received meanwhile.
 */
export function createPaymentExpirySweeper(
  deps: { db: Database; store: EventStore; clock: () => Date; log: Logger; leases?: Leases },
  intervalMs = 5000,
  batchSize = 100,
): PaymentExpirySweeper {
  const sweepOnce = async ({ owner, stopped }: SweepGuards): Promise<number> => {
    if (!owner()) return 0;
    const now = deps.clock().toISOString();
    let expired = 0;
    // Page after page (a cursor on the deadline): a row the decider expires nothing for (a payment the log
    // reads as received, a free booking's stored by an older release before a rebuild, or one that failed)
    // stays in the table, and a first page full of such rows must not hold every later deadline back.
    let after: { at: string; id: string } | null = null;
    for (;;) {
      // The deadline goes back as PostgreSQL printed it: exact to the microsecond, unlike a Date.
      const due: { rows: { id: string; at: string }[] } = await deps.db.query<{ id: string; at: string }>(
        `SELECT payment_id AS id, expires_at::text AS at FROM payment_expiry_due
         WHERE expires_at <= $1 AND NOT in_flight
           AND ($3::timestamptz IS NULL OR (expires_at, payment_id) > ($3::timestamptz, $4::uuid))
         ORDER BY expires_at, payment_id LIMIT $2`,
        [now, batchSize, after?.at ?? null, after?.id ?? null],
      );
      for (const { id } of due.rows) {
        if (!owner()) return expired;
        const metadata: EventMetadata = { actor: SYSTEM_ACTOR, correlationId: `expiry-${id}` };
        try {
          const outcome = await handleCommand(
            deps.store,
            paymentStream(id),
            paymentDecider,
            // Decided (and recorded) at the clock of this decision, not of the sweep's start: a long sweep's
            // expiry must not be recorded before a provider's move to the payment made meanwhile.
            { type: 'ExpirePayment', paymentId: id, now: deps.clock().toISOString() },
            metadata,
          );
          if (outcome.ok && outcome.events.length) expired++;
        } catch (err) {
          deps.log.error('payment expiry failed', { paymentId: id, error: String(err) });
        }
      }
      const last = due.rows[due.rows.length - 1];
      if (due.rows.length < batchSize || !last || stopped()) break;
      after = { at: last.at, id: last.id };
    }
    return expired;
  };

  return periodicSweep(deps, { name: 'payment expiry', lease: LEASES.paymentExpiry, intervalMs }, sweepOnce);
}
