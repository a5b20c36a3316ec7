import { readState } from '../../src/commandHandler';
import type { EventStore } from '../../src/eventstore/types';
import { loadState } from '../../src/foldedStates';
import type { BookingListed } from '../booking/events';
import { clientBookings } from '../booking/lookups';
import { paymentDecider } from './decider';
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
  const applied = await paymentThatApplied(store, listed, origin);
  if (applied) return { paymentId: applied };
  for (const { paymentId } of listed) {
    const { payment } = await readState(store, paymentStream(paymentId), paymentDecider);
    if (!payment) return 'pending';
    // A free booking's payment (price 0) is nothing for the provider to update.
    if (!CLOSED_STATUSES.includes(payment.status) && payment.price > 0) return { paymentId };
  }
  return 'none';
}

/** The newest of the client's payments that already took this update, if any (all are read at once). */
async function paymentThatApplied(
  store: EventStore,
  listed: BookingListed['data'][],
  { providerEventId, idempotencyTag }: UpdateOrigin,
): Promise<string | undefined> {
  if (providerEventId === undefined && idempotencyTag === undefined) return undefined;
  // The tag is in the events' metadata, which only a whole read of the (short) stream shows.
  const whole = idempotencyTag !== undefined;
  const loaded = await Promise.all(
    listed.map((b) => loadState(store, paymentStream(b.paymentId), paymentDecider, { whole })),
  );
  const i = loaded.findIndex(
    ({ state, recorded }) =>
      (providerEventId !== undefined && state.seenProviderEventIds.includes(providerEventId)) ||
      (whole && recorded.some((r) => r.metadata.idempotencyTag === idempotencyTag)),
  );
  return i < 0 ? undefined : listed[i]!.paymentId;
}
