import type { Schedule } from '../../commands/calendar/events';
import {
  dayMonthYear,
  freeSlots,
  hoursOn,
  localDate,
  parseLocal,
  placeKey,
  type Reservation,
  type SlotRules,
} from '../../commands/calendar/slots';
import { DateTime } from 'luxon';
import { slotRules } from '../support/marketplace';

const rules = slotRules;
const night = [{ start: '00:00', end: '06:00' }];
const berlinSundayNights: Schedule = { timezone: 'Europe/Berlin', weekly: { sunday: night }, overrides: {} };
const labels = (slots: { slot: string }[]) => slots.map((s) => s.slot.slice(11, 16));

describe('freeSlots across daylight-saving transitions (Europe/Berlin)', () => {
  const now = new Date('2027-01-01T00:00:00Z');

  it('offers the repeated wall time of the autumn fold once (31 Oct 2027, 02:00-03:00 twice)', () => {
    const slots = freeSlots(berlinSundayNights, [], rules(), '2027-10-31', '2027-10-31', now);
    expect(labels(slots)).toEqual(['00:00', '01:00', '02:00', '03:00', '04:00', '05:00']);
    // 02:00 is its first occurrence (CEST, +02:00); 03:00 is CET (+01:00), two real hours later.
    expect(slots.map((s) => [s.slot, s.startsAt, s.endsAt])).toEqual([
      ['2027-10-31T00:00:00', '2027-10-30T22:00:00.000Z', '2027-10-30T23:00:00.000Z'],
      ['2027-10-31T01:00:00', '2027-10-30T23:00:00.000Z', '2027-10-31T00:00:00.000Z'],
      ['2027-10-31T02:00:00', '2027-10-31T00:00:00.000Z', '2027-10-31T01:00:00.000Z'],
      ['2027-10-31T03:00:00', '2027-10-31T02:00:00.000Z', '2027-10-31T03:00:00.000Z'],
      ['2027-10-31T04:00:00', '2027-10-31T03:00:00.000Z', '2027-10-31T04:00:00.000Z'],
      ['2027-10-31T05:00:00', '2027-10-31T04:00:00.000Z', '2027-10-31T05:00:00.000Z'],
    ]);
  });

  it('offers each half hour of the fold once with 30-minute steps', () => {
    const slots = freeSlots(
      berlinSundayNights,
      [],
      rules({ minutesDuration: 30 }),
      '2027-10-31',
      '2027-10-31',
      now,
    );
    const inFold = slots.filter((s) => s.slot >= '2027-10-31T02:00' && s.slot < '2027-10-31T03:00');
    expect(inFold.map((s) => [s.slot, s.startsAt])).toEqual([
      ['2027-10-31T02:00:00', '2027-10-31T00:00:00.000Z'],
      ['2027-10-31T02:30:00', '2027-10-31T00:30:00.000Z'],
    ]);
    expect(new Set(slots.map((s) => s.slot)).size).toBe(slots.length);
  });

  it('skips the wall times of the spring gap (28 Mar 2027, 02:00-03:00 does not exist)', () => {
    const slots = freeSlots(berlinSundayNights, [], rules(), '2027-03-28', '2027-03-28', now);
    expect(labels(slots)).toEqual(['00:00', '01:00', '03:00', '04:00', '05:00']);
    const byLabel = Object.fromEntries(slots.map((s) => [s.slot.slice(11, 16), s]));
    expect(byLabel['01:00']).toMatchObject({
      startsAt: '2027-03-28T00:00:00.000Z',
      endsAt: '2027-03-28T01:00:00.000Z',
    });
    expect(byLabel['03:00']).toMatchObject({
      startsAt: '2027-03-28T01:00:00.000Z',
      endsAt: '2027-03-28T02:00:00.000Z',
    });
  });

  it('ends a session by the end of the hours on the wall clock, across the spring gap too', () => {
    // Sunday 01:00-03:00 is one real hour on 28 Mar 2027: a 90-minute session from 01:00 would run to 03:30.
    const short: Schedule = {
      timezone: 'Europe/Berlin',
      weekly: { sunday: [{ start: '01:00', end: '03:00' }] },
      overrides: {},
    };
    expect(freeSlots(short, [], rules({ minutesDuration: 90 }), '2027-03-28', '2027-03-28', now)).toEqual([]);
    expect(labels(freeSlots(short, [], rules(), '2027-03-28', '2027-03-28', now))).toEqual(['01:00']);
    // The same hours a week later are two real hours: 01:00 is offered for 90 minutes.
    expect(
      labels(freeSlots(short, [], rules({ minutesDuration: 90 }), '2027-04-04', '2027-04-04', now)),
    ).toEqual(['01:00']);
    // A session of the day before a skipped midnight (America/Santiago, 6 Sep 2026) may end at its 24:00.
    const santiago: Schedule = {
      timezone: 'America/Santiago',
      weekly: { saturday: [{ start: '22:00', end: '24:00' }] },
      overrides: {},
    };
    const before = new Date('2026-01-01T00:00:00Z');
    expect(labels(freeSlots(santiago, [], rules(), '2026-09-05', '2026-09-05', before))).toEqual([
      '22:00',
      '23:00',
    ]);
  });

  it('keeps local midnight when stepping days across a transition', () => {
    const daily: Schedule = {
      timezone: 'Europe/Berlin',
      weekly: Object.fromEntries(
        ['friday', 'saturday', 'sunday', 'monday'].map((d) => [d, [{ start: '09:00', end: '10:00' }]]),
      ),
      overrides: {},
    };
    const slots = freeSlots(daily, [], rules(), '2027-03-26', '2027-03-29', now);
    expect(slots.map((s) => [s.slot, s.startsAt])).toEqual([
      ['2027-03-26T09:00:00', '2027-03-26T08:00:00.000Z'],
      ['2027-03-27T09:00:00', '2027-03-27T08:00:00.000Z'],
      ['2027-03-28T09:00:00', '2027-03-28T07:00:00.000Z'],
      ['2027-03-29T09:00:00', '2027-03-29T07:00:00.000Z'],
    ]);
  });
});

describe('freeSlots where DST skips midnight (America/Santiago, Africa/Cairo, America/Havana)', () => {
  const early = [{ start: '00:00', end: '02:00' }];
  const everyDay = (timezone: string): Schedule => ({
    timezone,
    weekly: {
      monday: early,
      tuesday: early,
      wednesday: early,
      thursday: early,
      friday: early,
      saturday: early,
      sunday: early,
    },
    overrides: {},
  });
  const now = new Date('2026-01-01T00:00:00Z');

  it.each([
    ['America/Santiago', '2026-09-05', '2026-09-06', '2026-09-07'],
    ['Africa/Cairo', '2026-04-23', '2026-04-24', '2026-04-25'],
    ['America/Havana', '2026-03-07', '2026-03-08', '2026-03-09'],
  ])(
    '%s: the skipped 00:00 is not offered, and the days after the change are all there',
    (zone, before, gap, after) => {
      const slots = freeSlots(everyDay(zone), [], rules(), before, after, now);
      expect(slots.map((s) => s.slot)).toEqual([
        `${before}T00:00:00`,
        `${before}T01:00:00`,
        // 00:00-01:00 does not exist on the change day: its 01:00 is the day's first instant.
        `${gap}T01:00:00`,
        `${after}T00:00:00`,
        `${after}T01:00:00`,
      ]);
      // Every slot shown is a wall time that exists there, at the instant it names.
      for (const s of slots) expect(parseLocal(s.slot, zone)?.toUTC().toISO()).toBe(s.startsAt);
      // A range shows what each of its days shows alone (the booking checks one day).
      const byDay = [before, gap, after].flatMap((d) => freeSlots(everyDay(zone), [], rules(), d, d, now));
      expect(slots).toEqual(byDay);
    },
  );

  it('America/Havana: a midnight repeated in autumn (1 Nov 2026, 01:00 back to 00:00) takes its first occurrence', () => {
    const slots = freeSlots(everyDay('America/Havana'), [], rules(), '2026-11-01', '2026-11-01', now);
    expect(slots.map((s) => [s.slot, s.startsAt])).toEqual([
      ['2026-11-01T00:00:00', '2026-11-01T04:00:00.000Z'], // 00:00 -04:00, not the second 00:00 (-05:00)
      ['2026-11-01T01:00:00', '2026-11-01T06:00:00.000Z'],
    ]);
    for (const s of slots) expect(parseLocal(s.slot, 'America/Havana')?.toUTC().toISO()).toBe(s.startsAt);
  });
});

describe('freeSlots in a zone far from UTC (Pacific/Auckland, UTC+13 in December)', () => {
  const mornings = [{ start: '07:00', end: '09:00' }];
  const auckland: Schedule = {
    timezone: 'Pacific/Auckland',
    weekly: { wednesday: mornings },
    overrides: {},
  };

  it('reads from/to as local dates: a Wednesday morning there is Tuesday evening in UTC', () => {
    const now = new Date('2026-11-30T00:00:00Z');
    const slots = freeSlots(auckland, [], rules(), '2026-12-02', '2026-12-02', now);
    expect(slots).toEqual([
      {
        slot: '2026-12-02T07:00:00',
        startsAt: '2026-12-01T18:00:00.000Z',
        endsAt: '2026-12-01T19:00:00.000Z',
        remainingSeats: 1,
      },
      {
        slot: '2026-12-02T08:00:00',
        startsAt: '2026-12-01T19:00:00.000Z',
        endsAt: '2026-12-01T20:00:00.000Z',
        remainingSeats: 1,
      },
    ]);
    expect(localDate(slots[0]!.startsAt, 'Pacific/Auckland')).toBe('2026-12-02');
    expect(localDate(slots[0]!.startsAt, 'UTC')).toBe('2026-12-01');
    expect(dayMonthYear(slots[0]!.startsAt, 'Pacific/Auckland')).toBe('02/12/2026');
    expect(dayMonthYear(slots[0]!.startsAt, 'UTC')).toBe('01/12/2026');
  });

  it('applies the minimum notice to the instant, not the local date', () => {
    // 17:30Z on 1 Dec is 06:30 on 2 Dec in Auckland: one hour of notice drops the 07:00 slot only.
    const now = new Date('2026-12-01T17:30:00Z');
    const slots = freeSlots(auckland, [], rules({ minimumNoticeHours: 1 }), '2026-12-02', '2026-12-02', now);
    expect(labels(slots)).toEqual(['08:00']);
  });

  it('finds the hours of a date by its local weekday', () => {
    const wednesday = DateTime.fromISO('2026-12-02', { zone: 'Pacific/Auckland' });
    expect(hoursOn(auckland, wednesday)).toEqual(mornings);
    expect(hoursOn(auckland, wednesday.minus({ days: 1 }))).toEqual([]);
  });
});

describe('freeSlots with reservations', () => {
  const hours = [{ start: '09:00', end: '12:00' }];
  const schedule: Schedule = { timezone: 'Europe/Berlin', weekly: { wednesday: hours }, overrides: {} };
  const now = new Date('2026-12-01T08:00:00Z');
  const held = (serviceId: string, startsAt: string, endsAt: string, clientId = 'x'): Reservation => ({
    sessionId: `${serviceId}-${startsAt}-${clientId}`,
    serviceId,
    clientId,
    startsAt,
    endsAt,
  });

  it('hides a slot overlapping a hold, even partially', () => {
    const busy = [held('yoga', '2026-12-02T09:30:00.000Z', '2026-12-02T10:00:00.000Z')];
    expect(labels(freeSlots(schedule, busy, rules(), '2026-12-02', '2026-12-02', now))).toEqual([
      '09:00',
      '11:00',
    ]);
  });

  it('counts remaining seats of a group slot and hides it when full', () => {
    const group = rules({ serviceId: 'circle', groupSession: true, maxGroupSize: 2 });
    const one = [held('circle', '2026-12-02T08:00:00.000Z', '2026-12-02T09:00:00.000Z', 'a')];
    const seats = freeSlots(schedule, one, group, '2026-12-02', '2026-12-02', now).map((s) => [
      s.slot.slice(11, 16),
      s.remainingSeats,
    ]);
    expect(seats).toEqual([
      ['09:00', 1],
      ['10:00', 2],
      ['11:00', 2],
    ]);
    const two = [...one, held('circle', '2026-12-02T08:00:00.000Z', '2026-12-02T09:00:00.000Z', 'b')];
    expect(labels(freeSlots(schedule, two, group, '2026-12-02', '2026-12-02', now))).toEqual([
      '10:00',
      '11:00',
    ]);
  });

  it('shares a group slot only at the place its seats are held (the coach is at one place at a time)', () => {
    const park = placeKey('5A000000-0000-4000-8000-00000000000A', null);
    const home = placeKey(null, { lat: 52.5, lng: 13.4 });
    expect([park, home, placeKey(null, null)]).toEqual([
      'a:5a000000-0000-4000-8000-00000000000a',
      'c:52.5,13.4',
      '-',
    ]);
    const at = (place: string | undefined) =>
      rules({ serviceId: 'circle', groupSession: true, maxGroupSize: 3, place });
    const seat = {
      ...held('circle', '2026-12-02T08:00:00.000Z', '2026-12-02T09:00:00.000Z', 'a'),
      place: park,
    };
    const seats = (place: string | undefined, holds: Reservation[] = [seat]) =>
      freeSlots(schedule, holds, at(place), '2026-12-02', '2026-12-02', now).map((s) => [
        s.slot.slice(11, 16),
        s.remainingSeats,
      ]);
    expect(seats(park)).toEqual([
      ['09:00', 2],
      ['10:00', 3],
      ['11:00', 3],
    ]);
    // Elsewhere the held seat is the coach's busy time, as any other hold.
    expect(seats(home)).toEqual([
      ['10:00', 3],
      ['11:00', 3],
    ]);
    expect(seats('-').map(([l]) => l)).toEqual(['10:00', '11:00']);
    // A hold recorded before places were kept counts at any place.
    const { place: _unknown, ...legacy } = seat;
    expect(seats(home, [legacy])[0]).toEqual(['09:00', 2]);
  });
});

describe('freeSlots in time order', () => {
  it('lists the slots of a day chronologically when its intervals were given out of order', () => {
    const schedule: Schedule = {
      timezone: 'Europe/Berlin',
      weekly: {
        wednesday: [
          { start: '14:00', end: '16:00' },
          { start: '09:00', end: '11:00' },
        ],
      },
      overrides: {},
    };
    const now = new Date('2026-12-01T08:00:00Z');
    expect(labels(freeSlots(schedule, [], rules(), '2026-12-02', '2026-12-02', now))).toEqual([
      '09:00',
      '10:00',
      '14:00',
      '15:00',
    ]);
  });
});

describe('freeSlots over touching intervals and across midnight', () => {
  const now = new Date('2026-12-01T08:00:00Z');
  const at = (slots: { slot: string; startsAt: string; endsAt: string }[]) =>
    slots.map((s) => [s.slot, s.startsAt, s.endsAt]);

  it('lets a session span touching intervals (hours given as blocks 09-10, 10-11, 11-12)', () => {
    const blocks = ['09', '10', '11'].map((h) => ({ start: `${h}:00`, end: `${Number(h) + 1}:00` }));
    const schedule: Schedule = { timezone: 'Europe/Berlin', weekly: { wednesday: blocks }, overrides: {} };
    // Before: no block holds 90 minutes, so a coach free 09:00-12:00 offered nothing.
    expect(
      labels(freeSlots(schedule, [], rules({ minutesDuration: 90 }), '2026-12-02', '2026-12-02', now)),
    ).toEqual(['09:00', '10:00']);
    // A listed start time inside the hours is offered even where the session runs on into the next block.
    const listed = rules({ minutesDuration: 90, startTimes: new Map([[3, [10 * 60 + 30]]]) });
    expect(labels(freeSlots(schedule, [], listed, '2026-12-02', '2026-12-02', now))).toEqual(['10:30']);
    // Intervals with a gap between them stay apart.
    const apart: Schedule = {
      ...schedule,
      weekly: { wednesday: [blocks[0]!, { start: '10:15', end: '12:00' }] },
    };
    expect(
      labels(freeSlots(apart, [], rules({ minutesDuration: 90 }), '2026-12-02', '2026-12-02', now)),
    ).toEqual(['10:15']);
  });

  it("lets a session run past 24:00 into the next day's hours from 00:00 (a night 22:00-02:00)", () => {
    const schedule: Schedule = {
      timezone: 'Europe/Berlin',
      weekly: { wednesday: [{ start: '22:00', end: '24:00' }], thursday: [{ start: '00:00', end: '02:00' }] },
      overrides: {},
    };
    const slots = freeSlots(schedule, [], rules({ minutesDuration: 90 }), '2026-12-02', '2026-12-03', now);
    expect(at(slots)).toEqual([
      ['2026-12-02T22:00:00', '2026-12-02T21:00:00.000Z', '2026-12-02T22:30:00.000Z'],
      ['2026-12-02T23:30:00', '2026-12-02T22:30:00.000Z', '2026-12-03T00:00:00.000Z'],
      ['2026-12-03T00:00:00', '2026-12-02T23:00:00.000Z', '2026-12-03T00:30:00.000Z'],
    ]);
    // The slot that crosses midnight is the same one when a booking asks for it alone.
    expect(
      at(
        freeSlots(
          schedule,
          [],
          rules({ minutesDuration: 90 }),
          '2026-12-02',
          '2026-12-02',
          now,
          0,
          '2026-12-02T23:30',
        ),
      ),
    ).toEqual([at(slots)[1]]);
    // A day off after the night (an override) ends the night at 24:00.
    const off = { ...schedule, overrides: { '2026-12-03': [] } };
    expect(
      labels(freeSlots(off, [], rules({ minutesDuration: 90 }), '2026-12-02', '2026-12-03', now)),
    ).toEqual(['22:00']);
  });
});

describe('parseLocal', () => {
  it('reads a local date-time in the zone, with or without seconds', () => {
    expect(parseLocal('2026-12-02T10:00:00', 'Europe/Berlin')?.toUTC().toISO()).toBe(
      '2026-12-02T09:00:00.000Z',
    );
    expect(parseLocal('2026-12-02T10:00', 'Europe/Berlin')?.toUTC().toISO()).toBe('2026-12-02T09:00:00.000Z');
    expect(parseLocal('2026-07-02T10:00:00', 'Europe/Berlin')?.toUTC().toISO()).toBe(
      '2026-07-02T08:00:00.000Z',
    );
    expect(parseLocal('2026-12-02T10:00:00', 'America/New_York')?.toUTC().toISO()).toBe(
      '2026-12-02T15:00:00.000Z',
    );
  });

  it('answers null for a wall time inside the spring gap', () => {
    expect(parseLocal('2027-03-28T02:00:00', 'Europe/Berlin')).toBeNull();
    expect(parseLocal('2027-03-28T02:30:00', 'Europe/Berlin')).toBeNull();
    expect(parseLocal('2027-03-28T03:00:00', 'Europe/Berlin')?.toUTC().toISO()).toBe(
      '2027-03-28T01:00:00.000Z',
    );
  });

  it('takes the first occurrence of a wall time in the autumn fold', () => {
    expect(parseLocal('2027-10-31T02:30:00', 'Europe/Berlin')?.toUTC().toISO()).toBe(
      '2027-10-31T00:30:00.000Z',
    );
  });

  it.each(['nope', '2026-02-30T10:00:00', '2026-12-02T25:00:00', ''])('answers null for %p', (s) => {
    expect(parseLocal(s, 'Europe/Berlin')).toBeNull();
  });
});

describe('dayMonthYear and localDate', () => {
  it("formats an instant as dd/mm/yyyy in the zone's calendar", () => {
    const lateEvening = '2026-12-01T23:30:00.000Z';
    expect(dayMonthYear(lateEvening, 'UTC')).toBe('01/12/2026');
    expect(dayMonthYear(lateEvening, 'Europe/Berlin')).toBe('02/12/2026');
    expect(dayMonthYear(new Date(lateEvening), 'America/New_York')).toBe('01/12/2026');
    expect(dayMonthYear('2027-01-05T10:00:00Z', 'Europe/Lisbon')).toBe('05/01/2027');
  });

  it('gives the local date of an instant', () => {
    expect(localDate('2026-12-31T23:30:00Z', 'Europe/Berlin')).toBe('2027-01-01');
    expect(localDate(new Date('2026-12-31T23:30:00Z'), 'America/New_York')).toBe('2026-12-31');
  });
});

describe('freeSlots for one asked slot (a booking checks only the slot it asks for)', () => {
  it('answers exactly what the full list says of that slot: notice, window, holds, travel, seats, DST days', () => {
    const schedule: Schedule = {
      timezone: 'Europe/Berlin',
      weekly: {
        sunday: [{ start: '00:00', end: '06:00' }],
        monday: [
          { start: '08:00', end: '12:00' },
          { start: '13:00', end: '18:30' },
        ],
      },
      overrides: {},
    };
    const held = (startsAt: string, minutes: number, extra: Partial<Reservation> = {}): Reservation => ({
      sessionId: startsAt,
      serviceId: 'tennis',
      clientId: 'c1',
      startsAt,
      endsAt: new Date(Date.parse(startsAt) + minutes * 60_000).toISOString(),
      ...extra,
    });
    const reservations = [
      held('2027-03-29T07:00:00.000Z', 60),
      held('2027-03-29T12:30:00.000Z', 30, { travelMinutes: 30 }),
      held('2027-10-31T00:00:00.000Z', 60, { serviceId: 'group' }),
    ];
    const setups: [string, SlotRules, number][] = [
      ['plain', rules(), 0],
      ['30-minute steps, own travel', rules({ minutesDuration: 30 }), 45],
      ['group of 2', rules({ serviceId: 'group', groupSession: true, maxGroupSize: 2 }), 0],
      ['notice and a short window', rules({ minimumNoticeHours: 30, bookingWindowDays: 2 }), 0],
    ];
    const days: [string, Date][] = [
      ['2027-03-28', new Date('2027-03-27T00:00:00Z')], // spring forward (Sunday night)
      ['2027-03-29', new Date('2027-03-28T12:00:00Z')],
      ['2027-10-31', new Date('2027-10-30T00:00:00Z')], // autumn fold
    ];
    let checked = 0;
    for (const [name, r, travel] of setups)
      for (const [day, now] of days) {
        const all = freeSlots(schedule, reservations, r, day, day, now, travel);
        for (let m = 0; m < 24 * 60; m += 15) {
          const label = `${day}T${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
          const one = freeSlots(schedule, reservations, r, day, day, now, travel, label);
          expect([name, label, one]).toEqual([name, label, all.filter((f) => f.slot.slice(0, 16) === label)]);
          checked++;
        }
      }
    expect(checked).toBe(4 * 3 * 96);
    // Labels that name no minute of the day, or another day, match no slot (08:60 is not 09:00).
    const monday = '2027-03-29';
    const now = new Date('2027-03-28T12:00:00Z');
    expect(freeSlots(schedule, [], rules(), monday, monday, now, 0, `${monday}T09:00`)).toHaveLength(1);
    for (const label of [
      `${monday}T08:60`,
      `${monday}T9:00`,
      `${monday}T24:00`,
      `${monday}T09:00:00`,
      '2027-03-30T09:00',
    ])
      expect([label, freeSlots(schedule, [], rules(), monday, monday, now, 0, label)]).toEqual([label, []]);
  });
});
