import type { CalendarEvent } from '../commands/calendar/events';
import { assertNever } from '../src/decider';
import type { Projection } from './runner';

/** Read models `coach_calendars` (schedule) and `slot_holds` (active holds), for availability queries. */
export const calendarProjection: Projection = {
  name: 'calendar',
  handles: ['ScheduleSet', 'SlotsReserved', 'SlotsReleased'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as CalendarEvent;
    switch (event.type) {
      case 'ScheduleSet':
        await tx.query(
          `INSERT INTO coach_calendars (coach_id, schedule, updated_at) VALUES ($1, $2::jsonb, $3)
           ON CONFLICT (coach_id) DO UPDATE SET schedule = EXCLUDED.schedule, updated_at = EXCLUDED.updated_at`,
          [event.data.coachId, JSON.stringify(event.data.schedule), event.data.setAt],
        );
        return;
      case 'SlotsReserved': {
        const d = event.data;
        for (const s of d.sessions)
          await tx.query(
            `INSERT INTO slot_holds (session_id, group_id, coach_id, service_id, client_id, starts_at, ends_at,
               travel_minutes)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
            [
              s.sessionId,
              d.groupId,
              d.coachId,
              d.serviceId,
              d.clientId,
              s.startsAt,
              s.endsAt,
              d.terms.minutesTravel ?? 0,
            ],
          );
        return;
      }
      case 'SlotsReleased':
        await tx.query('DELETE FROM slot_holds WHERE session_id = ANY($1::uuid[])', [event.data.sessionIds]);
        return;
      default:
        assertNever(event);
    }
  },
};
