import { isLeft, isRight, type Either } from 'fp-ts/Either';
import {
  calendar,
  MIN_PAYMENT_MINUTES,
  type BookableService,
  type CalendarCommand,
  type ClientOrder,
} from '../../commands/calendar/decider';
import type { CalendarEvent, Schedule, SlotsReserved } from '../../commands/calendar/events';
import type { SlotRules } from '../../commands/calendar/slots';
import type { DomainError } from '../../src/decider';
import { bookableService, bookingTerms, clientOrderOf, slotRules } from '../support/marketplace';

const coachId = '1a2b3c4d-0000-4000-8000-000000000001';
const alice = 'c1000000-0000-4000-8000-000000000001';
const bob = 'c1000000-0000-4000-8000-000000000002';
const carol = 'c1000000-0000-4000-8000-000000000003';
const dave = 'c1000000-0000-4000-8000-000000000004';
const tennis = '5e000000-0000-4000-8000-000000000001';
const yoga = '5e000000-0000-4000-8000-000000000002';

// Tuesday 1 December 2026, 08:00 UTC = 09:00 in Berlin (UTC+1 in winter).
const NOW = '2026-12-01T08:00:00.000Z';
const hours = [{ start: '09:00', end: '17:00' }];
const schedule: Schedule = {
  timezone: 'Europe/Berlin',
  weekly: { monday: hours, tuesday: hours, wednesday: hours, thursday: hours, friday: hours },
  overrides: {},
};
const scheduleSet = (s: Schedule = schedule): CalendarEvent => ({
  type: 'ScheduleSet',
  data: { coachId, schedule: s, setAt: '2026-11-01T00:00:00.000Z' },
});

const rules = (over: Partial<SlotRules> = {}): SlotRules =>
  slotRules({ serviceId: tennis, bookingWindowDays: 60, ...over });
/** The approved service a test books, shaped by slot-rule overrides (as its coach would have set them). */
const serviceWith = (over: Partial<SlotRules> = {}, numberOfSessions = 1): BookableService =>
  bookableService(rules(over), coachId, numberOfSessions);
// The reservation's terms without the deadline, which the decider computes.
const { paymentExpiresAt: _deadline, ...terms } = bookingTerms({ paymentId: 'pay-1', expiresInDays: 3 });
const order: ClientOrder = clientOrderOf(terms);

let ids = 0;
const reserve = (
  slots: string[],
  opts: {
    clientId?: string;
    groupId?: string;
    rules?: Partial<SlotRules>;
    service?: Partial<BookableService>;
    now?: string;
  } = {},
): CalendarCommand => ({
  type: 'ReserveSlots',
  service: { ...serviceWith(opts.rules, Math.max(1, slots.length)), ...opts.service },
  groupId: opts.groupId ?? `g-${++ids}`,
  clientId: opts.clientId ?? alice,
  slots,
  sessionIds: slots.map((_, i) => `${opts.groupId ?? 'g'}-s${i}-${++ids}`),
  order,
  paymentWindowHours: 24,
  now: opts.now ?? NOW,
});

/** given past events, when a command, then new events (or a refusal). */
const given = (events: CalendarEvent[]) => ({
  when: (command: CalendarCommand) =>
    calendar.decide(command, events.reduce(calendar.evolve, calendar.initialState())),
});
/** Runs commands one after another, keeping the events each decides; returns all events. */
const history = (start: CalendarEvent[], ...commands: CalendarCommand[]): CalendarEvent[] =>
  commands.reduce((events, c) => {
    const r = given(events).when(c);
    if (!isRight(r)) throw new Error(`setup command refused: ${JSON.stringify(r.left)}`);
    return [...events, ...r.right];
  }, start);

const refusal = (r: Either<DomainError, CalendarEvent[]>) => (isLeft(r) ? r.left.code : 'accepted');
const reservedOf = (r: Either<DomainError, CalendarEvent[]>) => {
  if (!isRight(r)) throw new Error(`refused: ${JSON.stringify(r.left)}`);
  expect(r.right).toHaveLength(1);
  expect(r.right[0]!.type).toBe('SlotsReserved');
  return (r.right[0] as SlotsReserved).data;
};

describe('calendar decider: SetSchedule', () => {
  it('records the schedule as given', () => {
    const result = given([]).when({ type: 'SetSchedule', coachId, schedule, now: NOW });
    expect(result).toEqual({
      _tag: 'Right',
      right: [{ type: 'ScheduleSet', data: { coachId, schedule, setAt: NOW } }],
    });
  });

  it("leaves out overrides of days before yesterday in the schedule's zone, which can offer nothing", () => {
    const off: Schedule['overrides'][string] = [];
    // 08:00 UTC on 1 December is 22:00 on 30 November in Honolulu: its yesterday is 29 November.
    for (const [timezone, kept] of [
      ['Europe/Berlin', ['2026-11-30', '2026-12-01', '2027-01-01']],
      ['Pacific/Honolulu', ['2026-11-29', '2026-11-30', '2026-12-01', '2027-01-01']],
    ] as const) {
      const given_ = { ...schedule, timezone, overrides: {} as Schedule['overrides'] };
      for (const d of ['2025-12-31', '2026-11-28', '2026-11-29', '2026-11-30', '2026-12-01', '2027-01-01'])
        given_.overrides[d] = off;
      const result = given([]).when({ type: 'SetSchedule', coachId, schedule: given_, now: NOW });
      const set = isRight(result) && (result.right[0]!.data as { schedule: Schedule }).schedule;
      expect([timezone, Object.keys(set ? set.overrides : {})]).toEqual([timezone, kept]);
    }
  });

  it('replaces the previous schedule (evolve keeps the last one)', () => {
    const later: Schedule = { ...schedule, timezone: 'Europe/Lisbon' };
    const state = [scheduleSet(), scheduleSet(later)].reduce(calendar.evolve, calendar.initialState());
    expect(state.schedule).toEqual(later);
  });
});

describe('calendar decider: ReserveSlots', () => {
  it('holds a free slot with its UTC instants and the local label', () => {
    const command = reserve(['2026-12-02T10:00:00'], { groupId: 'g1' });
    const result = given([scheduleSet()]).when(command);
    expect(result).toEqual({
      _tag: 'Right',
      right: [
        {
          type: 'SlotsReserved',
          data: {
            coachId,
            groupId: 'g1',
            serviceId: tennis,
            clientId: alice,
            groupSession: false,
            maxGroupSize: 1,
            timezone: 'Europe/Berlin',
            sessions: [
              {
                sessionId: command.type === 'ReserveSlots' ? command.sessionIds[0] : '',
                startsAt: '2026-12-02T09:00:00.000Z',
                endsAt: '2026-12-02T10:00:00.000Z',
                slot: '2026-12-02T10:00:00',
              },
            ],
            terms: { ...terms, paymentExpiresAt: '2026-12-02T08:00:00.000Z' },
            reservedAt: NOW,
          },
        },
      ],
    });
  });

  it('accepts a label without seconds and answers the canonical local label', () => {
    const data = reservedOf(given([scheduleSet()]).when(reserve(['2026-12-02T10:00'])));
    expect(data.sessions[0]!.slot).toBe('2026-12-02T10:00:00');
  });

  it('refuses when the coach has no schedule', () => {
    expect(refusal(given([]).when(reserve(['2026-12-02T10:00:00'])))).toBe('slot_unavailable');
  });

  it.each([
    ['after the hours', '2026-12-02T17:00:00'],
    ['before the hours', '2026-12-02T08:00:00'],
    ['on a weekday without hours (Saturday)', '2026-12-05T10:00:00'],
    ['off the grid (10:30 for 60-minute steps from 09:00)', '2026-12-02T10:30:00'],
    ['in the past', '2026-11-30T10:00:00'],
  ])('refuses a slot %s', (_, slot) => {
    expect(refusal(given([scheduleSet()]).when(reserve([slot])))).toBe('slot_unavailable');
  });

  it('refuses a slot of today that has already begun, and offers the next one', () => {
    const later = '2026-12-01T08:30:00.000Z'; // 09:30 in Berlin
    expect(refusal(given([scheduleSet()]).when(reserve(['2026-12-01T09:00:00'], { now: later })))).toBe(
      'slot_unavailable',
    );
    expect(refusal(given([scheduleSet()]).when(reserve(['2026-12-01T10:00:00'], { now: later })))).toBe(
      'accepted',
    );
  });

  it('refuses a wall time that does not exist (Berlin spring gap, 28 March 2027 02:00-03:00)', () => {
    const night = scheduleSet({
      ...schedule,
      overrides: { '2027-03-28': [{ start: '01:00', end: '05:00' }] },
    });
    const at = (slot: string) => reserve([slot], { now: '2027-03-27T12:00:00.000Z' });
    const result = given([night]).when(at('2027-03-28T02:00:00'));
    expect(refusal(result)).toBe('slot_unavailable');
    expect(isLeft(result) && result.left.message).toMatch(/does not exist/);
    // 01:00 CET is 00:00Z; 03:00 CEST is 01:00Z: one real hour apart.
    expect(reservedOf(given([night]).when(at('2027-03-28T01:00:00'))).sessions[0]!.startsAt).toBe(
      '2027-03-28T00:00:00.000Z',
    );
    expect(reservedOf(given([night]).when(at('2027-03-28T03:00:00'))).sessions[0]!.startsAt).toBe(
      '2027-03-28T01:00:00.000Z',
    );
  });

  it('holds the first occurrence of a wall time repeated in the autumn fold (31 October 2027)', () => {
    const night = scheduleSet({
      ...schedule,
      overrides: { '2027-10-31': [{ start: '01:00', end: '05:00' }] },
    });
    const result = given([night]).when(reserve(['2027-10-31T02:00:00'], { now: '2027-10-30T12:00:00.000Z' }));
    expect(reservedOf(result).sessions[0]).toMatchObject({
      slot: '2027-10-31T02:00:00',
      startsAt: '2027-10-31T00:00:00.000Z',
      endsAt: '2027-10-31T01:00:00.000Z',
    });
  });

  it('offers the last slot that ends exactly at the end of the hours', () => {
    expect(refusal(given([scheduleSet()]).when(reserve(['2026-12-02T16:00:00'])))).toBe('accepted');
  });

  it('refuses a slot inside minimumNoticeHours, and accepts it without the notice', () => {
    // 15:00 Berlin = 14:00Z, six hours from now.
    const slot = '2026-12-01T15:00:00';
    expect(refusal(given([scheduleSet()]).when(reserve([slot], { rules: { minimumNoticeHours: 24 } })))).toBe(
      'slot_unavailable',
    );
    expect(refusal(given([scheduleSet()]).when(reserve([slot], { rules: { minimumNoticeHours: 6 } })))).toBe(
      'accepted',
    );
  });

  it('refuses a slot beyond bookingWindowDays', () => {
    const slot = '2027-01-15T10:00:00'; // a Friday, 45 days ahead
    expect(refusal(given([scheduleSet()]).when(reserve([slot], { rules: { bookingWindowDays: 30 } })))).toBe(
      'slot_unavailable',
    );
    expect(refusal(given([scheduleSet()]).when(reserve([slot], { rules: { bookingWindowDays: 60 } })))).toBe(
      'accepted',
    );
  });

  it("refuses a slot overlapping another service's hold of the same coach", () => {
    const past = history([scheduleSet()], reserve(['2026-12-02T10:00:00'], { clientId: bob }));
    // A 30-minute yoga slot at 10:30 lies inside the tennis hour 10:00-11:00.
    const yogaAt = (slot: string) => reserve([slot], { rules: { serviceId: yoga, minutesDuration: 30 } });
    expect(refusal(given(past).when(yogaAt('2026-12-02T10:30:00')))).toBe('slot_unavailable');
    expect(refusal(given(past).when(yogaAt('2026-12-02T10:00:00')))).toBe('slot_unavailable');
    expect(refusal(given(past).when(yogaAt('2026-12-02T11:00:00')))).toBe('accepted');
  });

  it('refuses a slot held by someone else for the same one-to-one service', () => {
    const past = history([scheduleSet()], reserve(['2026-12-02T10:00:00'], { clientId: bob }));
    expect(refusal(given(past).when(reserve(['2026-12-02T10:00:00'])))).toBe('slot_unavailable');
  });

  it('refuses a date override that is a day off', () => {
    const dayOff = scheduleSet({ ...schedule, overrides: { '2026-12-02': [] } });
    expect(refusal(given([dayOff]).when(reserve(['2026-12-02T10:00:00'])))).toBe('slot_unavailable');
    // The override is for that date only.
    expect(refusal(given([dayOff]).when(reserve(['2026-12-03T10:00:00'])))).toBe('accepted');
  });

  it('accepts a slot in the extra hours of a date override, and only there', () => {
    const extra = scheduleSet({
      ...schedule,
      overrides: { '2026-12-05': [{ start: '10:00', end: '12:00' }] },
    });
    expect(refusal(given([extra]).when(reserve(['2026-12-05T11:00:00'])))).toBe('accepted');
    expect(refusal(given([extra]).when(reserve(['2026-12-05T12:00:00'])))).toBe('slot_unavailable');
    // An override replaces the weekday's hours: 09:00 on an overridden weekday is gone.
    const shorter = scheduleSet({
      ...schedule,
      overrides: { '2026-12-02': [{ start: '13:00', end: '15:00' }] },
    });
    expect(refusal(given([shorter]).when(reserve(['2026-12-02T09:00:00'])))).toBe('slot_unavailable');
    expect(refusal(given([shorter]).when(reserve(['2026-12-02T14:00:00'])))).toBe('accepted');
  });

  it('holds a package of several slots in one event', () => {
    const data = reservedOf(
      given([scheduleSet()]).when(
        reserve(['2026-12-02T10:00:00', '2026-12-03T10:00:00', '2026-12-04T15:00:00']),
      ),
    );
    expect(data.sessions.map((s) => [s.slot, s.startsAt])).toEqual([
      ['2026-12-02T10:00:00', '2026-12-02T09:00:00.000Z'],
      ['2026-12-03T10:00:00', '2026-12-03T09:00:00.000Z'],
      ['2026-12-04T15:00:00', '2026-12-04T14:00:00.000Z'],
    ]);
  });

  it('refuses a package that overlaps itself, one-to-one or group', () => {
    const twice = ['2026-12-02T10:00:00', '2026-12-02T10:00'];
    expect(refusal(given([scheduleSet()]).when(reserve(twice)))).toBe('slot_unavailable');
    const group = { groupSession: true, maxGroupSize: 5 };
    expect(refusal(given([scheduleSet()]).when(reserve(twice, { rules: group })))).toBe('slot_unavailable');
  });

  it('refuses the whole package when one of its slots is taken (no partial hold)', () => {
    const past = history([scheduleSet()], reserve(['2026-12-03T10:00:00'], { clientId: bob }));
    const result = given(past).when(reserve(['2026-12-02T10:00:00', '2026-12-03T10:00:00']));
    expect(refusal(result)).toBe('slot_unavailable');
  });

  describe('group service', () => {
    const group = { groupSession: true, maxGroupSize: 3 };
    const slot = '2026-12-02T10:00:00';

    it('seats clients up to maxGroupSize, then refuses', () => {
      const past = history(
        [scheduleSet()],
        reserve([slot], { clientId: alice, rules: group }),
        reserve([slot], { clientId: bob, rules: group }),
      );
      expect(refusal(given(past).when(reserve([slot], { clientId: carol, rules: group })))).toBe('accepted');
      const full = history(past, reserve([slot], { clientId: carol, rules: group }));
      expect(refusal(given(full).when(reserve([slot], { clientId: dave, rules: group })))).toBe(
        'slot_unavailable',
      );
    });

    it('refuses the same client twice in one group slot', () => {
      const past = history([scheduleSet()], reserve([slot], { clientId: alice, rules: group }));
      const again = given(past).when(reserve([slot], { clientId: alice, rules: group }));
      expect(refusal(again)).toBe('slot_unavailable');
      expect(isLeft(again) && again.left.message).toMatch(/already hold/);
    });

    it('records the group terms on the hold', () => {
      const data = reservedOf(given([scheduleSet()]).when(reserve([slot], { rules: group })));
      expect(data).toMatchObject({ groupSession: true, maxGroupSize: 3 });
    });

    it('does not share seats with another service: a group hold blocks a one-to-one service', () => {
      const past = history([scheduleSet()], reserve([slot], { clientId: alice, rules: group }));
      expect(refusal(given(past).when(reserve([slot], { clientId: bob, rules: { serviceId: yoga } })))).toBe(
        'slot_unavailable',
      );
    });
  });

  describe('paymentExpiresAt', () => {
    it('is now + paymentWindowHours when the first session is far away', () => {
      const data = reservedOf(given([scheduleSet()]).when(reserve(['2026-12-10T10:00:00'])));
      expect(data.terms.paymentExpiresAt).toBe('2026-12-02T08:00:00.000Z');
    });

    it('is one hour before the first session when that comes sooner', () => {
      // The package's earliest slot is second in the list: 12:00 Berlin today = 11:00Z.
      const data = reservedOf(
        given([scheduleSet()]).when(
          reserve(['2026-12-10T10:00:00', '2026-12-01T12:00:00'], { service: { expiresInDays: 30 } }),
        ),
      );
      expect(data.terms.paymentExpiresAt).toBe('2026-12-01T10:00:00.000Z');
    });

    it('leaves at least MIN_PAYMENT_MINUTES to pay for a slot within the hour', () => {
      // 09:30 Berlin with 30-minute steps starts 08:30Z, half an hour from now.
      const data = reservedOf(
        given([scheduleSet()]).when(
          reserve(['2026-12-01T09:30:00'], { rules: { minutesDuration: 30, minimumNoticeHours: 0 } }),
        ),
      );
      expect(data.terms.paymentExpiresAt).toBe(
        new Date(Date.parse(NOW) + MIN_PAYMENT_MINUTES * 60_000).toISOString(),
      );
    });

    it('never lets the payment deadline pass the session start', () => {
      // 09:00 Berlin is 08:00Z today, ten minutes after a clock at 07:50Z.
      const data = reservedOf(
        given([scheduleSet()]).when(
          reserve(['2026-12-01T09:00:00'], {
            now: '2026-12-01T07:50:00.000Z',
            rules: { minimumNoticeHours: 0 },
          }),
        ),
      );
      expect(data.terms.paymentExpiresAt).toBe('2026-12-01T08:00:00.000Z');
    });

    it("is the first session's start for cash, paid to the coach there", () => {
      const cash = {
        ...reserve(['2026-12-10T10:00:00', '2026-12-08T10:00:00'], { service: { expiresInDays: 30 } }),
        order: { ...order, method: 'cash', methodId: 2 },
      };
      const data = reservedOf(given([scheduleSet()]).when(cash as CalendarCommand));
      expect(data.terms.paymentExpiresAt).toBe('2026-12-08T09:00:00.000Z');
    });
  });
});

describe('calendar decider: ReserveSlots checks the service as folded from its stream', () => {
  const slot = '2026-12-02T10:00:00';

  it('refuses a service that is rejected or in review as if it did not exist', () => {
    for (const status of ['rejected', 'review'] as const)
      expect(refusal(given([scheduleSet()]).when(reserve([slot], { service: { status } })))).toBe(
        'service_not_found',
      );
  });

  it("refuses the service's own coach", () => {
    expect(refusal(given([scheduleSet()]).when(reserve([slot], { clientId: coachId })))).toBe('forbidden');
  });

  it('refuses more slots than the service has sessions', () => {
    const two = ['2026-12-02T10:00:00', '2026-12-02T12:00:00'];
    expect(refusal(given([scheduleSet()]).when(reserve(two, { service: { numberOfSessions: 1 } })))).toBe(
      'validation',
    );
  });

  it("writes the service's current terms into the hold (price, name, duration, cancellation)", () => {
    const data = reservedOf(
      given([scheduleSet()]).when(
        reserve([slot], {
          service: {
            price: 55.5,
            name: 'Tennis advanced',
            sessionCancellationHours: 48,
            priceCurrency: 'CHF',
          },
        }),
      ),
    );
    expect(data.terms).toMatchObject({
      serviceName: 'Tennis advanced',
      price: 55.5,
      currency: 'CHF',
      cancellationHours: 48,
      minutesDuration: 60,
      paymentId: order.paymentId,
    });
  });

  it("applies the service's current group size: reduced to one seat, the second client is refused", () => {
    const past = history(
      [scheduleSet()],
      reserve([slot], { clientId: alice, rules: { groupSession: true, maxGroupSize: 3 } }),
    );
    expect(
      refusal(
        given(past).when(reserve([slot], { clientId: bob, rules: { groupSession: true, maxGroupSize: 3 } })),
      ),
    ).toBe('accepted');
    expect(
      refusal(
        given(past).when(reserve([slot], { clientId: bob, rules: { groupSession: true, maxGroupSize: 1 } })),
      ),
    ).toBe('slot_unavailable');
  });

  it('keeps a one-on-one session private after its service became a group one', () => {
    const past = history([scheduleSet()], reserve([slot], { clientId: alice }));
    const asGroup = { groupSession: true, maxGroupSize: 3 };
    expect(refusal(given(past).when(reserve([slot], { clientId: bob, rules: asGroup })))).toBe(
      'slot_unavailable',
    );
  });
});

describe('calendar decider: ReleaseSlots', () => {
  const setup = () => {
    const a = reserve(['2026-12-02T10:00:00', '2026-12-03T10:00:00'], { groupId: 'ga' });
    const b = reserve(['2026-12-02T12:00:00'], { groupId: 'gb', clientId: bob });
    const past = history([scheduleSet()], a, b);
    const ids = (c: CalendarCommand) => (c.type === 'ReserveSlots' ? c.sessionIds : []);
    return { past, aIds: ids(a), bIds: ids(b) };
  };
  const release = (groupId: string, sessionIds: string[]): CalendarCommand => ({
    type: 'ReleaseSlots',
    coachId,
    groupId,
    sessionIds,
    reason: 'canceled',
    now: NOW,
  });

  it("releases only this group's held sessions", () => {
    const { past, aIds, bIds } = setup();
    const result = given(past).when(release('ga', [aIds[0]!, bIds[0]!, 'unknown-session']));
    expect(result).toEqual({
      _tag: 'Right',
      right: [
        {
          type: 'SlotsReleased',
          data: { coachId, groupId: 'ga', sessionIds: [aIds[0]], reason: 'canceled', releasedAt: NOW },
        },
      ],
    });
  });

  it('decides nothing when the sessions are already released', () => {
    const { past, aIds } = setup();
    const released = history(past, release('ga', [aIds[0]!]));
    expect(given(released).when(release('ga', [aIds[0]!]))).toEqual({ _tag: 'Right', right: [] });
  });

  it('decides nothing for a group that holds nothing', () => {
    expect(given([scheduleSet()]).when(release('nobody', ['x']))).toEqual({ _tag: 'Right', right: [] });
  });

  it('frees the slot for a new reservation once released, and keeps the other holds', () => {
    const { past, aIds } = setup();
    const slot = '2026-12-02T10:00:00';
    expect(refusal(given(past).when(reserve([slot], { clientId: carol })))).toBe('slot_unavailable');
    const released = history(past, release('ga', [aIds[0]!]));
    expect(refusal(given(released).when(reserve([slot], { clientId: carol })))).toBe('accepted');
    // The group's other session and the other group's session stay held.
    expect(refusal(given(released).when(reserve(['2026-12-03T10:00:00'], { clientId: carol })))).toBe(
      'slot_unavailable',
    );
    expect(refusal(given(released).when(reserve(['2026-12-02T12:00:00'], { clientId: carol })))).toBe(
      'slot_unavailable',
    );
  });
});

describe('calendar decider: a package after the coach changed zone', () => {
  // Booked in Berlin on 1 December with 3 days to use: its expirationDate is 04/12/2026, shown in the
  // booking's zone (Berlin), so the package is good until 2026-12-04T22:59:59.999Z.
  const tokyo: Schedule = {
    timezone: 'Asia/Tokyo',
    weekly: Object.fromEntries(
      ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'].map((d) => [
        d,
        [{ start: '00:00', end: '24:00' }],
      ]),
    ),
    overrides: {},
  };
  const topUp = (slot: string, now: string): CalendarCommand => ({
    ...(reserve([slot], { groupId: 'pkg-zone', now, service: { numberOfSessions: 2 } }) as Extract<
      CalendarCommand,
      { type: 'ReserveSlots' }
    >),
    package: { groupId: 'pkg-zone', paymentOpen: true, paymentUnpaid: false, paymentExpirable: false },
  });
  const booked = () =>
    history(
      [scheduleSet()],
      reserve(['2026-12-02T10:00:00'], { groupId: 'pkg-zone', service: { numberOfSessions: 2 } }),
      // The coach moves to Tokyo, where 4 December ends 8 hours sooner.
    ).concat([scheduleSet(tokyo)]);

  it('expires at the end of its expirationDate in the zone it was booked in, as shown', () => {
    // 17:00 in Berlin on 4 December (already 5 December in Tokyo): the package's last day is not over.
    const r = given(booked()).when(topUp('2026-12-05T03:00:00', '2026-12-04T16:00:00.000Z'));
    expect(refusal(r)).toBe('accepted');
    expect(reservedOf(r).sessions[0]!.startsAt).toBe('2026-12-04T18:00:00.000Z');
    // A slot after that day's end in Berlin is after the package's expiration date.
    expect(refusal(given(booked()).when(topUp('2026-12-05T08:00:00', '2026-12-04T16:00:00.000Z')))).toBe(
      'package_expired',
    );
    // And once that day is over in Berlin, nothing more is booked on it.
    expect(refusal(given(booked()).when(topUp('2026-12-05T09:00:00', '2026-12-04T23:00:00.000Z')))).toBe(
      'package_expired',
    );
  });
});

describe('calendar decider: MoveSlot', () => {
  // Every 30 minutes from 09:00: a 60-minute session can move by half an hour into its own time.
  // Service.slots every 30 minutes from 09:00: a 60-minute session can move by half an hour into its own time.
  const every30 = Array.from({ length: 15 }, (_, i) => {
    const m = 540 + 30 * i;
    return `${String(Math.floor(m / 60)).padStart(2, '0')}:${m % 60 ? '30' : '00'}`;
  });
  const service = { ...serviceWith(), slots: every30 };
  const base = history([scheduleSet()], reserve(['2026-12-02T10:00'], { groupId: 'g-move', service }));
  const held = (base[1] as SlotsReserved).data;
  const sessionId = held.sessions[0]!.sessionId;
  const from = {
    startsAt: held.sessions[0]!.startsAt,
    endsAt: held.sessions[0]!.endsAt,
    slot: held.sessions[0]!.slot,
  };
  const move = (slot: string, over: Record<string, unknown> = {}): CalendarCommand => ({
    type: 'MoveSlot',
    service,
    groupId: 'g-move',
    sessionId,
    by: 'client',
    from,
    slot,
    minutesDuration: 60,
    paymentExpirable: false,
    moveId: 'move-1',
    now: NOW,
    ...over,
  });

  it('moves the hold in one event: the old time freed, the new one taken', () => {
    const r = given(base).when(move('2026-12-02T14:00'));
    expect(r).toEqual({
      _tag: 'Right',
      right: [
        {
          type: 'SlotMoved',
          data: {
            coachId,
            groupId: 'g-move',
            sessionId,
            serviceId: tennis,
            clientId: alice,
            from,
            to: {
              startsAt: '2026-12-02T13:00:00.000Z',
              endsAt: '2026-12-02T14:00:00.000Z',
              slot: '2026-12-02T14:00:00',
            },
            by: 'client',
            moveId: 'move-1',
            movedAt: NOW,
          },
        },
      ],
    });
    const after = [...base, ...(isRight(r) ? r.right : [])];
    // The old slot is free for another client; the new one is not.
    expect(refusal(given(after).when(reserve(['2026-12-02T10:00'], { clientId: bob, service })))).toBe(
      'accepted',
    );
    expect(refusal(given(after).when(reserve(['2026-12-02T14:00'], { clientId: bob, service })))).toBe(
      'slot_unavailable',
    );
  });

  it('its own hold does not count against it: 30 minutes later, overlapping itself, is free', () => {
    expect(refusal(given(base).when(move('2026-12-02T10:30')))).toBe('accepted');
  });

  it('refuses a taken slot, outside the hours, inside the notice, the same time, or a hold moved since', () => {
    const busy = history(base, reserve(['2026-12-02T14:00'], { clientId: bob, service }));
    expect(refusal(given(busy).when(move('2026-12-02T14:00')))).toBe('slot_unavailable');
    expect(refusal(given(busy).when(move('2026-12-02T13:30')))).toBe('slot_unavailable');
    expect(refusal(given(base).when(move('2026-12-02T18:00')))).toBe('slot_unavailable');
    expect(refusal(given(base).when(move('2026-11-30T10:00')))).toBe('slot_unavailable');
    expect(refusal(given(base).when(move('2026-12-02T10:00')))).toBe('invalid_transition');
    const stale = { ...from, startsAt: '2026-12-02T08:00:00.000Z' };
    expect(refusal(given(base).when(move('2026-12-02T14:00', { from: stale })))).toBe('conflict');
    expect(refusal(given(base).when(move('2026-12-02T14:00', { sessionId: 'nope' })))).toBe(
      'invalid_transition',
    );
  });

  it('an unpaid booking is not moved to before one hour after its payment deadline', () => {
    // Booked at 08:00 UTC for 09:00 UTC on 2 December: its deadline is 08:00 UTC that day.
    const early = move('2026-12-02T09:30', { paymentExpirable: true });
    expect(refusal(given(base).when(early))).toBe('slot_unavailable');
    expect(refusal(given(base).when(move('2026-12-02T09:30')))).toBe('accepted');
  });

  it("a package's session is not moved past the package's expiration date", () => {
    // Bought on 1 December with 3 days: its sessions take place by 4 December (Berlin).
    const pkgService = { ...service, numberOfSessions: 3, expiresInDays: 3 };
    const pkgBase = history(
      [scheduleSet()],
      reserve(['2026-12-02T10:00', '2026-12-03T10:00'], { groupId: 'g-pkg', service: pkgService }),
    );
    const pkgHeld = (pkgBase[1] as SlotsReserved).data.sessions[0]!;
    const pkgMove = (slot: string) =>
      move(slot, {
        groupId: 'g-pkg',
        sessionId: pkgHeld.sessionId,
        from: { startsAt: pkgHeld.startsAt, endsAt: pkgHeld.endsAt, slot: pkgHeld.slot },
      });
    expect(refusal(given(pkgBase).when(pkgMove('2026-12-04T10:00')))).toBe('accepted');
    expect(refusal(given(pkgBase).when(pkgMove('2026-12-07T10:00')))).toBe('package_expired');
  });

  it('evolve moves the hold: a second move starts from the new time', () => {
    const r = given(base).when(move('2026-12-02T14:00'));
    const after = [...base, ...(isRight(r) ? r.right : [])];
    expect(refusal(given(after).when(move('2026-12-02T15:00')))).toBe('conflict');
    const at14 = {
      startsAt: '2026-12-02T13:00:00.000Z',
      endsAt: '2026-12-02T14:00:00.000Z',
      slot: '2026-12-02T14:00:00',
    };
    expect(refusal(given(after).when(move('2026-12-02T15:00', { from: at14, moveId: 'move-2' })))).toBe(
      'accepted',
    );
  });
});
