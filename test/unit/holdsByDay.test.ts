import { isRight } from 'fp-ts/Either';
import { calendar, type Calendar, type CalendarCommand } from '../../commands/calendar/decider';
import type { CalendarEvent, Schedule } from '../../commands/calendar/events';
import { indexHold, type HoldsByDay } from '../../commands/calendar/holdsByDay';
import { freeSlots, type SlotRules } from '../../commands/calendar/slots';
import { PersistentMap } from '../../src/persistentMap';
import { bookableService, bookingTerms, clientOrderOf, slotRules } from '../support/marketplace';

const coachId = '1a2b3c4d-0000-4000-8000-000000000001';
const DAY = 86_400_000;
const T0 = Date.parse('2027-03-20T00:00:00.000Z'); // a week before Berlin's spring change

/** A small deterministic random source, so a failure replays. */
function randomSource(seed: number) {
  return () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

const reserved = (
  groupId: string,
  sessions: { sessionId: string; startsAt: string; endsAt: string }[],
  minutesTravel: number,
  serviceId = 'tennis',
): CalendarEvent => ({
  type: 'SlotsReserved',
  data: {
    coachId,
    groupId,
    serviceId,
    clientId: `client-${groupId}`,
    groupSession: serviceId === 'group',
    maxGroupSize: serviceId === 'group' ? 3 : 1,
    timezone: 'Europe/Berlin',
    sessions: sessions.map((s) => ({ ...s, slot: s.startsAt.slice(0, 19) })),
    terms: { ...bookingTerms(), minutesTravel },
    reservedAt: '2027-03-01T00:00:00.000Z',
  },
});
const released = (groupId: string, sessionIds: string[]): CalendarEvent => ({
  type: 'SlotsReleased',
  data: { coachId, groupId, sessionIds, reason: 'canceled', releasedAt: '2027-03-02T00:00:00.000Z' },
});

/** Random holds over three weeks: short and long sessions, travel from none to more than a day. */
function randomHistory(random: () => number, count: number): CalendarEvent[] {
  const events: CalendarEvent[] = [];
  const live: { groupId: string; sessionId: string }[] = [];
  for (let i = 0; i < count; i++) {
    if (live.length && random() < 0.25) {
      const [gone] = live.splice(Math.floor(random() * live.length), 1);
      events.push(released(gone!.groupId, [gone!.sessionId]));
      continue;
    }
    const start = T0 + Math.floor(random() * 21 * 96) * 15 * 60_000;
    const minutes = [30, 60, 60, 90, 90, 600, 1500][Math.floor(random() * 7)]!;
    const travel = [0, 0, 0, 0, 15, 45, 240, 1800][Math.floor(random() * 8)]!;
    const group = `g${i}`;
    const sessionId = `s${i}`;
    events.push(
      reserved(
        group,
        [
          {
            sessionId,
            startsAt: new Date(start).toISOString(),
            endsAt: new Date(start + minutes * 60_000).toISOString(),
          },
        ],
        travel,
        random() < 0.2 ? 'group' : 'tennis',
      ),
    );
    live.push({ groupId: group, sessionId });
  }
  return events;
}

const fold = (events: CalendarEvent[]): Calendar => events.reduce(calendar.evolve, calendar.initialState());

describe("a calendar's holds by day (commands/calendar/holdsByDay.ts)", () => {
  it('stays what indexing the remaining holds from scratch gives, through random holds and releases', () => {
    const random = randomSource(11);
    for (let round = 0; round < 20; round++) {
      const state = fold(randomHistory(random, 150));
      let fresh: HoldsByDay = PersistentMap.empty();
      for (const r of state.reservations.values()) fresh = indexHold(fresh, r);
      const asLists = (index: HoldsByDay) =>
        Object.fromEntries(
          index
            .entries()
            .map(([day, ids]) => [day, [...ids].sort()])
            .sort((x, y) => (x[0]! < y[0]! ? -1 : 1)),
        );
      expect(asLists(state.holdsByDay)).toEqual(asLists(fresh));
      // No day is left holding nothing.
      expect(state.holdsByDay.values().every((ids) => ids.size > 0)).toBe(true);
    }
  });

  it("decides a booking as the whole calendar would, for slots all over the holds' days", () => {
    const random = randomSource(5);
    const hours = [{ start: '00:00', end: '24:00' }];
    const schedule: Schedule = {
      timezone: 'Europe/Berlin',
      weekly: Object.fromEntries(
        ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'].map((d) => [d, hours]),
      ),
      overrides: {},
    };
    const setups: [SlotRules, number][] = [
      [{ ...baseRules, minutesDuration: 60 }, 0],
      [{ ...baseRules, minutesDuration: 30 }, 45],
      [{ ...baseRules, serviceId: 'group', groupSession: true, maxGroupSize: 3 }, 0],
      [{ ...baseRules, minutesDuration: 90 }, 600],
    ];
    const now = new Date(T0 - DAY);
    let compared = 0;
    let free = 0;
    for (let round = 0; round < 6; round++) {
      const state = fold([
        { type: 'ScheduleSet', data: { coachId, schedule, setAt: '2027-01-01T00:00:00.000Z' } },
        ...randomHistory(random, 40),
      ]);
      const all = state.reservations.values();
      for (const [rules, travel] of setups)
        for (let day = 0; day < 21; day += 3)
          for (let q = 0; q < 96; q += 6) {
            const start = T0 + day * DAY + q * 15 * 60_000;
            // The local label of that instant in Berlin, as a client would send it.
            const label = new Date(start + offsetMs(start)).toISOString().slice(0, 16);
            const date = label.slice(0, 10);
            const viaAll = freeSlots(schedule, all, rules, date, date, now, travel, label);
            const decided = calendar.decide(reserve(rules, label, travel, now), state);
            const held = isRight(decided) ? decided.right[0]!.data : null;
            expect([label, held && 'sessions' in held ? held.sessions[0]!.startsAt : null]).toEqual([
              label,
              viaAll[0]?.startsAt ?? null,
            ]);
            compared++;
            if (viaAll.length) free++;
          }
    }
    expect(compared).toBe(6 * 4 * 7 * 16);
    // Both answers occur: the comparison is not between refusals only.
    expect(free).toBeGreaterThan(100);
    expect(compared - free).toBeGreaterThan(100);
  });
});

let ids = 0;
/** A booking of one slot by a client holding nothing, on a service with these rules. */
const reserve = (rules: SlotRules, slot: string, minutesTravel: number, now: Date): CalendarCommand => ({
  type: 'ReserveSlots',
  service: bookableService(rules, coachId),
  groupId: `booking-${++ids}`,
  clientId: 'client-booking',
  slots: [slot],
  sessionIds: [`booking-session-${ids}`],
  order: { ...clientOrderOf(bookingTerms()), minutesTravel },
  paymentWindowHours: 24,
  now: now.toISOString(),
});

const baseRules = slotRules();

/** Berlin's offset at an instant in March 2027 (summer time from 28 March 01:00 UTC). */
const offsetMs = (t: number) => (t >= Date.parse('2027-03-28T01:00:00Z') ? 2 : 1) * 3_600_000;
