import type { BookingEvent } from '../commands/booking/events';
import { inbox } from '../commands/notifications/decider';
import { notificationStream } from '../commands/notifications/events';
import {
  NOTIFYING_SESSION_EVENTS,
  noticeBooking,
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

/**
 * Process manager of in-app notifications: each session event that notifies someone creates one
 * Notification per recipient in `notifications-<userId>`, and a rejected service one for its coach. The notification id is derived from the causing
 * event id and the user, and the inbox decider ignores a cause it has seen, so a replay creates nothing.
 */
export function notificationProcess(store: EventStore): Projection {
  return {
    name: 'notification-process',
    lease: LEASES.notificationProcess,
    handles: [...NOTIFYING_SESSION_EVENTS, 'ServiceRejected'],
    orderedBy: (e) => sessionEventKeys(e.data),
    async react(recorded) {
      let notices: {
        userId: string;
        type: string;
        contentType: string;
        contentId: string;
        message: string;
      }[];
      if (recorded.type === 'ServiceRejected') notices = [await serviceRejectedNotice(store, recorded)];
      else {
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
