import { loadProfile } from '../commands/users/profile';
import type { BookingEvent } from '../commands/booking/events';
import type { EmailFacts, EmailRequested } from '../commands/email/events';
import { renderEmail } from '../commands/email/templates';
import {
  NOTIFYING_SESSION_EVENTS,
  sessionEventKeys,
  noticeBooking,
  noticeSlots,
  sessionNotices,
} from '../commands/notifications/sessionNotices';
import type { EventStore, RecordedEvent } from '../src/eventstore/types';
import type { Logger } from '../src/log';
import type { MailMessage, Mailer } from '../src/mail/mailer';
import { deliveries } from '../src/mail/delivery';
import { SYSTEM_ACTOR } from './bookingProcess';
import type { Projection } from './runner';
import { LEASES } from '../src/leases';

interface Delivery {
  recipient: string;
  to: string;
  facts: EmailFacts;
}

/**
 * Process manager of e-mails: session events mail the parties (see `sessionNotices`), and every
 * `EmailRequested` (private endpoints 18 to 23) is sent. At-least-once input, exactly-once intent per
 * (causing event id, recipient): each delivery is claimed in its ledger stream in the event store
 * (`delivery-<eventId>-<recipient>`, see src/mail/delivery.ts) before sending, so a replay, a second
 * instance or a rebuilt read-model database finds the claim and sends nothing. A claim whose sender died
 * is taken over after its lease (by a replay here or by the retry job). A temporary refusal defers the
 * e-mail to the retry job; a final one is recorded as failed.
 */
export function emailProcess(deps: {
  store: EventStore;
  mailer: Mailer;
  log: Logger;
  clock: () => Date;
  /** MAIL_LEASE_MS: how long a claim is exclusive before another sender takes it over. */
  mailLeaseMs: number;
}): Projection {
  const { store, log } = deps;
  const ledger = deliveries({ ...deps, leaseMs: deps.mailLeaseMs });

  const deliveriesOf = async (recorded: RecordedEvent): Promise<Delivery[]> => {
    if (recorded.type === 'EmailRequested') {
      const d = recorded.data as EmailRequested['data'];
      return [{ recipient: d.userId, to: d.to, facts: d.facts }];
    }
    const event = { type: recorded.type, data: recorded.data } as BookingEvent;
    const notices = sessionNotices(event);
    if (!notices.length) return [];
    // A package's later sessions are named as loadBooking labels them, in the package's zone (the coach may
    // have moved the schedule to another zone since): as the approve and cancel e-mails name them, and as the
    // in-app notification of the same notice does.
    const booking = await noticeBooking(store, event);
    const out: Delivery[] = [];
    const profiles = await Promise.all(notices.map((n) => loadProfile(store, n.userId)));
    for (const [i, n] of notices.entries()) {
      const profile = profiles[i];
      if (!profile?.email) {
        log.warn('no e-mail address for a session notice; not mailed', {
          userId: n.userId,
          eventId: recorded.id,
        });
        continue;
      }
      out.push({
        recipient: n.userId,
        to: profile.email,
        facts: {
          template: n.template,
          role: n.role,
          recipientName: profile.firstName,
          ...(booking ? { serviceName: booking.terms.serviceName, timezone: booking.timezone } : {}),
          // A move names both times, as they are in the booking's zone (not the booking's times as they are
          // when this runs: a replay after a later move still names this one).
          ...noticeSlots(n, booking),
          ...(n.reason ? { reason: n.reason } : {}),
          ...(n.by ? { by: n.by } : {}),
        },
      });
    }
    return out;
  };

  const deliver = async (cause: RecordedEvent, d: Delivery) => {
    const { subject, text, html } = renderEmail(d.facts);
    const mail: MailMessage = {
      key: `${cause.id}/${d.recipient}`,
      to: d.to,
      subject,
      text,
      html,
      headers: { 'X-Coaching-Event': `${cause.type} ${cause.id}`, 'X-Coaching-Template': d.facts.template },
    };
    await ledger.deliver(cause.id, d.recipient, mail, d.facts.template, {
      causationId: cause.id,
      correlationId: cause.metadata.correlationId ?? cause.id,
      actor: SYSTEM_ACTOR,
    });
  };

  return {
    name: 'email-process',
    lease: LEASES.mail,
    handles: [...NOTIFYING_SESSION_EVENTS, 'EmailRequested'],
    // A requested e-mail is its recipient's; a session event's, its booking's and parties'.
    orderedBy: (e) =>
      e.type === 'EmailRequested' ? [(e.data as EmailRequested['data']).userId] : sessionEventKeys(e.data),
    async react(recorded) {
      // Each recipient's delivery is its own ledger stream: side by side, so their appends share a commit.
      await Promise.all((await deliveriesOf(recorded)).map((d) => deliver(recorded, d)));
    },
  };
}
