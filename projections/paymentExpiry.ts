import type { PaymentEvent } from '../commands/payments/events';
import { UNPAID_STATUSES } from '../commands/payments/transitions';
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
        await tx.query(
          `INSERT INTO payment_expiry_due (payment_id, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
          [event.data.paymentId, event.data.expiresAt],
        );
        return;
      case 'PaymentStatusChanged':
        // failed -> checkout stays unpaid; a payment that left the unpaid states never comes back to them.
        if (!UNPAID_STATUSES.includes(event.data.to))
          await tx.query('DELETE FROM payment_expiry_due WHERE payment_id = $1', [event.data.paymentId]);
        return;
      default:
        assertNever(event);
    }
  },
};
