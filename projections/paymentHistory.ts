import type { PaymentStatusChanged } from '../commands/payments/events';
import type { Projection } from './runner';

/** Read model `payment_history`: every status move of a payment, who made it (event metadata) and why. */
export const paymentHistoryProjection: Projection = {
  name: 'payment_history',
  handles: ['PaymentStatusChanged'],
  async apply(tx, recorded) {
    const d = recorded.data as PaymentStatusChanged['data'];
    await tx.query(
      `INSERT INTO payment_history (payment_id, revision, from_status, to_status, at, reason, actor)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        d.paymentId,
        recorded.revision.toString(),
        d.from,
        d.to,
        d.at,
        d.reason,
        recorded.metadata.actor ? JSON.stringify(recorded.metadata.actor) : null,
      ],
    );
  },
};
