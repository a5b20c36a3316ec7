import { randomUUID } from 'node:crypto';
import { type TestSystem } from '../support/system';
import { apiSuite, type Marketplace } from '../support/apiSuite';
import { SERVICE_DEFAULTS } from '../../commands/services/codecs';

// Tuesday 1 December 2026, 08:00 UTC (09:00 in Berlin). Tests move the clock forward when they need to.
let t: TestSystem;
let m: Marketplace;
const clock = apiSuite('2026-12-01T08:00:00Z', (system, market) => {
  t = system;
  m = market;
});

const book = (
  token: string,
  serviceId: string,
  body: Record<string, unknown>,
  headers?: Record<string, string>,
) => t.request('POST', `/api/v1/service/${serviceId}`, { token, body, headers });
const slotsOf = async (serviceId: string, from = '2026-12-02', to = from) =>
  (await t.request('GET', `/api/v1/service/${serviceId}/availability?from_date=${from}&to_date=${to}`)).body;

describe('availability and booking (6, 8, 11)', () => {
  it('shows free slots as local times in the coach zone, and a booked one disappears', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const before = await slotsOf(serviceId);
    expect(before).toMatchObject({ timezone: 'Europe/Berlin', fromDate: '2026-12-02', toDate: '2026-12-02' });
    expect(before.slots.map((s: { slot: string }) => s.slot)).toEqual(
      ['09', '10', '11', '12', '13', '14', '15', '16'].map((h) => `2026-12-02T${h}:00:00`),
    );
    expect(before.slots[1]).toEqual({
      slot: '2026-12-02T10:00:00',
      startsAt: '2026-12-02T09:00:00.000Z',
      endsAt: '2026-12-02T10:00:00.000Z',
      remainingSeats: 1,
    });
    const client = await m.client();
    const res = await book(client.token, serviceId, {
      slots: ['2026-12-02T10:00:00'],
      method: 'card',
      orderDescription: 'backhand',
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      expect.objectContaining({
        id: expect.any(String),
        name: 'Tennis basics',
        state: 'new',
        price: 40,
        currency: 'EUR',
        dayAvailability: 3,
        minutesDuration: 60,
        paymentState: 'awaiting',
        coachId: coach.id,
        clientId: client.id,
        serviceId,
        groupId: expect.any(String),
        paymentId: expect.any(String),
        orderDescription: 'backhand',
        expirationDate: expect.stringMatching(/^\d{2}\/\d{2}\/\d{4}$/),
        paymentExpirationAt: '02/12/2026',
        slot: '2026-12-02T10:00:00',
      }),
    ]);
    const after = await slotsOf(serviceId);
    expect(after.slots.map((s: { slot: string }) => s.slot)).not.toContain('2026-12-02T10:00:00');
    const again = await book((await m.client()).token, serviceId, { slots: ['2026-12-02T10:00:00'] });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: 'slot_unavailable', code: 409 });
  });

  it('refuses slots outside the schedule, in the past, inside the minimum notice or malformed', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    for (const slot of [
      '2026-12-05T10:00:00',
      '2026-11-30T10:00:00',
      '2026-12-01T10:00:00',
      '2026-12-02T10:30:00',
      '2026-12-02T18:00:00',
    ]) {
      const res = await book(client.token, serviceId, { slots: [slot] });
      expect([slot, res.status, res.body.error]).toEqual([slot, 409, 'slot_unavailable']);
    }
    for (const impossible of ['2026-02-30T10:00:00', '2026-12-02T24:00:00', '2026-12-02T10:60'])
      expect((await book(client.token, serviceId, { slots: [impossible] })).status).toBe(422);
    const bad = await book(client.token, serviceId, { slots: ['tomorrow at ten'], method: 'bitcoin' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([
      ['body', 'slots', 0],
      ['body', 'method'],
    ]);
    // A choice names the values it takes.
    expect(bad.body.detail[1]).toEqual({
      loc: ['body', 'method'],
      msg: "Input should be 'card', 'cash' or 'bank_transfer'",
      type: 'enum',
    });
  });

  it('reads a slot to the minute, with or without :00 seconds and zero fractions; other spellings are 422', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 3, price: 90 });
    // The same minute spelled twice is a duplicate: 422, nothing booked.
    for (const slots of [
      ['2026-12-02T10:00:00', '2026-12-02T10:00:00'],
      ['2026-12-02T10:00', '2026-12-02T10:00:00.000'],
    ]) {
      const res = await book((await m.client()).token, serviceId, { slots });
      expect([res.status, res.body.detail?.[0]]).toEqual([
        422,
        {
          loc: ['body', 'slots'],
          msg: 'slots should hold 1 to 100 distinct date-times',
          type: 'invalid_slots',
        },
      ]);
    }
    for (const slot of [
      '2026-12-02t11:00:00',
      '2026-12-02 11:00:00',
      '2026-12-02T11:00:30',
      '2026-12-02T11:00:00Z',
      '2026-12-02T11:00:00+01:00',
    ]) {
      const res = await book((await m.client()).token, serviceId, { slots: [slot] });
      expect([slot, res.status, res.body.detail?.[0]?.loc]).toEqual([slot, 422, ['body', 'slots', 0]]);
    }
    const booked = await book((await m.client()).token, serviceId, {
      slots: ['2026-12-02T11:00', '2026-12-02T12:00:00.000'],
    });
    expect(booked.status).toBe(200);
    expect(booked.body.map((s: { slot: string }) => s.slot)).toEqual([
      '2026-12-02T11:00:00',
      '2026-12-02T12:00:00',
    ]);
  });

  it('reads an optional field sent as null as not sent, and still checks one that is sent', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const nulls = {
      addressId: null,
      position: null,
      address: null,
      parking: null,
      parkingDescription: null,
      orderDescription: null,
      method: null,
      packageId: null,
      card: null,
    };
    const booked = await book(client.token, serviceId, { slots: ['2026-12-02T10:00:00'], ...nulls });
    expect(booked.status).toBe(200);
    expect(booked.body[0]).toMatchObject({
      addressId: null,
      clientLocation: null,
      clientAddress: '',
      parking: '',
      minutesTravel: 0,
    });
    const payment = await t.request('GET', `/api/v1/payment/${booked.body[0].paymentId}`, {
      token: client.token,
    });
    expect(payment.body).toMatchObject({ methodId: 1 });
    // A value that is sent is checked as before, with the field's own message.
    const bad = await book(client.token, serviceId, {
      slots: ['2026-12-02T11:00:00'],
      addressId: 'x',
      method: 'paypal',
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([
      { loc: ['body', 'addressId'], msg: 'Input should be a valid UUID', type: 'invalid_uuid' },
      { loc: ['body', 'method'], msg: "Input should be 'card', 'cash' or 'bank_transfer'", type: 'enum' },
    ]);
  });

  it('books a package of several slots in one group with one payment', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 3, price: 90 });
    const client = await m.client();
    const res = await book(client.token, serviceId, {
      slots: ['2026-12-02T10:00:00', '2026-12-03T10:00:00'],
    });
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(2);
    expect(new Set(res.body.map((s: { groupId: string }) => s.groupId)).size).toBe(1);
    expect(new Set(res.body.map((s: { paymentId: string }) => s.paymentId)).size).toBe(1);
    expect(res.body[0].price).toBe(30);
    const tooMany = await book(client.token, serviceId, {
      slots: ['2026-12-07T10:00:00', '2026-12-07T11:00:00', '2026-12-07T12:00:00', '2026-12-07T13:00:00'],
    });
    expect(tooMany.status).toBe(422);
    // The same shape as every other validation failure, at the field that broke the rule.
    expect(tooMany.body).toEqual({
      detail: [
        { loc: ['body', 'slots'], msg: 'this service books at most 3 slot(s) at once', type: 'value_error' },
      ],
    });
  });

  it('keeps a coach from being double booked across two services with overlapping slots', async () => {
    const coach = await m.coach();
    const hour = await m.offering(coach, { sessionMinutesDuration: 60 });
    const half = await m.offering(coach, { sessionMinutesDuration: 90 });
    const a = await book((await m.client()).token, hour, { slots: ['2026-12-02T10:00:00'] });
    expect(a.status).toBe(200);
    // 09:00-10:30 overlaps 10:00-11:00
    const b = await book((await m.client()).token, half, { slots: ['2026-12-02T09:00:00'] });
    expect(b.status).toBe(409);
    expect((await slotsOf(half)).slots.map((s: { slot: string }) => s.slot)).not.toContain(
      '2026-12-02T09:00:00',
    );
  });

  it('answers 404 for unknown or unapproved services and coaches, and 401/403 by role', async () => {
    const client = await m.client();
    const unknown = await book(client.token, randomUUID(), { slots: ['2026-12-02T10:00:00'] });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: 'service_not_found' });
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    expect((await t.request('POST', `/api/v1/service/${serviceId}`, { body: { slots: [] } })).status).toBe(
      401,
    );
    expect((await book(coach.token, serviceId, { slots: ['2026-12-02T10:00:00'] })).status).toBe(403);
    const missing = await t.request('GET', `/api/v1/coach/${randomUUID()}/availability`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: 'coach_not_found', message: 'no such coach', code: 404 });
    const badRange = await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?from_date=2026-12-10&to_date=2026-12-01`,
    );
    expect(badRange.status).toBe(422);
    const tooLong = await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?from_date=2026-12-01&to_date=2027-06-01`,
    );
    expect(tooLong.status).toBe(422);
  });

  it('lists each service of a coach with its free slots', async () => {
    const coach = await m.coach();
    const s1 = await m.offering(coach);
    const res = await t.request(
      'GET',
      `/api/v1/coach/${coach.id}/availability?from_date=2026-12-02&to_date=2026-12-02`,
    );
    expect(res.status).toBe(200);
    expect(res.body.services).toHaveLength(1);
    expect(res.body.services[0].service.id).toBe(s1);
    expect(res.body.services[0].slots).toHaveLength(8);
  });

  it('answers 422 at to_date when a coach has more free slots in the range than one answer lists (11)', async () => {
    const day = [{ start: '00:00', end: '24:00' }];
    const coach = await m.coach({
      weekly: {
        monday: day,
        tuesday: day,
        wednesday: day,
        thursday: day,
        friday: day,
        saturday: day,
        sunday: day,
      },
    });
    // Two 5-minute services open around the clock: 288 slots a day each, 35,712 in 62 days.
    const short = { sessionMinutesDuration: 5, bookingWindowDays: 365, minimumNoticeHours: 0 };
    const ids = [await m.offering(coach, short), await m.offering(coach, { ...short, name: 'Quick serve' })];
    const wide = await t.request(
      'GET',
      `/api/v1/coach/${coach.id}/availability?from_date=2026-12-02&to_date=2027-02-01`,
    );
    expect(wide.status).toBe(422);
    expect(wide.body).toEqual({
      detail: [
        {
          loc: ['query', 'to_date'],
          msg: "the coach's services have more than 20000 free slots in this range: ask for fewer days",
          type: 'value_error',
        },
      ],
    });
    // Fewer days are answered whole: 2 services x 288 slots x 14 days.
    const twoWeeks = await t.request(
      'GET',
      `/api/v1/coach/${coach.id}/availability?from_date=2026-12-02&to_date=2026-12-15`,
    );
    expect(twoWeeks.status).toBe(200);
    expect(twoWeeks.body.services.map((s: { service: { id: string } }) => s.service.id).sort()).toEqual(
      [...ids].sort(),
    );
    for (const s of twoWeeks.body.services) expect(s.slots).toHaveLength(288 * 14);
  });

  describe('one answer lists at most 20,000 free slots (6, 11)', () => {
    const aroundTheClock = () => {
      const day = [{ start: '00:00', end: '24:00' }];
      return m.coach({
        weekly: Object.fromEntries(
          ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'].map((d) => [d, day]),
        ),
      });
    };
    const hhmm = (n: number) =>
      `${String(Math.floor(n / 60)).padStart(2, '0')}:${String(n % 60).padStart(2, '0')}`;
    /** 5-minute sessions starting every minute from 00:00 to 08:19 (500 start times, the most allowed). */
    const busiest = {
      sessionMinutesDuration: 5,
      slots: Array.from({ length: 500 }, (_, i) => hhmm(i)),
      minimumNoticeHours: 0,
      bookingWindowDays: 365,
    };
    const tooMany = (who: string) => ({
      detail: [
        {
          loc: ['query', 'to_date'],
          msg: `${who} more than 20000 free slots in this range: ask for fewer days`,
          type: 'value_error',
        },
      ],
    });
    const get = (path: string, token?: string) => t.request('GET', path, token ? { token } : {});
    const dates = (slots: { slot: string }[]) => [...new Set(slots.map((s) => s.slot.slice(0, 10)))];

    it('answers 422 at to_date when one service has more free slots in the range asked for (6)', async () => {
      const coach = await aroundTheClock();
      const serviceId = await m.offering(coach, busiest);
      const url = `/api/v1/service/${serviceId}/availability`;
      // 500 slots a day: 31,000 in 62 days.
      for (let i = 0; i < 2; i++) {
        const wide = await get(`${url}?from_date=2026-12-02&to_date=2027-02-01`);
        expect([wide.status, wide.body]).toEqual([422, tooMany('the service has')]);
      }
      // 40 days hold 20,000: answered whole.
      const forty = await get(`${url}?from_date=2026-12-02&to_date=2027-01-10`);
      expect([forty.status, forty.body.toDate, forty.body.slots.length]).toEqual([200, '2027-01-10', 20_000]);
    });

    it('shortens the default range to its last whole day within the bound, toDate saying which (6)', async () => {
      // A service stored before Service.slots was bounded to 500 start times: one every minute.
      const coach = await aroundTheClock();
      const serviceId = randomUUID();
      const { position } = await t.system.deps.store.append(
        `service-${serviceId}`,
        [
          {
            type: 'ServiceCreated',
            data: {
              serviceId,
              coachId: coach.id,
              ...SERVICE_DEFAULTS,
              ...busiest,
              slots: Array.from({ length: 1440 }, (_, i) => hhmm(i)),
              name: 'Every minute',
              price: 10,
              priceCurrency: 'EUR',
              serviceTypes: ['tennis'],
              status: 'review',
              createdAt: '2026-01-01T00:00:00.000Z',
            },
          },
        ],
        { expectedRevision: 'any' },
      );
      expect(await t.system.runner.waitFor(position, 3000)).toBe(true);
      const approved = await t.request('POST', `/api/v1/admin/services/${serviceId}/approve`, {
        token: m.admin(),
      });
      expect(approved.status).toBe(200);
      // Midnight in Berlin: 14 days of 1440 slots are 20,160; 13 days (18,720) are answered.
      clock.set('2026-12-01T23:00:00Z');
      const url = `/api/v1/service/${serviceId}/availability`;
      for (const query of ['', '?from_date=2026-12-02', '']) {
        const res = await get(`${url}${query}`);
        expect([res.status, res.body.fromDate, res.body.toDate, res.body.slots.length]).toEqual([
          200,
          '2026-12-02',
          '2026-12-14',
          13 * 1440,
        ]);
        expect(dates(res.body.slots).at(-1)).toBe('2026-12-14');
      }
      // The same range asked for explicitly is refused, not shortened (nor served the shortened answer).
      const asked = await get(`${url}?from_date=2026-12-02&to_date=2026-12-15`);
      expect([asked.status, asked.body]).toEqual([422, tooMany('the service has')]);
      const fewer = await get(`${url}?from_date=2026-12-02&to_date=2026-12-14`);
      expect([fewer.status, fewer.body.slots.length]).toEqual([200, 13 * 1440]);
    });

    it("shortens the coach's default range to its last whole day within the bound, toDate saying which (11)", async () => {
      const coach = await aroundTheClock();
      for (const name of ['One', 'Two', 'Three']) await m.offering(coach, { ...busiest, name });
      // Three services of 500 slots a day: 21,000 in the default 14 days, 19,500 in 13.
      clock.set('2026-12-01T23:00:00Z');
      const res = await get(`/api/v1/coach/${coach.id}/availability`);
      expect([res.status, res.body.fromDate, res.body.toDate]).toEqual([200, '2026-12-02', '2026-12-14']);
      expect(res.body.services).toHaveLength(3);
      for (const s of res.body.services) {
        expect(s.slots).toHaveLength(13 * 500);
        expect(dates(s.slots).at(-1)).toBe('2026-12-14');
      }
      const asked = await get(
        `/api/v1/coach/${coach.id}/availability?from_date=2026-12-02&to_date=2026-12-15`,
      );
      expect([asked.status, asked.body]).toEqual([422, tooMany("the coach's services have")]);
    });

    it("answers a normal coach's default two weeks whole (11)", async () => {
      const coach = await m.coach();
      const serviceId = await m.offering(coach);
      const res = await get(`/api/v1/coach/${coach.id}/availability`);
      expect([res.status, res.body.fromDate, res.body.toDate]).toEqual([200, '2026-12-01', '2026-12-14']);
      // Today from 11:00 (2 hours' notice) to 16:00, then 8 a weekday: 6 + 3 x 8 + 5 x 8 + 8.
      expect(res.body.services.map((s: { service: { id: string } }) => s.service.id)).toEqual([serviceId]);
      expect(res.body.services[0].slots).toHaveLength(78);
      expect(dates(res.body.services[0].slots)).toEqual([
        '2026-12-01',
        '2026-12-02',
        '2026-12-03',
        '2026-12-04',
        '2026-12-07',
        '2026-12-08',
        '2026-12-09',
        '2026-12-10',
        '2026-12-11',
        '2026-12-14',
      ]);
    });

    it('counts the slots listed: a group slot the caller holds a seat in is not listed, nor counted (6, 11)', async () => {
      const coach = await aroundTheClock();
      const serviceId = await m.offering(coach, { ...busiest, groupSession: true, maxGroupSize: 3 });
      // At 08:11 in Berlin today offers its last 9 starts: with 40 more days, 20,009 slots, less the 8 that
      // overlap the seat booked below (07:56 to 08:04 but 08:00 itself): 20,001.
      clock.set('2026-12-01T07:11:00Z');
      const client = await m.client();
      const seat = await book(client.token, serviceId, { slots: ['2026-12-05T08:00:00'] });
      expect(seat.status).toBe(200);
      const range = '?from_date=2026-12-01&to_date=2027-01-10';
      const six = `/api/v1/service/${serviceId}/availability${range}`;
      const eleven = `/api/v1/coach/${coach.id}/availability${range}`;
      for (const [url, who] of [
        [six, 'the service has'],
        [eleven, "the coach's services have"],
      ] as const) {
        expect((await get(url)).body).toEqual(tooMany(who));
        // Its holder is not offered the slot it holds a seat in: 20,000 listed, within the bound.
        const held = await get(url, client.token);
        expect(held.status).toBe(200);
        const slots: { slot: string; remainingSeats: number }[] =
          held.body.slots ?? held.body.services[0].slots;
        expect(slots).toHaveLength(20_000);
        expect(slots.map((s) => s.slot)).not.toContain('2026-12-05T08:00:00');
        expect((await get(url, (await m.client()).token)).status).toBe(422);
      }
    });
  });

  it("stores the schedule's zone by its canonical IANA name, whatever the case it was sent in", async () => {
    const coach = await m.coach({ timezone: 'europe/berlin' });
    const serviceId = await m.offering(coach);
    const set = await t.request('PUT', '/api/v1/coach/schedule', {
      token: coach.token,
      body: { timezone: 'europe/berlin', weekly: { wednesday: [{ start: '09:00', end: '10:00' }] } },
    });
    expect(set.status).toBe(200);
    expect(set.body.timezone).toBe('Europe/Berlin');
    expect((await slotsOf(serviceId)).timezone).toBe('Europe/Berlin');
    const client = await m.client();
    const booked = await book(client.token, serviceId, { slots: ['2026-12-02T09:00:00'] });
    expect(booked.status).toBe(200);
    const session = await t.request('GET', `/api/v1/session/${booked.body[0].id}`, { token: client.token });
    expect(session.body.slot).toBe('2026-12-02T09:00:00');
    const utc = await t.request('PUT', '/api/v1/coach/schedule', {
      token: coach.token,
      body: { timezone: 'utc', weekly: {} },
    });
    expect(utc.status).toBe(200);
    expect(utc.body.timezone).toBe('UTC');
    // IANA's current names, not the older ones ICU keeps (Europe/Kiev, Asia/Calcutta).
    for (const [sent, stored] of [
      ['Europe/Kyiv', 'Europe/Kyiv'],
      ['asia/calcutta', 'Asia/Kolkata'],
    ]) {
      const put = await t.request('PUT', '/api/v1/coach/schedule', {
        token: coach.token,
        body: { timezone: sent, weekly: { wednesday: [{ start: '09:00', end: '10:00' }] } },
      });
      expect(put.body.timezone).toBe(stored);
      expect((await slotsOf(serviceId)).timezone).toBe(stored);
    }
    for (const timezone of ['Europe/Nowhere', 'Berlin', '+01:00'])
      expect(
        (
          await t.request('PUT', '/api/v1/coach/schedule', {
            token: coach.token,
            body: { timezone, weekly: {} },
          })
        ).status,
      ).toBe(422);
  });

  it('replays a booking for a repeated Idempotency-Key instead of booking twice', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const headers = { 'Idempotency-Key': randomUUID() };
    const first = await book(client.token, serviceId, { slots: ['2026-12-02T11:00:00'] }, headers);
    const second = await book(client.token, serviceId, { slots: ['2026-12-02T11:00:00'] }, headers);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    const mine = await t.request('GET', '/api/v1/sessions', { token: client.token });
    expect(mine.body).toHaveLength(1);
  });

  it("filters the caller's sessions by state, by the caller's part and by start", async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const a = (await book(client.token, serviceId, { slots: ['2026-12-02T10:00:00'] })).body[0];
    const b = (await book(client.token, serviceId, { slots: ['2026-12-03T10:00:00'] })).body[0];
    expect((await t.request('POST', `/api/v1/session/${a.id}/approve`, { token: coach.token })).status).toBe(
      200,
    );
    const ids = async (token: string, query: string) => {
      const res = await t.request('GET', `/api/v1/sessions?${query}`, { token });
      expect(res.status).toBe(200);
      return res.body.map((x: { id: string }) => x.id);
    };
    expect(await ids(coach.token, '')).toEqual([b.id, a.id]);
    expect(await ids(coach.token, 'state=new')).toEqual([b.id]);
    expect(await ids(coach.token, 'state=approved,new')).toEqual([b.id, a.id]);
    expect(await ids(coach.token, 'as=coach&state=approved')).toEqual([a.id]);
    expect(await ids(coach.token, 'as=client')).toEqual([]);
    expect(await ids(client.token, 'as=client')).toEqual([b.id, a.id]);
    expect(await ids(client.token, 'from=2026-12-03T00:00:00Z')).toEqual([b.id]);
    expect(await ids(client.token, 'to=2026-12-03T09:00:00Z')).toEqual([a.id]);
    expect(await ids(client.token, `from=${a.startsAt}&to=${b.startsAt}`)).toEqual([a.id]);
    // Any offset ISO 8601 writes (PostgreSQL reads none past 15:59: +23:59 was a 500), and every digit sent.
    expect(await ids(client.token, 'from=2026-12-03T09:59:00%2B23:59')).toEqual([b.id]);
    expect(await ids(client.token, 'to=2026-12-01T09:01:00-23:59')).toEqual([]);
    expect(await ids(client.token, 'from=2026-12-02T09:00:00.0001Z')).toEqual([b.id]);
    expect(await ids(client.token, 'to=2026-12-02T09:00:00.000001Z')).toEqual([a.id]);
    for (const [query, loc] of [
      ['state=pending', 'state'],
      ['state=new,', 'state'],
      ['as=admin', 'as'],
      ['from=tomorrow', 'from'],
      ['from=2026-12-03T00:00:00Z&to=2026-12-02T00:00:00Z', 'to'],
    ]) {
      const res = await t.request('GET', `/api/v1/sessions?${query}`, { token: client.token });
      expect([query, res.status, res.body.detail?.[0]?.loc]).toEqual([query, 422, ['query', loc]]);
    }
  });

  it('handles DST: the spring-forward gap has no slot, and slots keep their wall time across the change', async () => {
    clock.set('2027-03-25T08:00:00Z');
    const coach = await m.coach({
      weekly: { sunday: [{ start: '01:00', end: '04:00' }], monday: [{ start: '09:00', end: '10:00' }] },
    });
    const serviceId = await m.offering(coach);
    // 28 March 2027: Berlin skips 02:00-03:00.
    const day = await slotsOf(serviceId, '2027-03-28', '2027-03-29');
    expect(day.slots.map((s: { slot: string; startsAt: string }) => [s.slot, s.startsAt])).toEqual([
      ['2027-03-28T01:00:00', '2027-03-28T00:00:00.000Z'],
      ['2027-03-28T03:00:00', '2027-03-28T01:00:00.000Z'],
      ['2027-03-29T09:00:00', '2027-03-29T07:00:00.000Z'],
    ]);
    const gap = await book((await m.client()).token, serviceId, { slots: ['2027-03-28T02:00:00'] });
    expect(gap.status).toBe(409);
  });
});
