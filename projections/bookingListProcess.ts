import { ensureListed } from '../commands/booking/lookups';
import type { SlotsReserved } from '../commands/calendar/events';
import { clientBookingsStream } from '../commands/booking/events';
import { writtenWith, type EventStore } from '../src/eventstore/types';
import { LEASES } from '../src/leases';
import { SYSTEM_ACTOR } from './bookingProcess';
import type { Projection } from './runner';

/**
 * Process manager that keeps every client's list of bookings (`bookings-of-<clientId>`) complete: the
 * booking route lists a booking at once, and this lists any hold the route did not get to (a crash after
 * holding), and, started from the beginning of the log, the bookings made before lists existed.
 */
export function bookingListProcess(store: EventStore): Projection {
  return {
    name: 'booking-list-process',
    // Part of the booking process's work: one instance at a time lists what requests did not.
    lease: LEASES.bookingProcess,
    handles: ['SlotsReserved'],
    async react(recorded) {
      const reserved = recorded.data as SlotsReserved['data'];
      // Listed in the hold's own transaction: nothing to heal, nothing to read.
      if (writtenWith(recorded, clientBookingsStream(reserved.clientId))) return;
      // The hold's own listing, as the route writes it: the hold's actor (the client who booked).
      await ensureListed(store, reserved, {
        causationId: recorded.id,
        correlationId: recorded.metadata.correlationId ?? recorded.id,
        actor: recorded.metadata.actor ?? SYSTEM_ACTOR,
      });
    },
  };
}
