import type { BookingEvent } from '../commands/booking/events';
import type { EmailFacts, EmailRequested } from '../commands/email/events';
import { renderEmail } from '../commands/email/templates';
import {
  NOTIFYING_SESSION_EVENTS,
  loadBooking,
  loadProfile,
  sessionNotices,
  slotsOf,
} from '../commands/notifications/sessionNotices';
import type { Database } from '../src/db/database';
import type { EventStore, RecordedEvent } from '../src/eventstore/types';
import type { Logger } from '../src/log';
import { isPermanentMailError, type MailMessage, type Mailer } from '../src/mail/mailer';
import { deferEmail } from '../src/mailRetry';
import type { Projection } from './runner';

/** A claim left `sending` this long belongs to a process that died mid-send; it may be taken over. */
const STALE_CLAIM = '15 minutes';

interface Delivery {
  recipient: string;
  to: string;
  facts: EmailFacts;
}

/**
 * Process manager of e-mails: session events mail the parties (see `sessionNotices`), and every
 * `EmailRequested` (private endpoints 18 to 23) is sent. At-least-once input, at-most-once output per
 * (causing event id, recipient): the pair is claimed in `sent_emails` before sending, so a replay or a
 * second instance finds the claim and sends nothing. A send that fails for a reason that may pass
 * (connection, SMTP 4xx) releases the claim and fails the event, so the runner retries it with backoff;
 * a final refusal (SMTP 5xx) is recorded as `failed` and not retried.
 */
export function emailProcess(deps: {
  store: EventStore;
  db: Database;
  mailer: Mailer;
  log: Logger;
  clock: () => Date;
}): Projection {
  const { store, db, mailer, log, clock } = deps;

  const deliveriesOf = async (recorded: RecordedEvent): Promise<Delivery[]> => {
    if (recorded.type === 'EmailRequested') {
      const d = recorded.data as EmailRequested['data'];
      return [{ recipient: d.userId, to: d.to, facts: d.facts }];
    }
    const event = { type: recorded.type, data: recorded.data } as BookingEvent;
    const notices = sessionNotices(event);
    if (!notices.length) return [];
    const booking =
      event.type === 'SessionsBooked' ? event.data : await loadBooking(store, event.data.groupId);
    const out: Delivery[] = [];
    for (const n of notices) {
      const profile = await loadProfile(store, n.userId);
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
          slots: slotsOf(booking, n.sessionIds),
          ...(n.reason ? { reason: n.reason } : {}),
          ...(n.by ? { by: n.by } : {}),
        },
      });
    }
    return out;
  };

  const deliver = async (cause: RecordedEvent, d: Delivery) => {
    const claimed = await db.query(
      `INSERT INTO sent_emails (event_id, recipient, address, template, status) VALUES ($1, $2, $3, $4, 'sending')
       ON CONFLICT (event_id, recipient) DO UPDATE SET claimed_at = now(), address = EXCLUDED.address
         WHERE sent_emails.status = 'sending' AND sent_emails.claimed_at < now() - interval '${STALE_CLAIM}'
       RETURNING event_id`,
      [cause.id, d.recipient, d.to, d.facts.template],
    );
    if (claimed.rowCount === 0) return; // sent already, being sent, or refused for good
    const key = `${cause.id}/${d.recipient}`;
    const { subject, text, html } = renderEmail(d.facts);
    const mail: MailMessage = {
      key,
      to: d.to,
      subject,
      text,
      html,
      headers: { 'X-Coaching-Event': `${cause.type} ${cause.id}`, 'X-Coaching-Template': d.facts.template },
    };
    let messageId: string;
    try {
      ({ messageId } = await mailer.send(mail));
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (isPermanentMailError(err)) {
        await db.query(
          `UPDATE sent_emails SET status = 'failed', error = $3 WHERE event_id = $1 AND recipient = $2`,
          [cause.id, d.recipient, message.slice(0, 1000)],
        );
        log.error('e-mail refused for good; not retried', { eventId: cause.id, to: d.to, error: message });
        return;
      }
      // Deferred, not retried in place: the log moves on, so one mailbox answering 4xx holds back no other
      // mail; src/mailRetry.ts sends it again later.
      await deferEmail(db, cause.id, d.recipient, 1, clock(), message, mail);
      log.warn('e-mail deferred', { eventId: cause.id, to: d.to, error: message });
      return;
    }
    // Outside the try: once the server took the message, a failure here must not send it again (the claim
    // stays 'sending', which a replay respects).
    await db.query(
      `UPDATE sent_emails SET status = 'sent', message_id = $3, sent_at = now() WHERE event_id = $1 AND recipient = $2`,
      [cause.id, d.recipient, messageId],
    );
  };

  return {
    name: 'email-process',
    handles: [...NOTIFYING_SESSION_EVENTS, 'EmailRequested'],
    async react(recorded) {
      for (const d of await deliveriesOf(recorded)) await deliver(recorded, d);
    },
  };
}
