/**
 * Folding long streams, in memory: a busy coach's inbox (NotificationCreated) and calendar (SlotsReserved),
 * folded cold as a process does after a start or when its kept fold was forgotten, and one more event onto
 * the folded state (every new notification or booking). The peer is the same fold with the native Map and
 * Set copied on every event, as the deciders did before their persistent maps (src/persistentMap.ts); it
 * runs up to 5,000 events only (quadratic: 20,000 took 43 s for an inbox and 74 s for a calendar here).
 */
import { calendar } from '../commands/calendar/decider';
import type { CalendarEvent } from '../commands/calendar/events';
import { inbox } from '../commands/notifications/decider';
import type { NotificationEvent } from '../commands/notifications/events';
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
    );
  }
  printTable('Folds (in memory; ratio: how many times faster than copying the maps per event)', rows);
}

main();
