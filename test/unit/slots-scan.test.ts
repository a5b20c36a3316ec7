import type { Schedule } from '../../commands/calendar/events';
import { freeSlots, type Reservation } from '../../commands/calendar/slots';
import { slotRules } from '../support/marketplace';

/**
 * The slot check compares a candidate only with the reservations whose busy time (travel included) can reach
 * it. Checked here against the plain rule over every reservation, on random calendars with travel of every
 * length, group seats and places, so a window that misses a reservation shows as a slot offered twice.
 */
const all = [{ start: '06:00', end: '22:00' }];
const schedule: Schedule = {
  timezone: 'Europe/Berlin',
  weekly: {
    monday: all,
    tuesday: all,
    wednesday: all,
    thursday: all,
    friday: all,
    saturday: all,
    sunday: all,
  },
  overrides: {},
};
const now = new Date('2027-03-01T00:00:00Z');

/** A small deterministic generator (mulberry32), so a failure repeats. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('freeSlots compares each candidate with the reservations that can reach it', () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`offers exactly the candidates the rule over every reservation leaves free (seed ${seed})`, () => {
      const rnd = random(seed);
      const group = seed % 2 === 0;
      const rules = slotRules({
        serviceId: 'svc',
        minutesDuration: 30,
        groupSession: group,
        maxGroupSize: 3,
      });
      const base = Date.parse('2027-03-10T05:00:00Z');
      const reservations: Reservation[] = [];
      for (let i = 0; i < 60; i++) {
        // Start on the half hour so some are seats of candidate slots; travel from none to four hours, and one of
        // a whole day each way (the longest busy time sets how far back a candidate looks).
        const s = base + Math.floor(rnd() * 10 * 48) * 30 * 60_000;
        const minutes = rnd() < 0.7 ? 30 : 15 + Math.floor(rnd() * 180);
        const travel = i === 7 ? 1_440 : [0, 0, 0, 20, 45, 240][Math.floor(rnd() * 6)]!;
        reservations.push({
          sessionId: `r${i}`,
          serviceId: rnd() < 0.6 ? 'svc' : 'other',
          clientId: `c${i}`,
          startsAt: new Date(s).toISOString(),
          endsAt: new Date(s + minutes * 60_000).toISOString(),
          travelMinutes: travel,
          place: rnd() < 0.5 ? null : 'coach:a',
          shared: rnd() < 0.9,
        });
      }
      const ownTravel = seed % 3 === 0 ? 30 : 0;
      const from = '2027-03-09';
      const to = '2027-03-19';
      const candidates = freeSlots(schedule, [], { ...rules, place: 'coach:a' }, from, to, now, ownTravel);
      const expected = candidates.filter((c) => {
        const s = Date.parse(c.startsAt) - ownTravel * 60_000;
        const e = Date.parse(c.endsAt) + ownTravel * 60_000;
        let seats = 0;
        for (const r of reservations) {
          const travel = (r.travelMinutes ?? 0) * 60_000;
          const rs = Date.parse(r.startsAt);
          const re = Date.parse(r.endsAt);
          const seat =
            group &&
            r.shared !== false &&
            r.serviceId === 'svc' &&
            rs === Date.parse(c.startsAt) &&
            re === Date.parse(c.endsAt) &&
            (r.place == null || r.place === 'coach:a');
          if (seat) seats++;
          else if (s < re + travel && rs - travel < e) return false;
        }
        return seats < (group ? 3 : 1);
      });
      const offered = freeSlots(
        schedule,
        reservations,
        { ...rules, place: 'coach:a' },
        from,
        to,
        now,
        ownTravel,
      );
      expect(offered.map((o) => o.slot)).toEqual(expected.map((c) => c.slot));
      expect(offered.length).toBeGreaterThan(0);
      expect(offered.length).toBeLessThan(candidates.length);
    });
  }

  it('stops after limit + 1 free slots, the first ones in time', () => {
    const rules = slotRules({ serviceId: 'svc', minutesDuration: 30 });
    const every = freeSlots(schedule, [], rules, '2027-03-09', '2027-03-19', now);
    const bounded = freeSlots(schedule, [], rules, '2027-03-09', '2027-03-19', now, 0, undefined, 10);
    expect(bounded).toEqual(every.slice(0, 11));
  });
});
