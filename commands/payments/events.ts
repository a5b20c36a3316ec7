import type { DomainEvent } from '../../src/decider';

/** Payment.status values of the interface document. */
export const PAYMENT_STATUSES = [
  'awaiting',
  'checkout',
  'review',
  'received',
  'canceled',
  'failed',
  'refund',
  'delivered',
  'deleted',
] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/**
 * Written by a booking: the payment of one booking group, waiting for the provider, or received at once
 * when there is nothing to pay (a free service: price 0).
 */
export type PaymentCreated = DomainEvent<
  'PaymentCreated',
  {
    paymentId: string;
    groupId: string;
    status: 'awaiting' | 'received';
    price: number;
    currency: string;
    methodId: number;
    method: string;
    coachId: string;
    clientId: string;
    serviceId: string;
    /** ISO instant after which an unpaid payment is canceled by the system. */
    expiresAt: string;
    createdAt: string;
  }
>;

/** Every status move, by the provider, a user, or the system (expiry). */
export type PaymentStatusChanged = DomainEvent<
  'PaymentStatusChanged',
  {
    paymentId: string;
    groupId: string;
    from: PaymentStatus;
    to: PaymentStatus;
    at: string;
    /** Why: 'provider', 'canceled_by_service', 'expired', ... */
    reason: string;
    providerEventId?: string;
    clientSecret?: string;
    checkout?: Record<string, unknown>;
  }
>;

export type PaymentEvent = PaymentCreated | PaymentStatusChanged;

export const paymentStream = (paymentId: string) => `payment-${paymentId}`;
