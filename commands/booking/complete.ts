import type {
  EventMetadata,
  EventStore,
  ExpectedRevision,
  Position,
  StreamAppend,
} from '../../src/eventstore/types';
import { WrongExpectedRevisionError, comparePositions } from '../../src/eventstore/types';
import type { SlotsReserved } from '../calendar/events';
import { paymentStream, type PaymentCreated } from '../payments/events';
import { initialStatus } from '../payments/transitions';
import { bookingStream, type SessionsBooked } from './events';

/**
 * A booking writes three streams: the calendar hold (which decides), then the booking's sessions and its
 * payment. Both later writes are derived from the hold alone, with the hold's ids, and appended only if
 * their stream does not exist yet. On the SQL stores the booking route writes them in the hold's own
 * transaction (`bookingAppends`); on EventStoreDB, or after a crash, `completeBooking` writes them, and
 * the booking route and the booking process manager can both run it, in any order, any number of times,
 * with the same result. It answers the latest position of the two, whoever wrote them, for the caller to
 * wait on read models.
 */
/** The SessionsBooked a hold makes (for a package's later sessions, `bookedAt` is the package's). */
function sessionsBookedOf(reserved: SlotsReserved['data']): SessionsBooked {
  const { groupId, coachId, clientId, serviceId, sessions, terms, timezone, reservedAt } = reserved;
  return {
    type: 'SessionsBooked',
    data: {
      groupId,
      coachId,
      clientId,
      serviceId,
      sessions,
      terms,
      timezone,
      bookedAt: reserved.packageTopUp?.bookedAt ?? reservedAt,
    },
  };
}

/**
 * The appends a new booking's hold implies: its sessions and its payment, each on a new stream. A
 * package's later sessions imply none here: they join an existing stream (see `addToPackage`).
 */
export function bookingAppends(reserved: SlotsReserved['data'], metadata: EventMetadata): StreamAppend[] {
  if (reserved.packageTopUp) return [];
  const { groupId, coachId, clientId, serviceId, terms, reservedAt } = reserved;
  const booked = sessionsBookedOf(reserved);
  const payment: PaymentCreated = {
    type: 'PaymentCreated',
    data: {
      paymentId: terms.paymentId,
      groupId,
      status: initialStatus(terms.price),
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
  return [
    { streamName: bookingStream(groupId), events: [{ ...booked, metadata }], expectedRevision: 'no_stream' },
    {
      streamName: paymentStream(terms.paymentId),
      events: [{ ...payment, metadata }],
      expectedRevision: 'no_stream',
    },
  ];
}

/**
 * The append a package's later sessions imply on the SQL stores: their SessionsBooked joins the package's
 * booking stream in the hold's own transaction, at the revision the booking read it. Written after the hold
 * instead, a cancel of the package's last session settling in between found no session left and refunded
 * (or canceled) the payment, and the session just answered 200 was canceled with it.
 */
export const packageJoinAppend = (
  reserved: SlotsReserved['data'],
  metadata: EventMetadata,
  expectedRevision: ExpectedRevision,
): StreamAppend => ({
  streamName: bookingStream(reserved.groupId),
  events: [{ ...sessionsBookedOf(reserved), metadata }],
  expectedRevision,
});

export async function completeBooking(
  store: EventStore,
  reserved: SlotsReserved['data'],
  metadata: EventMetadata,
): Promise<Position | null> {
  if (reserved.packageTopUp) return addToPackage(store, sessionsBookedOf(reserved), metadata);
  const appends = bookingAppends(reserved, metadata);
  if (store.appendMany) {
    // Usually both streams are written together, or both exist already: one call finds out.
    try {
      const written = await store.appendMany(appends);
      return written[written.length - 1]!.position;
    } catch (err) {
      if (!(err instanceof WrongExpectedRevisionError)) throw err;
    }
  }
  let last: Position | null = null;
  for (const { streamName: stream, events } of appends) {
    try {
      last = (await store.append(stream, events, { expectedRevision: 'no_stream' })).position;
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

/**
 * Sessions booked later against a package join its booking stream as a further SessionsBooked (no new
 * payment: the package's covers them). Appended once: a stream that already holds these sessions is left
 * alone, and a concurrent append makes it look again.
 */
async function addToPackage(
  store: EventStore,
  booked: SessionsBooked,
  metadata: EventMetadata,
): Promise<Position | null> {
  const stream = bookingStream(booked.data.groupId);
  const ids = new Set(booked.data.sessions.map((s) => s.sessionId));
  for (;;) {
    const { events, revision } = await store.readStream(stream);
    const there = events.find(
      (e) =>
        e.type === 'SessionsBooked' &&
        (e.data as SessionsBooked['data']).sessions.some((s) => ids.has(s.sessionId)),
    );
    if (there) return there.position;
    if (revision === 'no_stream') return null; // the package's own booking is not written yet: healed later
    try {
      return (await store.append(stream, [{ ...booked, metadata }], { expectedRevision: revision })).position;
    } catch (err) {
      if (!(err instanceof WrongExpectedRevisionError)) throw err;
    }
  }
}
