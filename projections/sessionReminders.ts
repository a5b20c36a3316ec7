import type { BookingEvent } from '../commands/booking/events';
import { assertNever } from '../src/decider';
import type { Projection } from './runner';

/**
 * Read model `session_reminder_due`: the sessions still on, with their start. It is what the reminder
 * sweeper (src/sessionReminderSweeper.ts) reads, so a reminder due while the service was stopped is sent at
 * its next start. One indexed write per session event: a booking inserts its sessions (one statement), a move
 * sets the new start, an end (declined, canceled, completed) removes the row; an approval changes nothing.
 */
export const sessionRemindersProjection: Projection = {
  name: 'session_reminders',
  handles: ['SessionsBooked', 'SessionRescheduled', 'SessionDeclined', 'SessionCanceled', 'SessionCompleted'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as BookingEvent;
    switch (event.type) {
      case 'SessionsBooked': {
        const { groupId, sessions } = event.data;
        if (!sessions.length) return;
        await tx.query(
          `INSERT INTO session_reminder_due (session_id, group_id, starts_at)
           SELECT s, $1, t FROM unnest($2::uuid[], $3::timestamptz[]) AS x(s, t)
           ON CONFLICT DO NOTHING`,
          [groupId, sessions.map((s) => s.sessionId), sessions.map((s) => s.startsAt)],
        );
        return;
      }
      case 'SessionRescheduled':
        // Upserted: the row of a reminder already sent for the old time is gone, and the new time is due.
        await tx.query(
          `INSERT INTO session_reminder_due (session_id, group_id, starts_at) VALUES ($1, $2, $3)
           ON CONFLICT (session_id) DO UPDATE SET starts_at = EXCLUDED.starts_at`,
          [event.data.sessionId, event.data.groupId, event.data.to.startsAt],
        );
        return;
      case 'SessionDeclined':
      case 'SessionCanceled':
      case 'SessionCompleted':
        await tx.query('DELETE FROM session_reminder_due WHERE session_id = $1', [event.data.sessionId]);
        return;
      case 'SessionApproved':
      case 'SessionDisputed':
      case 'SessionReviewed':
        return;
      default:
        assertNever(event);
    }
  },
};
