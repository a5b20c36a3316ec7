import type { PaymentStatusChanged } from '../payments/events';

/**
 * In-app notices (no e-mail: no template exists for them) that are not about a session's time: a coach's
 * new review, and a client's money. Pure: the notification process reads what a message names.
 */

/** Notification.type of a client's payment notice. */
export type PaymentNoticeType = 'payment_received' | 'payment_refund' | 'payment_canceled' | 'payment_failed';

/**
 * The notice a payment move may give its client, decided from the move alone (no stream read, so the moves
 * of a booking's hot path, and every move that tells no one, cost nothing): received (again, also after a
 * refund that did not go through), moved to refund, or canceled. Not a cancel that followed the booking's
 * last session declined or canceled (`booking_canceled`, an unpaid payment): its session's notice (or the
 * client's own act) told it, and nothing was paid. A cancel may still be told by the session notices (see
 * `cancelToldBySessions`). A failure tells the client by when to pay again (`payBy`). Every other move
 * (checkout, review, delivered, deleted) tells no one.
 */
export function paymentNoticeType(d: PaymentStatusChanged['data']): PaymentNoticeType | null {
  switch (d.to) {
    case 'received':
      return 'payment_received';
    case 'refund':
      return 'payment_refund';
    case 'canceled':
      return d.reason === 'booking_canceled' ? null : 'payment_canceled';
    case 'failed':
      return 'payment_failed';
    default:
      return null;
  }
}

/**
 * Whether a payment's cancel is told to the client by session notices already: a canceled payment cancels
 * its booking's open (`new`, `approved`) sessions with reason `payment_canceled`, and each such
 * `session_canceled` notice tells both parties why. So the move is told when the booking has an open session
 * (read before the booking side canceled it) or one canceled for the payment (read after); a payment is
 * canceled once (canceled moves on only to deleted), so such a session was canceled for this move.
 */
export function cancelToldBySessions(sessions: { state: string; canceledFor?: string }[]): boolean {
  return sessions.some(
    (s) => s.state === 'new' || s.state === 'approved' || s.canceledFor === 'payment_canceled',
  );
}

/**
 * The in-app text of a payment notice. `payBy` (a failure's): the deadline as a local label, when the payment
 * can still be made before the expiry cancels the booking.
 */
export function paymentNoticeMessage(
  type: PaymentNoticeType,
  serviceName: string,
  d: Pick<PaymentStatusChanged['data'], 'from' | 'reason'>,
  payBy?: string,
): string {
  switch (type) {
    case 'payment_failed':
      return `Your payment for ${serviceName} failed${
        payBy ? `: pay again by ${payBy}, or the booking is canceled then` : ''
      }`;
    case 'payment_received':
      return `Payment received for ${serviceName}`;
    case 'payment_refund':
      return `Your payment for ${serviceName} is being refunded`;
    case 'payment_canceled':
      return `Your payment for ${serviceName} was canceled${
        d.from === 'refund' ? ' after its refund' : d.reason === 'expired' ? ': it was not made in time' : ''
      }`;
  }
}

/** The in-app text of a coach's notice of a review. */
export const reviewNoticeMessage = (serviceName: string, rating: number) =>
  `New review of ${serviceName} (${rating}/5)`;
