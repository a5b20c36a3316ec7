import type { PaymentEvent } from '../commands/payments/events';
import { EXPIRABLE_STATUSES, UNPAID_STATUSES, paidAtSession } from '../commands/payments/transitions';
import { assertNever } from '../src/decider';
import type { Projection } from './runner';

/**
 * Read model `payment_expiry_due`: the payments not received yet, with their deadline. It is what the
 * expiry sweeper (src/paymentExpirySweeper.ts) reads, so a pending expiry survives a restart.
 */
export const paymentExpiryProjection: Projection = {
  name: 'payment_expiry',
  handles: ['PaymentCreated', 'PaymentStatusChanged'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as PaymentEvent;
    switch (event.type) {
      case 'PaymentCreated':
        // A free booking's payment is created received, and cash is paid at the session: no deadline.
        if (!UNPAID_STATUSES.includes(event.data.status) || paidAtSession(event.data.method)) return;
        await tx.query(
          `INSERT INTO payment_expiry_due (payment_id, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
          [event.data.paymentId, event.data.expiresAt],
        );
        return;
      case 'PaymentStatusChanged':
        // A payment that left the unpaid states never comes back to them; one in checkout or review keeps
        // its deadline but is not swept while the provider holds it (failed -> checkout -> failed is possible).
        if (!UNPAID_STATUSES.includes(event.data.to))
          await tx.query('DELETE FROM payment_expiry_due WHERE payment_id = $1', [event.data.paymentId]);
        else
          await tx.query('UPDATE payment_expiry_due SET in_flight = $2 WHERE payment_id = $1', [
            event.data.paymentId,
            !EXPIRABLE_STATUSES.includes(event.data.to),
          ]);
        return;
      default:
        assertNever(event);
    }
  },
};
