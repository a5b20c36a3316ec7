import { completeBooking } from '../commands/booking/complete';
import { booking, type Booking } from '../commands/booking/decider';
import { bookingStream, type SessionCanceled, type SessionDeclined } from '../commands/booking/events';
import { calendar } from '../commands/calendar/decider';
import { calendarStream, type SlotMoved, type SlotsReserved } from '../commands/calendar/events';
import { paymentStream, type PaymentStatus, type PaymentStatusChanged } from '../commands/payments/events';
import { paymentDecider } from '../commands/payments/decider';
import { cancelsBooking } from '../commands/payments/transitions';
import { handleCommand, readState } from '../src/commandHandler';
import {
  writtenWith,
  type EventMetadata,
  type EventStore,
  type RecordedEvent,
} from '../src/eventstore/types';
import type { Projection } from './runner';
import { LEASES } from '../src/leases';

export const SYSTEM_ACTOR = { userId: '00000000-0000-0000-0000-000000000000', role: 'system' };

/** The move of a payment stream that canceled its booking, if any (canceled or deleted never reopen). */
const bookingCancelingMove = ({ events }: { events: RecordedEvent[] }) =>
  events
    .filter((e) => e.type === 'PaymentStatusChanged')
    .map((e) => e.data as PaymentStatusChanged['data'])
    .find((m) => cancelsBooking(m.from, m.to)) ?? null;

/** Statuses of a payment on which a package books no further session (the booking route's package_canceled). */
const PACKAGE_CLOSED: PaymentStatus[] = ['canceled', 'deleted', 'refund'];

/** A payment stream's status now (null while not created). */
const statusOf = ({ events }: { events: RecordedEvent[] }): PaymentStatus | null => {
  let status: PaymentStatus | null = null;
  for (const e of events)
    if (e.type === 'PaymentCreated') status = (e.data as { status: PaymentStatus }).status;
    else if (e.type === 'PaymentStatusChanged') status = (e.data as PaymentStatusChanged['data']).to;
  return status;
};

/**
 * Process manager of bookings. Every step is idempotent (streams created only if absent, releases and
 * cancellations decide nothing when already done), so a replay or a crash between steps heals:
 * - a hold (SlotsReserved) gets its sessions and payment, even if the booking request died after holding;
 * - a moved hold (SlotMoved, a reschedule) gets its booking's SessionRescheduled, once per move, even if the
 *   request died after moving it (EventStoreDB; on the SQL stores both are one transaction);
 * - a declined or canceled session gives its slot back, and when it was the booking's last one, the
 *   payment follows: canceled if unpaid, refunded if received, left to the provider while in checkout
 *   (its outcome then settles it: received is refunded, failed canceled);
 * - a canceled payment, or one that failed and expired, cancels its open sessions (which then give back),
 *   also a package's later sessions held after it was canceled (EventStoreDB cannot refuse those).
 */
export function bookingProcess(store: EventStore, clock: () => Date): Projection {
  const metadataFor = (cause: RecordedEvent): EventMetadata => ({
    causationId: cause.id,
    correlationId: cause.metadata.correlationId ?? cause.id,
    actor: SYSTEM_ACTOR,
  });
  /**
   * A hold's sessions and payment are the hold's own parts, written by the booking route when it gets
   * there first: written from here they keep the hold's actor (the client who booked), so the log says
   * who booked whoever wrote them; `causationId` still shows they were completed from the hold.
   */
  const holdPartsMetadata = (hold: RecordedEvent): EventMetadata => ({
    ...metadataFor(hold),
    actor: hold.metadata.actor ?? SYSTEM_ACTOR,
  });
  const bookingOf = (groupId: string) => readState(store, bookingStream(groupId), booking);
  /** Whether any session of the booking is still on (not declined or canceled); false with no booking. */
  const anySessionLeft = (b: Booking) =>
    [...b.sessions.values()].some((x) => x.state !== 'declined' && x.state !== 'canceled');

  /**
   * The booking's open sessions (or only `sessionIds` of them) canceled for its payment's move (nothing to do
   * without a booking).
   */
  const cancelGroup = async (
    groupId: string,
    to: PaymentStatus,
    metadata: EventMetadata,
    now: string,
    sessionIds?: string[],
  ) => {
    const outcome = await handleCommand(
      store,
      bookingStream(groupId),
      booking,
      { type: 'CancelGroup', reason: `payment_${to}`, now, ...(sessionIds ? { sessionIds } : {}) },
      metadata,
      50,
    );
    // A payment without a booking (created by hand) has nothing to cancel.
    if (!outcome.ok && outcome.error.code !== 'session_not_found') throw new Error(outcome.error.message);
  };

  return {
    name: 'booking-process',
    lease: LEASES.bookingProcess,
    handles: ['SlotsReserved', 'SlotMoved', 'SessionDeclined', 'SessionCanceled', 'PaymentStatusChanged'],
    async react(recorded) {
      const metadata = metadataFor(recorded);
      const now = clock().toISOString();
      const event = { type: recorded.type, data: recorded.data } as
        SlotsReserved | SlotMoved | SessionDeclined | SessionCanceled | PaymentStatusChanged;
      /** A booking with no session left keeps no money: its payment is canceled, or refunded if paid. */
      const settleCanceled = (paymentId: string) =>
        handleCommand(
          store,
          paymentStream(paymentId),
          paymentDecider,
          { type: 'SettleCanceledBooking', paymentId, now },
          metadata,
          50,
        );
      switch (event.type) {
        case 'SlotsReserved':
          // Sessions and payment written in the hold's own transaction: nothing to complete or read.
          if (
            writtenWith(recorded, bookingStream(event.data.groupId)) &&
            writtenWith(recorded, paymentStream(event.data.terms.paymentId))
          )
            return;
          await completeBooking(store, event.data, holdPartsMetadata(recorded));
          // A package's later sessions held after the package's payment was closed (on EventStoreDB the
          // hold cannot be conditioned on the payment, read just before): the payment's own cancel of the
          // package ran before they joined it, so they go now, or they would stay held with nothing to
          // pay or release them.
          if (event.data.packageTopUp) {
            const payment = await store.readStream(paymentStream(event.data.terms.paymentId));
            const closed = bookingCancelingMove(payment);
            if (closed) {
              await cancelGroup(event.data.groupId, closed.to, metadata, now);
              return;
            }
            // Refunded (every session was gone, or the provider paid it back) or deleted after delivery: the
            // package books nothing more (package_canceled), so sessions held in that window go too, or the
            // client would have them with the money given back. Only these: the payment's own move chose
            // what became of the others.
            const status = statusOf(payment);
            if (status && PACKAGE_CLOSED.includes(status))
              await cancelGroup(
                event.data.groupId,
                status,
                metadata,
                now,
                event.data.sessions.map((x) => x.sessionId),
              );
          }
          return;
        case 'SlotMoved': {
          // A reschedule's hold moved, its booking event written with it (SQL stores) or by the request
          // just after (EventStoreDB): written here when that request died in between, once per move, with
          // the mover as its actor. A session declined or canceled since has its hold released: nothing.
          if (writtenWith(recorded, bookingStream(event.data.groupId))) return;
          const d = event.data;
          await handleCommand(
            store,
            bookingStream(d.groupId),
            booking,
            {
              type: 'RecordMove',
              sessionId: d.sessionId,
              from: d.from,
              to: d.to,
              by: d.by,
              moveId: d.moveId,
              now: d.movedAt,
            },
            holdPartsMetadata(recorded),
            50,
          );
          return;
        }
        case 'SessionDeclined':
        case 'SessionCanceled': {
          const { coachId, groupId, sessionId } = event.data;
          const reason = event.type === 'SessionDeclined' ? 'declined' : 'canceled';
          await handleCommand(
            store,
            calendarStream(coachId),
            calendar,
            {
              type: 'ReleaseSlots',
              coachId,
              groupId,
              sessionIds: [sessionId],
              reason,
              now,
            },
            metadata,
            50,
          );
          // The last session of a booking gone: its payment must not be kept (canceled, or refunded).
          const settled = await bookingOf(groupId);
          const paymentId = settled.paymentId;
          if (paymentId && !anySessionLeft(settled)) await settleCanceled(paymentId);
          return;
        }
        case 'PaymentStatusChanged': {
          const { from, to, groupId, paymentId } = event.data;
          // The provider's outcome of a checkout we had left to it, after the booking was already gone:
          // money paid goes back (refund); a failure is canceled at once, not left open until its deadline
          // (the client could pay again for nothing, and 17 would take it for the user's open payment).
          if (to === 'received' || to === 'failed') {
            const settled = await bookingOf(groupId);
            if (settled.groupId && !anySessionLeft(settled)) await settleCanceled(paymentId);
            return;
          }
          // Canceled, or deleted while unpaid: the booking's open sessions go and give their slots back.
          if (!cancelsBooking(from, to)) return;
          await cancelGroup(groupId, to, metadata, now);
          return;
        }
        default: {
          const unreachable: never = event;
          return unreachable;
        }
      }
    },
  };
}
