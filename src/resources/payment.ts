import type { PaymentRecord } from '../../commands/payments/decider';
import { notFound } from '../http/errors';

/** `Payment` of the interface document, exactly (no additional properties). */
export interface PaymentOut {
  status: string;
  price: number;
  currency: string;
  methodId: number;
  coachId: string;
  clientId: string;
  serviceId: string;
  clientSecret?: string;
  checkout?: Record<string, unknown>;
}

export const toPaymentOut = (
  p: Omit<PaymentRecord, 'id' | 'groupId' | 'method' | 'expiresAt' | 'createdAt'>,
): PaymentOut => ({
  status: p.status,
  price: p.price,
  currency: p.currency,
  methodId: p.methodId,
  coachId: p.coachId,
  clientId: p.clientId,
  serviceId: p.serviceId,
  ...(p.clientSecret != null ? { clientSecret: p.clientSecret } : {}),
  ...(p.checkout != null ? { checkout: p.checkout } : {}),
});

export const paymentNotFound = () => notFound('payment_not_found', 'no payment with this id');
