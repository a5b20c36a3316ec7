import type { PaymentEvent } from '../commands/payments/events';
import { assertNever } from '../src/decider';
import type { Projection } from './runner';

/**
 * Read model `payments`: one row per payment with its current status. Serves the owner's view and
 * endpoint 17 (a user's newest open payment); `seq` (global position) orders payments created at the
 * same instant.
 */
export const paymentsProjection: Projection = {
  name: 'payments',
  handles: ['PaymentCreated', 'PaymentStatusChanged'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as PaymentEvent;
    switch (event.type) {
      case 'PaymentCreated': {
        const d = event.data;
        await tx.query(
          `INSERT INTO payments (id, group_id, client_id, coach_id, service_id, status, price, currency, method_id,
             method, expires_at, created_at, seq)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
          [
            d.paymentId,
            d.groupId,
            d.clientId,
            d.coachId,
            d.serviceId,
            d.status,
            d.price,
            d.currency,
            d.methodId,
            d.method,
            d.expiresAt,
            d.createdAt,
            recorded.position.commit.toString(),
          ],
        );
        return;
      }
      case 'PaymentStatusChanged': {
        const d = event.data;
        // Like the decider: the latest clientSecret / checkout given is kept.
        await tx.query(
          `UPDATE payments SET status = $2, client_secret = COALESCE($3, client_secret),
             checkout = COALESCE($4::jsonb, checkout)
           WHERE id = $1`,
          [
            d.paymentId,
            d.to,
            d.clientSecret ?? null,
            d.checkout === undefined ? null : JSON.stringify(d.checkout),
          ],
        );
        return;
      }
      default:
        assertNever(event);
    }
  },
};
