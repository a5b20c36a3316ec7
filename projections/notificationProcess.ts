import { booking as bookingDecider } from '../commands/booking/decider';
import {
  bookingStream,
  type BookingEvent,
  type SessionCanceled,
  type SessionReviewed,
} from '../commands/booking/events';
import { inbox } from '../commands/notifications/decider';
import { notificationStream } from '../commands/notifications/events';
import {
  cancelToldBySessions,
  paymentNoticeMessage,
  paymentNoticeType,
  reviewNoticeMessage,
} from '../commands/notifications/inAppNotices';
import { paymentStream, type PaymentCreated, type PaymentStatusChanged } from '../commands/payments/events';
import { loadBooking } from '../commands/booking/lookups';
import { namedTimes } from '../commands/email/templates';
import { paidAtSession } from '../commands/payments/transitions';
import {
  NOTIFYING_SESSION_EVENTS,
  noticeBooking,
  localSlot,
  noticeMessage,
  sessionEventKeys,
  sessionNotices,
  uuidFrom,
} from '../commands/notifications/sessionNotices';
import { handleCommand } from '../src/commandHandler';
import { service } from '../commands/services/decider';
import { serviceStream, type ServiceEvent, type ServiceRejected } from '../commands/services/events';
import type { RecordedEvent } from '../src/eventstore/types';
import type { EventStore } from '../src/eventstore/types';
import { SYSTEM_ACTOR } from './bookingProcess';
import type { Projection } from './runner';
import { LEASES } from '../src/leases';

/**
 * The coach's notice of a rejected service, with the admin's reason (nowhere else shown to the coach). It
 * names the service as it was when rejected (folded up to the event, not the stream as it is by the time
 * this runs: an edit after the rejection renames it), and says whether it was withdrawn from sale (it had
 * been approved) or not approved (it was in review): "was not approved" misled a coach whose service had
 * been on sale for months.
 */
async function serviceRejectedNotice(store: EventStore, recorded: RecordedEvent) {
  const d = recorded.data as ServiceRejected['data'];
  const { events } = await store.readStream(serviceStream(d.serviceId));
  let before = service.initialState();
  for (const r of events) {
    if (r.revision >= recorded.revision) break;
    before = service.evolve(before, { type: r.type, data: r.data } as ServiceEvent);
  }
  const s = before.service;
  const name = `Your service "${s?.name ?? 'service'}"`;
  const reason = d.reason.trim() ? ` Reason: ${d.reason.trim()}` : '';
  return {
    userId: d.coachId,
    type: 'service_rejected',
    contentType: 'service',
    contentId: d.serviceId,
    message:
      s?.status === 'approved'
        ? `${name} was withdrawn: it is no longer offered to new clients.${reason}`
        : `${name} was not approved.${reason}`,
  };
}

interface Notice {
  userId: string;
  type: string;
  contentType: string;
  contentId: string;
  message: string;
}

/** The coach's notice of a review of one of its sessions, with the rating (in the app only). */
async function reviewNotice(store: EventStore, recorded: RecordedEvent): Promise<Notice> {
  const d = recorded.data as SessionReviewed['data'];
  const booked = await loadBooking(store, d.groupId);
  return {
    userId: d.coachId,
    type: 'session_reviewed',
    contentType: 'session',
    contentId: d.sessionId,
    message: reviewNoticeMessage(booked?.terms.serviceName ?? 'your session', d.rating),
  };
}

/**
 * The client's notice of its payment's move, if it gives one (see `paymentNoticeType`): decided from the
 * move first, so the moves that tell no one read nothing. The booking names the client and the service as
 * booked, and tells whether the session notices told a cancel already; a payment without a booking (none
 * is made so, but the log may hold one) names its client from its own stream.
 */
async function paymentNotice(store: EventStore, recorded: RecordedEvent): Promise<Notice | null> {
  const d = recorded.data as PaymentStatusChanged['data'];
  const type = paymentNoticeType(d);
  if (!type) return null;
  const { events } = await store.readStream(bookingStream(d.groupId));
  let b = bookingDecider.initialState();
  const canceledFor = new Map<string, string>();
  for (const e of events) {
    b = bookingDecider.evolve(b, { type: e.type, data: e.data } as BookingEvent);
    if (e.type === 'SessionCanceled') {
      const c = e.data as SessionCanceled['data'];
      canceledFor.set(c.sessionId, c.reason);
    }
  }
  if (
    type === 'payment_canceled' &&
    cancelToldBySessions(
      [...b.sessions].map(([id, s]) => ({ state: s.state, canceledFor: canceledFor.get(id) })),
    )
  )
    return null;
  let clientId = b.groupId ? b.clientId : null;
  // A failure names the payment's deadline, which its own stream holds (read for failures only).
  const created =
    !clientId || type === 'payment_failed'
      ? ((await store.readStream(paymentStream(d.paymentId))).events.find((e) => e.type === 'PaymentCreated')
          ?.data as PaymentCreated['data'] | undefined)
      : undefined;
  clientId ??= created?.clientId ?? null;
  if (!clientId) return null;
  // By when to pay again: while the deadline is ahead of the failure (a cash payment has none that is kept).
  const payBy =
    type === 'payment_failed' &&
    created &&
    !paidAtSession(created.method) &&
    Date.parse(created.expiresAt) > Date.parse(d.at)
      ? namedTimes([localSlot(created.expiresAt, b.timezone || 'UTC')], b.timezone || 'UTC')
      : undefined;
  return {
    userId: clientId,
    type,
    contentType: 'payment',
    contentId: d.paymentId,
    message: paymentNoticeMessage(type, b.terms?.serviceName ?? 'your booking', d, payBy),
  };
}

/**
 * Process manager of in-app notifications: each session event that notifies someone creates one
 * Notification per recipient in `notifications-<userId>`; so do a rejected service (its coach), a review (its
 * coach) and a payment's move to received, refund or canceled (its client, see `paymentNotice`). The
 * notification id is derived from the causing event id and the user, and the inbox decider ignores a cause
 * it has seen, so a replay creates nothing.
 */
export function notificationProcess(store: EventStore): Projection {
  return {
    name: 'notification-process',
    lease: LEASES.notificationProcess,
    // Not PaymentCreated: a booking's payment tells no one (its booking does).
    handles: [...NOTIFYING_SESSION_EVENTS, 'ServiceRejected', 'SessionReviewed', 'PaymentStatusChanged'],
    // A payment's move by its booking (groupId), so its notice never overtakes the booking's.
    orderedBy: (e) => sessionEventKeys(e.data),
    async react(recorded) {
      let notices: Notice[];
      if (recorded.type === 'ServiceRejected') notices = [await serviceRejectedNotice(store, recorded)];
      else if (recorded.type === 'SessionReviewed') notices = [await reviewNotice(store, recorded)];
      else if (recorded.type === 'PaymentStatusChanged') {
        const notice = await paymentNotice(store, recorded);
        if (!notice) return;
        notices = [notice];
      } else {
        const event = { type: recorded.type, data: recorded.data } as BookingEvent;
        const session = sessionNotices(event);
        if (!session.length) return;
        const booking = await noticeBooking(store, event);
        const serviceName = booking?.terms.serviceName ?? 'your session';
        notices = session.map((n) => ({ ...n, message: noticeMessage(n, serviceName, booking) }));
      }
      // One inbox per recipient: side by side, so their appends share a commit.
      await Promise.all(
        notices.map((n) =>
          handleCommand(
            store,
            notificationStream(n.userId),
            inbox,
            {
              type: 'CreateNotification',
              notification: {
                notificationId: uuidFrom('notification', recorded.id, n.userId),
                userId: n.userId,
                type: n.type,
                contentType: n.contentType,
                contentId: n.contentId,
                message: n.message,
                causationEventId: recorded.id,
                createdAt: recorded.createdAt.toISOString(),
              },
            },
            {
              causationId: recorded.id,
              correlationId: recorded.metadata.correlationId ?? recorded.id,
              actor: SYSTEM_ACTOR,
            },
            50,
            undefined,
            // This process is the inbox's usual writer: its kept fold is current unless the user marked
            // something read meanwhile (the append then refuses the guess and the inbox is read).
            'kept',
          ),
        ),
      );
    },
  };
}
