import type { DeliveryEvent } from '../commands/delivery/events';
import { assertNever } from '../src/decider';
import type { Projection } from './runner';

/**
 * Read model `email_deliveries`: one row per e-mail delivery (status sending / sent / deferred / failed,
 * attempts, last error, Message-ID), fed from the delivery ledger in the event store. It is for display
 * (operators, the admin page) and for the retry job to find candidates; every decision to send is taken on
 * the ledger stream itself, so losing or rebuilding this table sends nothing twice.
 */
export const emailDeliveriesProjection: Projection = {
  name: 'email-deliveries',
  handles: ['DeliveryClaimed', 'DeliverySent', 'DeliveryDeferred', 'DeliveryFailed', 'DeliveryRequeued'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as DeliveryEvent;
    const stream = recorded.streamName;
    switch (event.type) {
      case 'DeliveryClaimed': {
        const d = event.data;
        await tx.query(
          `INSERT INTO email_deliveries (stream, cause_event_id, recipient, address, subject, template, status,
             attempts, message_id, lease_until, claimed_by, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, 'sending', $7, $8, $9, $10, $11, $11)
           ON CONFLICT (stream) DO UPDATE SET status = 'sending', attempts = EXCLUDED.attempts,
             lease_until = EXCLUDED.lease_until, claimed_by = EXCLUDED.claimed_by, next_attempt_at = NULL,
             updated_at = EXCLUDED.updated_at`,
          [
            stream,
            d.causeEventId,
            d.recipient,
            d.message?.to ?? '',
            d.message?.subject ?? '',
            d.template,
            d.attempt,
            d.messageId,
            d.leaseUntil,
            d.by,
            d.claimedAt,
          ],
        );
        return;
      }
      case 'DeliverySent':
        await tx.query(
          `UPDATE email_deliveries SET status = 'sent', message_id = $2, sent_at = $3, lease_until = NULL,
             error = NULL, updated_at = $3 WHERE stream = $1`,
          [stream, event.data.messageId, event.data.sentAt],
        );
        return;
      case 'DeliveryDeferred':
        await tx.query(
          `UPDATE email_deliveries SET status = 'deferred', next_attempt_at = $2, error = $3, lease_until = NULL,
             updated_at = $4 WHERE stream = $1`,
          [stream, event.data.nextAttemptAt, event.data.error, event.data.at],
        );
        return;
      case 'DeliveryFailed':
        await tx.query(
          `UPDATE email_deliveries SET status = 'failed', error = $2, lease_until = NULL, next_attempt_at = NULL,
             updated_at = $3 WHERE stream = $1`,
          [stream, event.data.error, event.data.at],
        );
        return;
      case 'DeliveryRequeued':
        await tx.query(
          `UPDATE email_deliveries SET status = 'deferred', attempts = 0, next_attempt_at = $2, updated_at = $2
           WHERE stream = $1`,
          [stream, event.data.at],
        );
        return;
      default:
        assertNever(event);
    }
  },
};
