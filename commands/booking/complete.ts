import type { EventMetadata, EventStore, Position } from '../../src/eventstore/types';
import { WrongExpectedRevisionError, comparePositions } from '../../src/eventstore/types';
import type { SlotsReserved } from '../calendar/events';
import { paymentStream, type PaymentCreated } from '../payments/events';
import { bookingStream, type SessionsBooked } from './events';

/**
 * A booking writes three streams: the calendar hold (which decides), then the booking's sessions and its
 * payment. Both later writes are derived from the hold alone, with the hold's ids, and appended only if
 * their stream does not exist yet, so the booking route and the booking process manager can both run this
 * after a crash, in any order, any number of times, and the result is the same. Answers the latest
 * position of the two, whoever wrote them, for the caller to wait on read models.
 */
export async function completeBooking(
  store: EventStore,
  reserved: SlotsReserved['data'],
  metadata: EventMetadata,
): Promise<Position | null> {
  const { groupId, coachId, clientId, serviceId, sessions, terms, timezone, reservedAt } = reserved;
  const booked: SessionsBooked = {
    type: 'SessionsBooked',
    data: { groupId, coachId, clientId, serviceId, sessions, terms, timezone, bookedAt: reservedAt },
  };
  const payment: PaymentCreated = {
    type: 'PaymentCreated',
    data: {
      paymentId: terms.paymentId,
      groupId,
      status: 'awaiting',
      price: terms.price,
      currency: terms.currency,
      methodId: terms.methodId,
      method: terms.method,
      coachId,
      clientId,
      serviceId,
      expiresAt: terms.paymentExpiresAt,
      createdAt: reservedAt,
    },
  };
  let last: Position | null = null;
  for (const [stream, event] of [
    [bookingStream(groupId), booked],
    [paymentStream(terms.paymentId), payment],
  ] as const) {
    try {
      last = (await store.append(stream, [{ ...event, metadata }], { expectedRevision: 'no_stream' }))
        .position;
    } catch (err) {
      if (!(err instanceof WrongExpectedRevisionError)) throw err;
      // Already written (the booking process got there first): its position still tells the caller when
      // read models have the booking.
      const first = (await store.readStream(stream)).events[0];
      if (first && (!last || comparePositions(first.position, last) > 0)) last = first.position;
    }
  }
  return last;
}
