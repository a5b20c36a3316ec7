import { randomUUID } from 'node:crypto';
import type { BookingEvent } from '../../commands/booking/events';
import {
  decideReminder,
  reminderCause,
  reminderFold,
  reminderMessage,
  type ReminderFold,
} from '../../commands/notifications/reminders';
import { sessionsBookedData } from '../support/marketplace';

const DAY = 24 * 3_600_000;
// Booked 2030-01-01T08:00Z for 2030-01-02T09:00Z (10:00 in Berlin): 25 hours ahead.
const ids = { groupId: randomUUID(), coachId: randomUUID(), clientId: randomUUID(), serviceId: randomUUID() };
const booked = sessionsBookedData(ids);
const sessionId = booked.sessions[0]!.sessionId;
const ref = { ...ids, sessionId };
const fold = (...events: BookingEvent[]): ReminderFold =>
  [{ type: 'SessionsBooked', data: booked } as BookingEvent, ...events].reduce(
    reminderFold.evolve,
    reminderFold.initialState(),
  );

describe('decideReminder (pure)', () => {
  it('waits until the lead time before the start, then reminds both parties keyed by session and start', () => {
    const f = fold();
    expect(decideReminder(f, sessionId, '2030-01-01T08:30:00.000Z', DAY)).toEqual({ kind: 'wait' });
    const d = decideReminder(f, sessionId, '2030-01-01T09:00:00.000Z', DAY);
    const cause = reminderCause(sessionId, '2030-01-02T09:00:00.000Z');
    expect(d).toEqual({
      kind: 'remind',
      notices: [
        { userId: ids.clientId, role: 'client', sessionId, startsAt: '2030-01-02T09:00:00.000Z', cause },
        { userId: ids.coachId, role: 'coach', sessionId, startsAt: '2030-01-02T09:00:00.000Z', cause },
      ],
    });
    if (d.kind !== 'remind') throw new Error('reminds');
    expect(reminderMessage(f, d.notices[0]!)).toBe(
      'Reminder: your session of Tennis basics on 2030-01-02 10:00 (Europe/Berlin) is coming up',
    );
    expect(reminderMessage(f, d.notices[1]!)).toContain('with your client');
  });

  it('drops a session that ended, started, or was booked less than the lead time before its start', () => {
    const at = '2030-01-01T09:30:00.000Z';
    const canceled = fold({ type: 'SessionCanceled', data: { ...ref, by: 'client', reason: '', at } });
    expect(decideReminder(canceled, sessionId, at, DAY)).toEqual({ kind: 'drop' });
    const declined = fold({ type: 'SessionDeclined', data: { ...ref, reason: '', at } });
    expect(decideReminder(declined, sessionId, at, DAY)).toEqual({ kind: 'drop' });
    expect(decideReminder(fold(), sessionId, '2030-01-02T09:00:00.000Z', DAY)).toEqual({ kind: 'drop' });
    // 25 hours ahead is not enough for a 26-hour lead: the booking's notice was the reminder.
    expect(decideReminder(fold(), sessionId, at, 26 * 3_600_000)).toEqual({ kind: 'drop' });
    expect(decideReminder(fold(), randomUUID(), at, DAY)).toEqual({ kind: 'drop' });
    expect(decideReminder(fold(), sessionId, at, 0)).toEqual({ kind: 'drop' });
  });

  it("names a session moved after the coach's zone change at its time in the booking's zone", () => {
    // The coach moved the schedule to New York, then the session to 10:00 there (16:00 in Berlin): the move
    // records New York's wall time as the slot; the booking (and every notice of it) speaks Berlin's.
    const f = fold({
      type: 'SessionRescheduled',
      data: {
        ...ref,
        from: booked.sessions[0]!,
        to: {
          startsAt: '2030-01-03T15:00:00.000Z',
          endsAt: '2030-01-03T16:00:00.000Z',
          slot: '2030-01-03T10:00:00',
        },
        by: 'coach',
        state: 'new',
        moveId: randomUUID(),
        at: '2030-01-01T08:10:00.000Z',
      },
    });
    const d = decideReminder(f, sessionId, '2030-01-02T15:30:00.000Z', DAY);
    if (d.kind !== 'remind') throw new Error('reminds');
    expect(reminderMessage(f, d.notices[0]!)).toBe(
      'Reminder: your session of Tennis basics on 2030-01-03 16:00 (Europe/Berlin) is coming up',
    );
  });

  it('keys a moved session by its new start, and waits for it', () => {
    const f = fold({
      type: 'SessionRescheduled',
      data: {
        ...ref,
        from: booked.sessions[0]!,
        to: {
          startsAt: '2030-01-03T09:00:00.000Z',
          endsAt: '2030-01-03T10:00:00.000Z',
          slot: '2030-01-03T10:00:00',
        },
        by: 'coach',
        state: 'new',
        moveId: randomUUID(),
        at: '2030-01-01T08:10:00.000Z',
      },
    });
    expect(decideReminder(f, sessionId, '2030-01-01T09:30:00.000Z', DAY)).toEqual({ kind: 'wait' });
    const d = decideReminder(f, sessionId, '2030-01-02T09:30:00.000Z', DAY);
    expect(d.kind === 'remind' && d.notices[0]!.cause).toBe(
      reminderCause(sessionId, '2030-01-03T09:00:00.000Z'),
    );
    expect(reminderCause(sessionId, '2030-01-03T09:00:00.000Z')).not.toBe(
      reminderCause(sessionId, '2030-01-02T09:00:00.000Z'),
    );
  });
});
