import { isRight } from 'fp-ts/Either';
import { calendar, type CalendarCommand } from '../../commands/calendar/decider';
import type { CalendarEvent, Schedule, SlotsReserved } from '../../commands/calendar/events';
import { freeSlots, startTimesOf, type SlotRules } from '../../commands/calendar/slots';
import { greatCircleKm, tooFarMessage, travelMinutes } from '../../commands/calendar/travel';
import { fold } from '../../src/decider';
import { bookingTerms } from '../support/marketplace';

const BERLIN = { lat: 52.5219, lng: 13.4132 };
const POTSDAM = { lat: 52.3906, lng: 13.0645 };

describe('travel rule', () => {
  it('is haversine km × 1.3 at 30 km/h, rounded up to 5 minutes; 0 without a place', () => {
    expect(greatCircleKm(BERLIN, POTSDAM)).toBeCloseTo(27.77, 2);
    expect(travelMinutes(BERLIN, POTSDAM)).toBe(75);
    expect(travelMinutes(BERLIN, BERLIN)).toBe(0);
    // 1 km: 2.6 minutes, rounded up to 5.
    expect(travelMinutes({ lat: 0, lng: 0 }, { lat: 0, lng: 1 / 111.195 })).toBe(5);
    expect(travelMinutes(null, POTSDAM)).toBe(0);
    expect(travelMinutes(BERLIN, null)).toBe(0);
  });

  it('takes a trip of exactly a day (1440 minutes) each way, and refuses the next 5 minutes', () => {
    // 1440 minutes at 30 km/h over the 1.3 road factor: 553.85 km, 4.9804 degrees along the equator.
    const degrees = (km: number) => (km / (2 * Math.PI * 6371.0088)) * 360;
    const day = travelMinutes({ lat: 0, lng: 0 }, { lat: 0, lng: degrees(553.8) });
    expect(day).toBe(1440);
    expect(tooFarMessage(day)).toBeNull();
    const more = travelMinutes({ lat: 0, lng: 0 }, { lat: 0, lng: degrees(554) });
    expect(more).toBe(1445);
    expect(tooFarMessage(more)).toMatch(/1445 minutes .* at most 1440/);
  });
});

const schedule: Schedule = {
  timezone: 'UTC',
  weekly: { wednesday: [{ start: '09:00', end: '17:00' }], thursday: [{ start: '09:00', end: '17:00' }] },
  overrides: {},
};
const rules = (over: Partial<SlotRules> = {}): SlotRules => ({
  serviceId: 's',
  minutesDuration: 60,
  groupSession: false,
  maxGroupSize: 1,
  minimumNoticeHours: 0,
  bookingWindowDays: 60,
  startTimes: null,
  ...over,
});
const NOW = new Date('2026-12-01T00:00:00Z');
const labels = (slots: { slot: string }[]) => slots.map((s) => s.slot.slice(11, 16));

describe('Service.slots as start times', () => {
  it('reads HH:mm (every day) and "<weekday> HH:mm"; nothing parseable means no restriction', () => {
    const m = startTimesOf(['09:30', 'Wednesday 14:00', ' monday 08:00 ', 'bogus']);
    expect(m?.get(3)).toEqual([570, 840]);
    expect(m?.get(1)).toEqual([480, 570]);
    expect(m?.get(4)).toEqual([570]);
    expect(startTimesOf([])).toBeNull();
    expect(startTimesOf(['bogus'])).toBeNull();
  });

  it('offers only those start times where the session fits the day’s hours', () => {
    const r = rules({ startTimes: startTimesOf(['08:00', '09:30', '16:30', 'wednesday 14:00']) });
    expect(labels(freeSlots(schedule, [], r, '2026-12-02', '2026-12-02', NOW))).toEqual(['09:30', '14:00']);
    expect(labels(freeSlots(schedule, [], r, '2026-12-03', '2026-12-03', NOW))).toEqual(['09:30']);
  });
});

describe('travel on the calendar', () => {
  const away = {
    sessionId: 'x',
    serviceId: 'other',
    clientId: 'c',
    startsAt: '2026-12-02T12:00:00.000Z',
    endsAt: '2026-12-02T13:00:00.000Z',
    travelMinutes: 75,
  };
  it("blocks a reservation's travel before and after it, and a candidate's own travel", () => {
    const day = (travel: number) =>
      labels(freeSlots(schedule, [away], rules(), '2026-12-02', '2026-12-02', NOW, travel));
    expect(day(0)).toEqual(['09:00', '15:00', '16:00']);
    expect(day(75)).toEqual(['16:00']);
    expect(
      labels(
        freeSlots(schedule, [{ ...away, travelMinutes: 0 }], rules(), '2026-12-02', '2026-12-02', NOW, 60),
      ),
    ).toEqual(['09:00', '10:00', '14:00', '15:00', '16:00']);
  });

  it('the calendar decider decides with the travel recorded in its events', () => {
    const reserved: SlotsReserved = {
      type: 'SlotsReserved',
      data: {
        coachId: 'coach',
        groupId: 'g1',
        serviceId: 'other',
        clientId: 'c1',
        groupSession: false,
        maxGroupSize: 1,
        timezone: 'UTC',
        sessions: [
          { sessionId: 'x', startsAt: away.startsAt, endsAt: away.endsAt, slot: '2026-12-02T12:00:00' },
        ],
        terms: bookingTerms({ minutesTravel: 75 }),
        reservedAt: NOW.toISOString(),
      },
    };
    const given: CalendarEvent[] = [
      { type: 'ScheduleSet', data: { coachId: 'coach', schedule, setAt: NOW.toISOString() } },
      reserved,
    ];
    const reserve = (slot: string, minutesTravel: number): CalendarCommand => ({
      type: 'ReserveSlots',
      service: {
        id: 's',
        coachId: 'coach',
        status: 'approved',
        name: 'n',
        description: '',
        promo: false,
        price: 10,
        priceCurrency: 'EUR',
        serviceOtherType: '',
        sessionMinutesDuration: 60,
        sessionCancellationHours: 0,
        serviceTypes: [],
        numberOfSessions: 1,
        expiresInDays: 30,
        groupSession: false,
        maxGroupSize: 1,
        slots: [],
        minimumNoticeHours: 0,
        bookingWindowDays: 60,
        createdAt: NOW.toISOString(),
      },
      groupId: 'g2',
      clientId: 'c2',
      slots: [slot],
      sessionIds: ['y'],
      order: { ...bookingTerms({ minutesTravel }), paymentId: 'p2' },
      paymentWindowHours: 24,
      now: NOW.toISOString(),
    });
    const state = fold(calendar, given);
    const refused = calendar.decide(reserve('2026-12-02T14:00:00', 0), state);
    expect(isRight(refused) ? 'booked' : refused.left.code).toBe('slot_unavailable');
    const booked = calendar.decide(reserve('2026-12-02T15:00:00', 0), state);
    expect(isRight(booked) && booked.right[0]!.type).toBe('SlotsReserved');
    const farToo = calendar.decide(reserve('2026-12-02T15:00:00', 75), state);
    expect(isRight(farToo) ? 'booked' : farToo.left.code).toBe('slot_unavailable');
    const later = calendar.decide(reserve('2026-12-02T16:00:00', 75), state);
    expect(isRight(later) && (later.right[0] as SlotsReserved).data.terms.minutesTravel).toBe(75);
  });
});
