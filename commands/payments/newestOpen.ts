import { readState } from '../../src/commandHandler';
import type { EventStore } from '../../src/eventstore/types';
import { loadState } from '../../src/foldedStates';
import { clientBookings } from '../booking/lookups';
import { paymentDecider, type PaymentState } from './decider';
import { paymentStream } from './events';
import { CLOSED_STATUSES } from './transitions';

/** What tells a repeat of an update applied before: its provider event id, or its keyed request's tag. */
export interface UpdateOrigin {
  providerEventId?: string;
  idempotencyTag?: string;
}

/**
 * Endpoint 17's payment: the client's newest payment that is not closed, nor free (price 0). Found from the write side (the
 * client's own list of bookings, newest first, and each payment's stream), never from the payments read
 * model, which may lag or have stopped. `pending` when the newest listed booking's payment is not written
 * yet (a booking interrupted between its hold and its payment, which the booking process completes).
 * A repeat of an update (same provider event, or a keyed request run again) goes to the payment it was
 * applied to, which answers it unchanged: that update may have closed it, and the repeat must not move the
 * next open payment (a second cancel would cancel another booking).
 */
export async function newestOpenPayment(
  store: EventStore,
  clientId: string,
  origin: UpdateOrigin = {},
): Promise<{ paymentId: string } | 'none' | 'pending'> {
  const listed = await clientBookings(store, clientId);
  const { providerEventId, idempotencyTag } = origin;
  if (providerEventId !== undefined || idempotencyTag !== undefined) {
    // Both answers from one read of each payment: a second look at the newest payment could find it closed
    // by a delivery of this same update that landed in between, and move the next open payment instead.
    // Seen open here, it is this update's target; its decision then sees any such delivery and answers
    // it unchanged.
    const whole = idempotencyTag !== undefined; // the tag is in metadata, which only a whole read shows
    const loaded = await Promise.all(
      listed.map((b) => loadState(store, paymentStream(b.paymentId), paymentDecider, { whole })),
    );
    const applied = loaded.findIndex(
      ({ state, recorded }) =>
        (providerEventId !== undefined && state.seenProviderEventIds.includes(providerEventId)) ||
        (whole && recorded.some((r) => r.metadata.idempotencyTag === idempotencyTag)),
    );
    if (applied >= 0) return { paymentId: listed[applied]!.paymentId };
    for (const [i, { paymentId }] of listed.entries()) {
      const verdict = openOrNot(loaded[i]!.state.payment);
      if (verdict !== 'closed') return verdict === 'open' ? { paymentId } : verdict;
    }
    return 'none';
  }
  // Newest first, in pages of 1, 4, 16, then 64 payments read at once: the newest is open in the common
  // case, and one read at a time a client with 1,500 closed bookings waited 3.5 s for the oldest (and every
  // 404 read them all).
  for (let from = 0, size = 1; from < listed.length; from += size, size = Math.min(PAGE, size * 4)) {
    const page = listed.slice(from, from + size);
    const states = await Promise.all(
      page.map((b) => readState(store, paymentStream(b.paymentId), paymentDecider)),
    );
    for (const [i, { paymentId }] of page.entries()) {
      const verdict = openOrNot(states[i]!.payment);
      if (verdict !== 'closed') return verdict === 'open' ? { paymentId } : verdict;
    }
  }
  return 'none';
}

/** At most this many of the client's payments are read at once while looking for the newest open one. */
const PAGE = 64;

/** Whether a listed booking's payment is endpoint 17's: `pending` when it is not written yet. */
function openOrNot(payment: PaymentState['payment']): 'open' | 'closed' | 'pending' {
  if (!payment) return 'pending';
  // A free booking's payment (price 0) is nothing for the provider to update.
  return !CLOSED_STATUSES.includes(payment.status) && payment.price > 0 ? 'open' : 'closed';
}
