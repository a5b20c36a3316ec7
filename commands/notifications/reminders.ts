import { assertNever } from '../../src/decider';
import { booking as bookingDecider, type Booking } from '../booking/decider';
import type { BookingEvent } from '../booking/events';
import { namedTimes } from '../email/templates';
import { localSlot, uuidFrom } from './sessionNotices';

/**
 * Session reminders: a notice to the client and the coach the lead time (SESSION_REMINDER_LEAD_MS, 24 h)
 * before a session that is still on. Pure: the sweeper (src/sessionReminderSweeper.ts) reads the booking and
 * the clock, this decides.
 */

/** Notification.type of a reminder. */
export const SESSION_REMINDER = 'session_reminder';

/** A booking folded for its reminders: the booking, and when each session's current time was set. */
export interface ReminderFold {
  booking: Booking;
  /** Session id -> when its time was set: its booking's `bookedAt`, or its last move's `at`. */
  setAt: Map<string, string>;
}

export const reminderFold = {
  initialState: (): ReminderFold => ({ booking: bookingDecider.initialState(), setAt: new Map() }),
  evolve(state: ReminderFold, event: BookingEvent): ReminderFold {
    const booking = bookingDecider.evolve(state.booking, event);
    switch (event.type) {
      case 'SessionsBooked': {
        const setAt = new Map(state.setAt);
        for (const s of event.data.sessions) setAt.set(s.sessionId, event.data.bookedAt);
        return { booking, setAt };
      }
      case 'SessionRescheduled':
        return { booking, setAt: new Map(state.setAt).set(event.data.sessionId, event.data.at) };
      case 'SessionApproved':
      case 'SessionDeclined':
      case 'SessionCanceled':
      case 'SessionCompleted':
      case 'SessionDisputed':
      case 'SessionReviewed':
        return { ...state, booking };
      default:
        return assertNever(event);
    }
  },
};

/** The effect's key: one reminder per session and start time, whoever sweeps and however often. */
export const reminderCause = (sessionId: string, startsAt: string) =>
  uuidFrom('session-reminder', sessionId, startsAt);

export interface ReminderNotice {
  userId: string;
  role: 'client' | 'coach';
  sessionId: string;
  startsAt: string;
  /** The notification's causationEventId (`reminderCause`). */
  cause: string;
}

/**
 * What a sweep at `now` does with a session in the due table:
 * - `remind` both parties (the session is `new` or `approved`, its start is within the lead time ahead, and its
 *   time was set at least the lead time before the start);
 * - `wait`: not due yet (the table lags a move to a later time; the move's row comes);
 * - `drop` its row: no reminder will ever be due for this start (gone, over, started, or booked or moved to it
 *   less than the lead time before it: the booking or reschedule notice told the parties of a time that near).
 */
export type ReminderDecision =
  { kind: 'remind'; notices: ReminderNotice[] } | { kind: 'wait' } | { kind: 'drop' };

export function decideReminder(
  fold: ReminderFold,
  sessionId: string,
  now: string,
  leadMs: number,
): ReminderDecision {
  const b = fold.booking;
  const session = b.sessions.get(sessionId);
  if (!b.groupId || !session || leadMs <= 0) return { kind: 'drop' };
  if (session.state !== 'new' && session.state !== 'approved') return { kind: 'drop' };
  const start = Date.parse(session.startsAt);
  const at = Date.parse(now);
  if (at >= start) return { kind: 'drop' };
  const setAt = fold.setAt.get(sessionId);
  if (setAt !== undefined && Date.parse(setAt) > start - leadMs) return { kind: 'drop' };
  if (at < start - leadMs) return { kind: 'wait' };
  const cause = reminderCause(sessionId, session.startsAt);
  const base = { sessionId, startsAt: session.startsAt, cause };
  return {
    kind: 'remind',
    notices: [
      { ...base, userId: b.clientId, role: 'client' },
      { ...base, userId: b.coachId, role: 'coach' },
    ],
  };
}

/** The in-app text of a reminder, naming the session's local time in the booking's zone as other notices do. */
export function reminderMessage(fold: ReminderFold, n: ReminderNotice): string {
  const b = fold.booking;
  const session = b.sessions.get(n.sessionId);
  const serviceName = session?.terms?.serviceName ?? b.terms?.serviceName ?? 'your session';
  // From the instant, in the booking's zone: a move after the coach changed zone records the new zone's wall
  // time as the slot, which under the booking's zone label would name another hour.
  const label = session && (b.timezone ? localSlot(session.startsAt, b.timezone) : session.slot);
  const at = namedTimes(label ? [label] : [], b.timezone || undefined);
  const on = at ? ` on ${at}` : '';
  return n.role === 'coach'
    ? `Reminder: your session of ${serviceName}${on} with your client is coming up`
    : `Reminder: your session of ${serviceName}${on} is coming up`;
}
