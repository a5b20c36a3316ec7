import type { PaymentStatus } from './events';

/** DESIGN section 7: the only moves a payment makes. Anything else is `invalid_transition`. */
export const PAYMENT_TRANSITIONS: Record<PaymentStatus, readonly PaymentStatus[]> = {
  awaiting: ['checkout', 'canceled', 'deleted'],
  checkout: ['received', 'review', 'failed', 'canceled'],
  review: ['received', 'failed', 'canceled'],
  failed: ['checkout', 'canceled', 'deleted'],
  received: ['delivered', 'refund'],
  refund: ['canceled', 'received'],
  delivered: ['refund', 'deleted'],
  canceled: ['deleted'],
  deleted: [],
};

export const canMove = (from: PaymentStatus, to: PaymentStatus): boolean =>
  PAYMENT_TRANSITIONS[from].includes(to);

/**
 * A booking's payment starts awaiting the client's money, or received when there is none to collect: a
 * free service (price 0) must not be canceled as unpaid at its deadline.
 */
export const initialStatus = (price: number): 'awaiting' | 'received' =>
  price > 0 ? 'awaiting' : 'received';

/**
 * Paid to the coach at the session (`cash`): its deadline is the first session's start, and it is never
 * canceled as unpaid (the payment service records the money when the coach has it). Canceling every
 * session of the booking still cancels it.
 */
export const paidAtSession = (method: string): boolean => method === 'cash';

/** Not received yet. */
export const UNPAID_STATUSES: readonly PaymentStatus[] = ['awaiting', 'checkout', 'review', 'failed'];

/** A payment move that cancels its booking's open sessions: canceled, or deleted while unpaid. */
export const cancelsBooking = (from: PaymentStatus, to: PaymentStatus): boolean =>
  to === 'canceled' || (to === 'deleted' && UNPAID_STATUSES.includes(from));

/**
 * Unpaid with no money in flight: these expire at `expiresAt`. A payment in checkout or review is the
 * provider's to settle (its outcome arrives as an update); canceling it under the provider could take a
 * client's money for a booking we had just released.
 */
export const EXPIRABLE_STATUSES: readonly PaymentStatus[] = ['awaiting', 'failed'];

/** Endpoint 17 applies a user's update to the newest payment whose status is not one of these. */
export const CLOSED_STATUSES: readonly PaymentStatus[] = ['canceled', 'deleted', 'delivered'];
