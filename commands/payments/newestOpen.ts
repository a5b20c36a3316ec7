import { readState } from '../../src/commandHandler';
import type { EventStore } from '../../src/eventstore/types';
import { clientBookings } from '../booking/lookups';
import { paymentDecider } from './decider';
import { paymentStream } from './events';
import { CLOSED_STATUSES } from './transitions';

/**
 * Endpoint 17's payment: the client's newest payment that is not closed. Found from the write side (the
 * client's own list of bookings, newest first, and each payment's stream), never from the payments read
 * model, which may lag or have stopped. `pending` when the newest listed booking's payment is not written
 * yet (a booking interrupted between its hold and its payment, which the booking process completes).
 */
export async function newestOpenPayment(
  store: EventStore,
  clientId: string,
): Promise<{ paymentId: string } | 'none' | 'pending'> {
  for (const listed of await clientBookings(store, clientId)) {
    const { payment } = await readState(store, paymentStream(listed.paymentId), paymentDecider);
    if (!payment) return 'pending';
    if (!CLOSED_STATUSES.includes(payment.status)) return { paymentId: listed.paymentId };
  }
  return 'none';
}
