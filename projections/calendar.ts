import type { CalendarEvent } from '../commands/calendar/events';
import { placeKey } from '../commands/calendar/slots';
import { assertNever } from '../src/decider';
import type { Projection } from './runner';
import { bumped, userScope } from '../src/readModels/readVersions';

/**
 * Each change bumps the coach's cached availability with it (a reservation of several sessions: with its
 * first hold; a rebuild replays the plain statement, so the holds stay one statement text it can merge).
 */
const SET_SCHEDULE = bumped(
  `INSERT INTO coach_calendars (coach_id, schedule, updated_at) VALUES ($1, $2::jsonb, $3)
   ON CONFLICT (coach_id) DO UPDATE SET schedule = EXCLUDED.schedule, updated_at = EXCLUDED.updated_at`,
  'calendar',
);
const RELEASE = bumped('DELETE FROM slot_holds WHERE session_id = ANY($1::uuid[])', 'calendar');
const MOVE = bumped('UPDATE slot_holds SET starts_at = $2, ends_at = $3 WHERE session_id = $1', 'calendar');
const INSERT_HOLD = `INSERT INTO slot_holds (session_id, group_id, coach_id, service_id, client_id, starts_at, ends_at,
   travel_minutes, place, shared)
 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`;
const INSERT_HOLD_BUMPED = bumped(INSERT_HOLD, 'calendar');

/** Read models `coach_calendars` (schedule) and `slot_holds` (active holds), for availability queries. */
export const calendarProjection: Projection = {
  name: 'calendar',
  handles: ['ScheduleSet', 'SlotsReserved', 'SlotsReleased', 'SlotMoved'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as CalendarEvent;
    switch (event.type) {
      case 'ScheduleSet':
        await tx.query(SET_SCHEDULE, [
          event.data.coachId,
          JSON.stringify(event.data.schedule),
          event.data.setAt,
          [userScope(event.data.coachId)],
        ]);
        return;
      case 'SlotsReserved': {
        const d = event.data;
        for (const [i, s] of d.sessions.entries())
          await tx.query(i === 0 ? INSERT_HOLD_BUMPED : INSERT_HOLD, [
            s.sessionId,
            d.groupId,
            d.coachId,
            d.serviceId,
            d.clientId,
            s.startsAt,
            s.endsAt,
            d.terms.minutesTravel ?? 0,
            placeKey(d.terms.addressId, d.terms.clientLocation),
            d.groupSession,
            ...(i === 0 ? [[userScope(d.coachId)]] : []),
          ]);
        return;
      }
      case 'SlotsReleased':
        await tx.query(RELEASE, [event.data.sessionIds, [userScope(event.data.coachId)]]);
        return;
      case 'SlotMoved': {
        // The old time is free and the new one taken in the same statement (a released hold has no row).
        const d = event.data;
        await tx.query(MOVE, [d.sessionId, d.to.startsAt, d.to.endsAt, [userScope(d.coachId)]]);
        return;
      }
      default:
        assertNever(event);
    }
  },
};
