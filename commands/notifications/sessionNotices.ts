import { createHash } from 'node:crypto';
import { DateTime } from 'luxon';
import type { EventStore } from '../../src/eventstore/types';
import { loadBooking } from '../booking/lookups';
import type { BookingEvent, SessionsBooked } from '../booking/events';
import { zoneOf } from '../calendar/zones';
import type { EmailTemplate } from '../email/events';
import { namedTimes, reasonLine } from '../email/templates';

/** Session events that notify someone (by e-mail and in the app). */
export const NOTIFYING_SESSION_EVENTS = [
  'SessionsBooked',
  'SessionApproved',
  'SessionDeclined',
  'SessionCanceled',
  'SessionDisputed',
  'SessionRescheduled',
] as const;

export interface SessionNotice {
  userId: string;
  role: 'client' | 'coach';
  /** Notification.type */
  type: string;
  /** Notification.contentType and contentId: the booking (group) or the one session. */
  contentType: 'booking' | 'session';
  contentId: string;
  template: EmailTemplate;
  sessionIds: string[];
  reason?: string;
  by?: string;
  /** A reschedule: the session's times before and after (UTC instants), named in the e-mail. */
  moved?: { from: string; to: string };
}

/**
 * Who hears of a session event: a booking tells both parties; approve and decline tell the client; a
 * cancellation tells the other party (both when the system canceled); a dispute tells the coach.
 */
export function sessionNotices(event: BookingEvent): SessionNotice[] {
  const client = (d: { clientId: string }) => ({ userId: d.clientId, role: 'client' as const });
  const coach = (d: { coachId: string }) => ({ userId: d.coachId, role: 'coach' as const });
  switch (event.type) {
    case 'SessionsBooked': {
      const d = event.data;
      const base = {
        type: 'session_booked',
        contentType: 'booking' as const,
        contentId: d.groupId,
        template: 'booking' as const,
        sessionIds: d.sessions.map((s) => s.sessionId),
      };
      return [
        { ...client(d), ...base },
        { ...coach(d), ...base },
      ];
    }
    case 'SessionRescheduled': {
      // The other party hears of it: the coach of a client's move (to approve the new time), the client of
      // the coach's.
      const d = event.data;
      return [
        {
          ...(d.by === 'client' ? coach(d) : client(d)),
          type: 'session_rescheduled',
          contentType: 'session',
          contentId: d.sessionId,
          template: 'reschedule',
          sessionIds: [d.sessionId],
          by: d.by,
          moved: { from: d.from.startsAt, to: d.to.startsAt },
        },
      ];
    }
    case 'SessionApproved':
    case 'SessionDeclined':
    case 'SessionCanceled':
    case 'SessionDisputed': {
      const d = event.data;
      const base = { contentType: 'session' as const, contentId: d.sessionId, sessionIds: [d.sessionId] };
      if (event.type === 'SessionApproved')
        return [{ ...client(d), ...base, type: 'session_approved', template: 'approve' }];
      if (event.type === 'SessionDeclined')
        return [
          { ...client(d), ...base, type: 'session_declined', template: 'decline', reason: event.data.reason },
        ];
      if (event.type === 'SessionDisputed')
        return [
          { ...coach(d), ...base, type: 'session_disputed', template: 'dispute', reason: event.data.reason },
        ];
      const { by, reason } = event.data;
      const parties = by === 'client' ? [coach(d)] : by === 'coach' ? [client(d)] : [client(d), coach(d)];
      return parties.map((p) => ({
        ...p,
        ...base,
        type: 'session_canceled',
        template: 'cancel',
        by,
        reason,
      }));
    }
    default:
      return [];
  }
}

/**
 * The booking a notice names the session times of: a one-off booking's own SessionsBooked; else the booking
 * as loadBooking folds it (a package's later sessions labelled in the package's zone, moved sessions at their
 * new time), as the e-mail and the in-app message of one notice both read it.
 */
export async function noticeBooking(store: EventStore, event: BookingEvent) {
  return event.type === 'SessionsBooked' && event.data.terms.numberOfSessions <= 1
    ? event.data
    : ((await loadBooking(store, event.data.groupId)) ??
        (event.type === 'SessionsBooked' ? event.data : null));
}

/** An instant as a local date-time label of `zone` (`2026-12-02T10:00:00`). */
export const localSlot = (instant: string, zone: string) =>
  DateTime.fromISO(instant, { zone: zoneOf(zone) }).toFormat("yyyy-MM-dd'T'HH:mm:ss");

/**
 * When a notice's sessions take place, as local labels in the booking's zone: a move's new time (and the one
 * it left, `previousSlot`) as the move recorded them, else the sessions' times in the booking.
 */
export function noticeSlots(
  n: SessionNotice,
  booking: SessionsBooked['data'] | null,
): { slots: string[]; previousSlot?: string } {
  if (!booking) return { slots: [] };
  if (n.moved)
    return {
      slots: [localSlot(n.moved.to, booking.timezone)],
      previousSlot: localSlot(n.moved.from, booking.timezone),
    };
  return { slots: slotsOf(booking, n.sessionIds) };
}

/**
 * The in-app text of a notice. It names the session's time as the e-mail does (`on 2026-12-02 10:00
 * (Europe/Berlin)`), so a user with several sessions of one service can tell which one it is about, and the
 * reason of a decline, cancellation or dispute as the e-mail does.
 */
export function noticeMessage(
  n: SessionNotice,
  serviceName: string,
  booking: SessionsBooked['data'] | null = null,
): string {
  const { slots, previousSlot } = noticeSlots(n, booking);
  const at = namedTimes(slots, booking?.timezone);
  const on = at ? ` on ${at}` : '';
  // The reason a party gave (or the system's, in words), as its e-mail tells it; blanks are no reason.
  const why = n.reason?.trim() ? `. ${reasonLine(n.reason.trim())}` : '';
  switch (n.type) {
    case 'session_booked':
      return n.role === 'coach'
        ? `New booking of ${serviceName}${on}: please approve or decline it`
        : `Your booking of ${serviceName}${on} is received and waits for the coach`;
    case 'session_approved':
      return `Your session of ${serviceName}${on} was approved`;
    case 'session_declined':
      return `Your session of ${serviceName}${on} was declined${why}`;
    case 'session_canceled':
      return `Your session of ${serviceName}${on} was canceled${n.by === 'system' ? '' : ` by the ${n.by}`}${why}`;
    case 'session_disputed':
      return `Your client disputed the session of ${serviceName}${on}${why}`;
    case 'session_rescheduled': {
      const moved = at && previousSlot ? ` from ${previousSlot.replace('T', ' ').slice(0, 16)} to ${at}` : '';
      return n.role === 'coach'
        ? `Your client moved the session of ${serviceName}${moved}: please approve or decline the new time`
        : `Your coach moved your session of ${serviceName}${moved}`;
    }
    default:
      return serviceName;
  }
}

/** A uuid determined by its inputs (name-based, SHA-256, formatted as a version-8 uuid). */
export function uuidFrom(...parts: string[]): string {
  const h = createHash('sha256').update(parts.join('\u0000')).digest('hex');
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The local slots of the given sessions of a booking. */
export const slotsOf = (booking: SessionsBooked['data'] | null, sessionIds: string[]) =>
  booking ? booking.sessions.filter((s) => sessionIds.includes(s.sessionId)).map((s) => s.slot) : [];

/**
 * What orders the reactions to a session event (see the runner's `orderedBy`): its booking, and the parties
 * a new booking names (a notice or e-mail about one booking never overtakes an earlier one, and two
 * bookings of one coach or client do not race for the same inbox).
 */
export function sessionEventKeys(data: unknown): string[] {
  const d = data as { groupId?: string; clientId?: string; coachId?: string };
  return [d.groupId, d.clientId, d.coachId].filter((k): k is string => typeof k === 'string');
}
