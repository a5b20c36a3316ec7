/**
 * Folding long streams, in memory: a busy coach's inbox (NotificationCreated) and calendar (SlotsReserved),
 * folded cold as a process does after a start or when its kept fold was forgotten, and one more event onto
 * the folded state (every new notification or booking). The peer is the same fold with the native Map and
 * Set copied on every event, as the deciders did before their persistent maps (src/persistentMap.ts); it
 * runs up to 5,000 events only (quadratic: 20,000 took 43 s for an inbox and 74 s for a calendar here).
 * Also a booking's slot check on such a calendar, against the holds of the days around the slot (as the
 * decider does), beside the same check against every hold (as it did before it indexed its holds by day).
 */
import { calendar, type Calendar, type CalendarCommand } from '../commands/calendar/decider';
import { holdsAround } from '../commands/calendar/holdsByDay';
import { freeSlots, slotRulesOf } from '../commands/calendar/slots';
import type { CalendarEvent } from '../commands/calendar/events';
import { inbox } from '../commands/notifications/decider';
import type { NotificationEvent } from '../commands/notifications/events';
import { bookableService, slotRules } from '../test/support/marketplace';
import { machine, printTable, type Row } from './support';

const SIZES = (process.env.BENCH_FOLD_SIZES ?? '1000,5000,20000').split(',').map(Number);

const notification = (i: number): NotificationEvent => ({
  type: 'NotificationCreated',
  data: {
    notificationId: `n${i}`,
    userId: 'coach',
    type: 'session',
    contentType: 'session',
    contentId: `s${i}`,
    message: 'New booking: Tennis basics',
    causationEventId: `c${i}`,
    createdAt: '2026-12-01T08:00:00.000Z',
  },
});

/** The inbox's evolve for NotificationCreated as it was: both collections copied per event. */
const copyingInbox = (
  s: { notifications: Map<string, unknown>; causes: Set<string> },
  e: NotificationEvent,
) => {
  if (e.type !== 'NotificationCreated') return s;
  const notifications = new Map(s.notifications);
  notifications.set(e.data.notificationId, { ...e.data, unread: true, deliveredAt: null });
  return { notifications, causes: new Set(s.causes).add(e.data.causationEventId) };
};

const hold = (i: number): CalendarEvent =>
  ({
    type: 'SlotsReserved',
    data: {
      groupId: `g${i}`,
      coachId: 'coach',
      clientId: `client${i % 50}`,
      serviceId: 'svc',
      sessions: [
        {
          sessionId: `s${i}`,
          startsAt: new Date(Date.UTC(2026, 0, 1) + i * 3_600_000).toISOString(),
          endsAt: new Date(Date.UTC(2026, 0, 1) + i * 3_600_000 + 3_000_000).toISOString(),
        },
      ],
      terms: { serviceName: 'Tennis basics', minutesTravel: 0 },
      reservedAt: '2025-12-01T08:00:00.000Z',
    },
  }) as unknown as CalendarEvent;

/** The calendar's evolve for SlotsReserved as it was: reservations and packages copied per event. */
const copyingCalendar = (
  s: { reservations: Map<string, unknown>; packages: Map<string, unknown> },
  e: CalendarEvent,
) => {
  if (e.type !== 'SlotsReserved') return s;
  const reservations = new Map(s.reservations);
  for (const x of e.data.sessions) reservations.set(x.sessionId, { ...x, groupId: e.data.groupId });
  const packages = new Map(s.packages);
  packages.set(e.data.groupId, { clientId: e.data.clientId, terms: e.data.terms });
  return { reservations, packages };
};

function ms(f: () => unknown): number {
  const t0 = performance.now();
  f();
  return performance.now() - t0;
}

/** The row of one fold: cold over `n` events, one more event, and the copying peer up to 5,000 events. */
function foldRow<E, S, P>(
  figure: string,
  n: number,
  event: (i: number) => E,
  fold: { initialState: () => S; evolve: (s: S, e: E) => S },
  peer: { initial: () => P; evolve: (s: P, e: E) => P },
): Row {
  const events = Array.from({ length: n }, (_, i) => event(i));
  let folded = fold.initialState();
  const ours = ms(() => (folded = events.reduce(fold.evolve, fold.initialState())));
  const more = ms(() => fold.evolve(folded, event(n)));
  const theirs = n <= 5_000 ? ms(() => events.reduce(peer.evolve, peer.initial())) : NaN;
  return {
    figure,
    project: `${ours.toFixed(0)} ms; ${(more * 1000).toFixed(0)} µs`,
    peer: Number.isNaN(theirs) ? 'copied maps: not run (quadratic)' : `copied maps ${theirs.toFixed(0)} ms`,
    ...(Number.isNaN(theirs) ? {} : { ratio: theirs / ours }),
  };
}

const hours = [{ start: '00:00', end: '24:00' }];
const allDay = Object.fromEntries(
  ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'].map((d) => [d, hours]),
);
/** A 10-minute service: a slot fits between two holds of the calendar below (50 minutes each, an hour apart). */
const service = bookableService(
  slotRules({ serviceId: 'svc', minutesDuration: 10, bookingWindowDays: 3650 }),
  'coach',
);

/**
 * A booking's slot check (the ten minutes after the middle hold, free) on a calendar of `n` holds an hour
 * apart, median of 200, and the decider's answer on it (must hold the slot); the peer checks the same slot
 * against every hold.
 */
function decisionRow(n: number): Row {
  const state: Calendar = [
    {
      type: 'ScheduleSet',
      data: { coachId: 'coach', schedule: { timezone: 'UTC', weekly: allDay, overrides: {} }, setAt: '' },
    } as CalendarEvent,
    ...Array.from({ length: n }, (_, i) => hold(i)),
  ].reduce(calendar.evolve, calendar.initialState());
  const start = new Date(Date.UTC(2026, 0, 1) + Math.floor(n / 2) * 3_600_000 + 3_000_000);
  const slot = start.toISOString().slice(0, 16);
  const command = {
    type: 'ReserveSlots',
    service,
    groupId: 'new',
    clientId: 'someone',
    slots: [slot],
    sessionIds: ['new-session'],
    order: { paymentId: 'p', method: 'card', minutesTravel: 0 },
    paymentWindowHours: 24,
    now: '2025-12-01T00:00:00.000Z',
  } as unknown as CalendarCommand;
  const median = (f: () => unknown) => {
    const times = Array.from({ length: 200 }, () => ms(f)).sort((a, b) => a - b);
    return times[100]!;
  };
  const all = state.reservations.values();
  const rules = slotRulesOf(service);
  const date = slot.slice(0, 10);
  const now = new Date(command.now);
  const theirs = median(() => freeSlots(state.schedule!, all, rules, date, date, now, 0, slot));
  // The decider's own check: the holds of the days around the slot (its margin), then the same arithmetic.
  const margin = 3 * 86_400_000;
  const ours = median(() => {
    const around = holdsAround(state.reservations, state.holdsByDay, +start - margin, +start + margin);
    if (!freeSlots(state.schedule!, around, rules, date, date, now, 0, slot).length)
      throw new Error("the bench's slot is not free");
  });
  const decision = calendar.decide(command, state);
  if (decision._tag !== 'Right') throw new Error(`refused: ${JSON.stringify(decision.left)}`);
  return {
    figure: `a booking's slot check on a calendar of ${n} holds (holds of the days around it)`,
    project: `${(ours * 1000).toFixed(0)} µs`,
    peer: `every hold checked ${(theirs * 1000).toFixed(0)} µs`,
    ratio: theirs / ours,
  };
}

function main() {
  console.log(`Fold benchmark: ${machine()}`);
  const rows: Row[] = [];
  for (const n of SIZES) {
    rows.push(
      foldRow(`inbox of ${n} notifications: cold fold; one more notification`, n, notification, inbox, {
        initial: () => ({ notifications: new Map<string, unknown>(), causes: new Set<string>() }),
        evolve: copyingInbox,
      }),
      foldRow(`calendar of ${n} holds: cold fold; one more hold`, n, hold, calendar, {
        initial: () => ({ reservations: new Map<string, unknown>(), packages: new Map<string, unknown>() }),
        evolve: copyingCalendar,
      }),
      decisionRow(n),
    );
  }
  printTable('Folds (in memory; ratio: how many times faster than copying the maps per event)', rows);
}

main();
