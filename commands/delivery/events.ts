import type { DomainEvent } from '../../src/decider';
import type { MailMessage } from '../../src/mail/mailer';

/**
 * The e-mail delivery ledger: one stream per (causing event, recipient), kept in the event store with the
 * log (never with the read models), so rebuilding or replacing the read-model database sends nothing again.
 * Optimistic concurrency on the stream makes every claim exclusive.
 */
export const deliveryStream = (causeEventId: string, recipient: string) =>
  `delivery-${causeEventId}-${recipient}`;

/** A sender took the delivery until `leaseUntil`; a claim not followed by an outcome by then is taken over. */
export type DeliveryClaimed = DomainEvent<
  'DeliveryClaimed',
  {
    causeEventId: string;
    recipient: string;
    /** Rendered on the first claim only; takeovers and retries send exactly this message again. */
    message?: MailMessage;
    template: string;
    messageId: string;
    attempt: number;
    claimedAt: string;
    leaseUntil: string;
    /** Which process claimed it (host:pid), for operators. */
    by: string;
    /** Set when a stale claim of another sender was taken over. */
    takeover?: boolean;
  }
>;
export type DeliverySent = DomainEvent<
  'DeliverySent',
  { messageId: string; sentAt: string; attempt: number }
>;
/** A temporary refusal: sent again at `nextAttemptAt`. */
export type DeliveryDeferred = DomainEvent<
  'DeliveryDeferred',
  { attempt: number; error: string; nextAttemptAt: string; at: string }
>;
/** A final refusal (SMTP 5xx) or too many temporary ones: never sent again unless requeued. */
export type DeliveryFailed = DomainEvent<'DeliveryFailed', { attempt: number; error: string; at: string }>;
/** An operator asked to try a failed delivery again (due at once, attempts counted afresh). */
export type DeliveryRequeued = DomainEvent<'DeliveryRequeued', { at: string; by: string }>;

export type DeliveryEvent =
  DeliveryClaimed | DeliverySent | DeliveryDeferred | DeliveryFailed | DeliveryRequeued;

export const DELIVERY_EVENT_TYPES: DeliveryEvent['type'][] = [
  'DeliveryClaimed',
  'DeliverySent',
  'DeliveryDeferred',
  'DeliveryFailed',
  'DeliveryRequeued',
];
