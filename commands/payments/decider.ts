import { left, right } from 'fp-ts/Either';
import { assertNever, type Decider } from '../../src/decider';
import type { PaymentCreated, PaymentEvent, PaymentStatus } from './events';
import { canMove, EXPIRABLE_STATUSES, paidAtSession } from './transitions';

/** Everything the write side knows of one payment: what it was created with, its status and provider data. */
export type PaymentRecord = Omit<PaymentCreated['data'], 'paymentId' | 'status'> & {
  id: string;
  status: PaymentStatus;
  clientSecret?: string;
  checkout?: Record<string, unknown>;
};

export interface PaymentState {
  payment: PaymentRecord | null;
  /** Every status the payment has been in, to tell a late provider event from a wrong one. */
  visited: PaymentStatus[];
  /** Provider event ids already applied: a redelivery changes nothing. */
  seenProviderEventIds: string[];
  /** Settled once because its booking was canceled: a replayed cause must not refund twice. */
  settledForCanceledBooking: boolean;
}

/** A status push from the payment provider integration (endpoints 15 and 17). */
export interface UpdatePayment {
  type: 'UpdatePayment';
  paymentId: string;
  to: PaymentStatus;
  clientSecret?: string;
  checkout?: Record<string, unknown>;
  providerEventId?: string;
  /** Fields of the `Payment` record sent along with the status: each must be the payment's own. */
  expected?: ExpectedPayment;
  now: string;
}
export type ExpectedPayment = Partial<
  Pick<PaymentRecord, 'price' | 'currency' | 'methodId' | 'coachId' | 'clientId' | 'serviceId'>
>;
/** Endpoint 16; and the booking process when every session of the booking is gone. */
export interface CancelPayment {
  type: 'CancelPayment';
  paymentId: string;
  now: string;
  /** Why, for the history; 'canceled_by_service' when not given. */
  reason?: string;
}
/**
 * The booking process: every session of a booking was declined or canceled, so its payment must not be
 * kept. Unpaid, it is canceled; received, it moves to refund; in the provider's hands (checkout, review),
 * it is left to the provider's outcome; already closed, nothing.
 */
export interface SettleCanceledBooking {
  type: 'SettleCanceledBooking';
  paymentId: string;
  now: string;
}
/** The expiry sweeper: cancels an unpaid payment once `now` has reached its `expiresAt`. */
export interface ExpirePayment {
  type: 'ExpirePayment';
  paymentId: string;
  now: string;
}
export type PaymentCommand = UpdatePayment | CancelPayment | ExpirePayment | SettleCanceledBooking;

const notFound = { code: 'payment_not_found', message: 'no payment with this id' };
const invalid = (from: PaymentStatus, to: PaymentStatus) => ({
  code: 'invalid_transition',
  message: `a payment cannot move from ${from} to ${to}`,
});

/** The first field of `expected` that is not the payment's own (ids and the currency in any case). */
function mismatch(p: PaymentRecord, expected: ExpectedPayment = {}) {
  const fields = ['price', 'currency', 'methodId', 'coachId', 'clientId', 'serviceId'] as const;
  for (const field of fields) {
    const sent = expected[field];
    if (sent === undefined) continue;
    const own = p[field];
    const same =
      typeof sent === 'string' && typeof own === 'string'
        ? sent.toLowerCase() === own.toLowerCase()
        : sent === own;
    if (!same)
      return {
        code: 'validation',
        message: `${field} does not match the payment (${String(own)}): an update moves the status only`,
        locs: [['body', field]],
      };
  }
  return null;
}

const moved = (
  p: PaymentRecord,
  to: PaymentStatus,
  at: string,
  reason: string,
  extra: Pick<UpdatePayment, 'providerEventId' | 'clientSecret' | 'checkout'> = {},
): PaymentEvent => ({
  type: 'PaymentStatusChanged',
  data: { paymentId: p.id, groupId: p.groupId, from: p.status, to, at, reason, ...extra },
});

export const paymentDecider: Decider<PaymentCommand, PaymentEvent, PaymentState> = {
  initialState: () => ({
    payment: null,
    visited: [],
    seenProviderEventIds: [],
    settledForCanceledBooking: false,
  }),

  evolve(state, event) {
    switch (event.type) {
      case 'PaymentCreated': {
        const d = event.data;
        return {
          ...state,
          payment: {
            id: d.paymentId,
            groupId: d.groupId,
            status: d.status,
            price: d.price,
            currency: d.currency,
            methodId: d.methodId,
            method: d.method,
            coachId: d.coachId,
            clientId: d.clientId,
            serviceId: d.serviceId,
            expiresAt: d.expiresAt,
            createdAt: d.createdAt,
          },
          visited: [d.status],
        };
      }
      case 'PaymentStatusChanged': {
        const d = event.data;
        if (!state.payment) return state;
        return {
          payment: {
            ...state.payment,
            status: d.to,
            ...(d.clientSecret !== undefined ? { clientSecret: d.clientSecret } : {}),
            ...(d.checkout !== undefined ? { checkout: d.checkout } : {}),
          },
          visited: state.visited.includes(d.to) ? state.visited : [...state.visited, d.to],
          seenProviderEventIds: d.providerEventId
            ? [...state.seenProviderEventIds, d.providerEventId]
            : state.seenProviderEventIds,
          settledForCanceledBooking: state.settledForCanceledBooking || d.reason === 'booking_canceled',
        };
      }
      default:
        return assertNever(event);
    }
  },

  decide(command, state) {
    const p = state.payment;
    if (!p) return left(notFound);
    switch (command.type) {
      case 'UpdatePayment': {
        const { to, providerEventId, clientSecret, checkout, now } = command;
        const wrong = mismatch(p, command.expected);
        if (wrong) return left(wrong);
        if (providerEventId !== undefined) {
          // Redelivery of an event already applied.
          if (state.seenProviderEventIds.includes(providerEventId)) return right([]);
          // Late and out of order: the payment has been in `to` before and moved on (e.g. 'checkout'
          // arriving after 'received'). Applying it would move money backwards, so it is ignored.
          // Not once the payment is closed: after an expiry, a provider's new attempt is real news that
          // must be refused loudly (409), never swallowed, or a charge could go unnoticed.
          const closed = p.status === 'canceled' || p.status === 'deleted';
          if (!closed && !canMove(p.status, to) && state.visited.includes(to)) return right([]);
        }
        if (!canMove(p.status, to)) return left(invalid(p.status, to));
        return right([
          moved(p, to, now, 'provider', {
            ...(providerEventId !== undefined ? { providerEventId } : {}),
            ...(clientSecret !== undefined ? { clientSecret } : {}),
            ...(checkout !== undefined ? { checkout } : {}),
          }),
        ]);
      }
      case 'CancelPayment':
        if (!canMove(p.status, 'canceled')) return left(invalid(p.status, 'canceled'));
        return right([moved(p, 'canceled', command.now, command.reason ?? 'canceled_by_service')]);
      case 'SettleCanceledBooking':
        if (state.settledForCanceledBooking) return right([]);
        // A free booking's payment (price 0) took no money: there is nothing to give back.
        if (p.status === 'received')
          return right(p.price > 0 ? [moved(p, 'refund', command.now, 'booking_canceled')] : []);
        if (EXPIRABLE_STATUSES.includes(p.status))
          return right([moved(p, 'canceled', command.now, 'booking_canceled')]);
        return right([]);
      case 'ExpirePayment':
        // Received, closed or in the provider's hands in the meantime, or not due yet: nothing to do.
        if (!EXPIRABLE_STATUSES.includes(p.status) || paidAtSession(p.method)) return right([]);
        if (Date.parse(command.now) < Date.parse(p.expiresAt)) return right([]);
        return right([moved(p, 'canceled', command.now, 'expired')]);
      default:
        return assertNever(command);
    }
  },
};
