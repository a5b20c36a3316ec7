import { randomUUID } from 'node:crypto';
import { Settings } from 'luxon';
import { eventually, marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

// Tuesday 1 December 2026, 09:00 in Berlin.
const now = new Date('2026-12-01T08:00:00Z');
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
beforeAll(async () => {
  t = await startTestSystem({ clock: () => now });
  m = marketplace(t);
});
afterAll(() => t.close());

const ALEXANDERPLATZ = { lat: 52.5219, lng: 13.4132 };
const TIERGARTEN = { lat: 52.5145, lng: 13.3501 };
/** 27.8 km from Alexanderplatz: × 1.3 road factor at 30 km/h is 72.2 minutes, rounded up to 75. */
const POTSDAM = { lat: 52.3906, lng: 13.0645 };

async function saveAddress(token: string, name: string, at: { lat: number; lng: number }) {
  const res = await t.request('POST', '/api/v1/nav/addreses', {
    token,
    body: { ...at, name, address: `${name} 1, Berlin` },
  });
  expect(res.status).toBe(200);
  return (res.body as { id: string; name: string }[]).find((a) => a.name === name)!.id;
}

/** A coach whose default address is its studio at Alexanderplatz, plus a park it also coaches in. */
async function coachWithPlaces(over: Record<string, unknown> = {}) {
  const coach = await m.coach();
  const studio = await saveAddress(coach.token, 'Studio', ALEXANDERPLATZ);
  const park = await saveAddress(coach.token, 'Park', TIERGARTEN);
  const serviceId = await m.offering(coach, over);
  return { coach, studio, park, serviceId };
}

const book = (token: string, serviceId: string, body: Record<string, unknown>) =>
  t.request('POST', `/api/v1/service/${serviceId}`, { token, body });

const freeOn = async (serviceId: string, date: string, query = '') => {
  const res = await t.request(
    'GET',
    `/api/v1/service/${serviceId}/availability?from_date=${date}&to_date=${date}${query}`,
  );
  expect(res.status).toBe(200);
  return {
    travel: res.body.minutesTravel as number,
    slots: (res.body.slots as { slot: string }[]).map((s) => s.slot.slice(11, 16)),
  };
};

describe("addressId is one of the coach's places (8)", () => {
  it("books a session at the coach's address; the client's own location still comes from address/position", async () => {
    const { park, serviceId } = await coachWithPlaces();
    const client = await m.client();
    const res = await book(client.token, serviceId, {
      slots: ['2026-12-02T10:00:00'],
      addressId: park,
      address: 'Client street 5',
      position: POTSDAM,
    });
    expect(res.status).toBe(200);
    expect(res.body[0]).toMatchObject({
      addressId: park,
      clientAddress: 'Client street 5',
      clientLocation: POTSDAM,
      minutesTravel: 0,
    });
    const stored = await eventually(
      () => t.request('GET', `/api/v1/session/${res.body[0].id}`, { token: client.token }),
      (r) => r.status === 200,
    );
    expect(stored.body).toMatchObject({ addressId: park, minutesTravel: 0 });
  });

  it("refuses an address that is not the coach's (the client's own included) with a clear 404; a malformed id is 422", async () => {
    const { serviceId } = await coachWithPlaces();
    const client = await m.client();
    const own = await saveAddress(client.token, 'Home', POTSDAM);
    for (const addressId of [own, randomUUID()]) {
      const res = await book(client.token, serviceId, { slots: ['2026-12-02T10:00:00'], addressId });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        error: 'address_not_found',
        message:
          "addressId is not one of the coach's saved addresses; to meet at your own place, send its position and address instead",
        code: 404,
      });
    }
    const asked = await t.request('GET', `/api/v1/service/${serviceId}/availability?address_id=${own}`, {
      token: client.token,
    });
    expect([asked.status, asked.body.message]).toEqual([
      404,
      "address_id is not one of the coach's addresses; for your own place, send lat and lng instead",
    ]);
    const bad = await book(client.token, serviceId, { slots: ['2026-12-02T10:00:00'], addressId: 'x' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'addressId']);
  });
});

describe("a coach's removed address (DELETE /api/v1/nav/addreses/{id})", () => {
  it('is no longer offered or bookable; a session booked there keeps it; travel counts from the new default', async () => {
    const { coach, studio, park, serviceId } = await coachWithPlaces();
    const client = await m.client();
    const booked = await book(client.token, serviceId, { slots: ['2026-12-02T10:00:00'], addressId: park });
    expect(booked.status).toBe(200);
    expect((await t.request('DELETE', `/api/v1/nav/addreses/${park}`, { token: coach.token })).status).toBe(
      200,
    );

    const offered = await t.request('GET', `/api/v1/service/${serviceId}/availability?address_id=${park}`);
    expect([offered.status, offered.body.error]).toEqual([404, 'address_not_found']);
    const again = await book(client.token, serviceId, { slots: ['2026-12-02T12:00:00'], addressId: park });
    expect([again.status, again.body.error]).toEqual([404, 'address_not_found']);
    const session = await t.request('GET', `/api/v1/session/${booked.body[0].id}`, { token: client.token });
    expect(session.body).toMatchObject({ addressId: park, minutesTravel: 0 });

    // The studio (the default) goes too: nothing is left to travel from.
    const before = await freeOn(serviceId, '2026-12-03', `&lat=${POTSDAM.lat}&lng=${POTSDAM.lng}`);
    expect(before.travel).toBe(75);
    await t.request('DELETE', `/api/v1/nav/addreses/${studio}`, { token: coach.token });
    const after = await freeOn(serviceId, '2026-12-03', `&lat=${POTSDAM.lat}&lng=${POTSDAM.lng}`);
    expect(after.travel).toBe(0);
  });

  it("leaves a session booked at the client's place its travel, still blocked, when the coach's addresses go", async () => {
    const { coach, studio, park, serviceId } = await coachWithPlaces();
    const client = await m.client();
    const far = await book(client.token, serviceId, {
      slots: ['2026-12-02T12:00:00'],
      address: 'Potsdam, Am Kanal 1',
      position: POTSDAM,
    });
    expect(far.body[0]).toMatchObject({ minutesTravel: 75 });
    for (const id of [studio, park])
      expect((await t.request('DELETE', `/api/v1/nav/addreses/${id}`, { token: coach.token })).status).toBe(
        200,
      );

    const session = await t.request('GET', `/api/v1/session/${far.body[0].id}`, { token: client.token });
    expect(session.body).toMatchObject({ minutesTravel: 75, clientLocation: POTSDAM });
    // Its trip (10:45 to 14:15) is still busy; a new booking there has no base to travel from: 0 minutes.
    expect(await freeOn(serviceId, '2026-12-02', `&lat=${POTSDAM.lat}&lng=${POTSDAM.lng}`)).toEqual({
      travel: 0,
      slots: ['09:00', '15:00', '16:00'],
    });
  });
});

describe('travel time (minutesTravel)', () => {
  it("is computed for a session at the client's place and blocked on the calendar before and after it", async () => {
    const { coach, studio, serviceId } = await coachWithPlaces();
    const client = await m.client();
    // Wednesday 12:00-13:00 in Potsdam: the coach is away 10:45 to 14:15.
    const far = await book(client.token, serviceId, {
      slots: ['2026-12-02T12:00:00'],
      address: 'Potsdam, Am Kanal 1',
      position: POTSDAM,
    });
    expect(far.status).toBe(200);
    expect(far.body[0]).toMatchObject({ minutesTravel: 75, addressId: null, clientLocation: POTSDAM });

    // At the coach's place (or with no place given): 10:00, 11:00, 13:00 and 14:00 collide with the trip.
    expect(await freeOn(serviceId, '2026-12-02')).toEqual({ travel: 0, slots: ['09:00', '15:00', '16:00'] });
    expect(await freeOn(serviceId, '2026-12-02', `&address_id=${studio}`)).toEqual({
      travel: 0,
      slots: ['09:00', '15:00', '16:00'],
    });
    // Another client in Potsdam needs 75 minutes each way as well: only 16:00 leaves room for both trips.
    expect(await freeOn(serviceId, '2026-12-02', `&lat=${POTSDAM.lat}&lng=${POTSDAM.lng}`)).toEqual({
      travel: 75,
      slots: ['16:00'],
    });
    // A client next door to the studio (0 minutes) gets what the coach's place gets.
    expect(
      await freeOn(serviceId, '2026-12-02', `&lat=${ALEXANDERPLATZ.lat}&lng=${ALEXANDERPLATZ.lng}`),
    ).toEqual({ travel: 0, slots: ['09:00', '15:00', '16:00'] });

    // Booking follows the same rule: back-to-back at places too far apart is refused.
    const other = await m.client();
    const tooClose = await book(other.token, serviceId, {
      slots: ['2026-12-02T14:00:00'],
      addressId: studio,
    });
    expect(tooClose.status).toBe(409);
    expect(tooClose.body.error).toBe('slot_unavailable');
    const farAgain = await book(other.token, serviceId, {
      slots: ['2026-12-02T15:00:00'],
      position: POTSDAM,
    });
    expect(farAgain.status).toBe(409);
    const ok = await book(other.token, serviceId, { slots: ['2026-12-02T16:00:00'], position: POTSDAM });
    expect(ok.status).toBe(200);
    expect(ok.body[0].minutesTravel).toBe(75);

    // The coach's other services share the calendar, and the coach availability (11) shows the same.
    const coachView = await t.request(
      'GET',
      `/api/v1/coach/${coach.id}/availability?from_date=2026-12-02&to_date=2026-12-02`,
    );
    expect(coachView.body.services[0].slots.map((s: { slot: string }) => s.slot.slice(11, 16))).toEqual([
      '09:00',
    ]);

    // Declining the first session gives its time and its travel back.
    expect(
      (await t.request('POST', `/api/v1/session/${far.body[0].id}/decline`, { token: coach.token })).status,
    ).toBe(200);
    expect((await freeOn(serviceId, '2026-12-02')).slots).toEqual([
      '09:00',
      '10:00',
      '11:00',
      '12:00',
      '13:00',
    ]);
  });

  it('reaching most of a day away (a client in Munich), is shown as far as it reaches, as booking counts it', async () => {
    const hours = [{ start: '09:00', end: '17:00' }];
    const everyDay = Object.fromEntries(
      ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'].map((d) => [d, hours]),
    );
    const coach = await m.coach({ weekly: everyDay });
    await saveAddress(coach.token, 'Studio', ALEXANDERPLATZ);
    const serviceId = await m.offering(coach);
    const free = async (query = '') => (await freeOn(serviceId, '2026-12-05', query)).slots;
    const bookable = async (slots: string[], place: Record<string, unknown>) => {
      const booked: string[] = [];
      for (const slot of slots) {
        const res = await book((await m.client()).token, serviceId, { slots: [slot], ...place });
        if (res.status === 200) {
          booked.push(slot.slice(11, 16));
          const freed = await t.request('POST', `/api/v1/session/${res.body[0].id}/decline`, {
            token: coach.token,
          });
          expect(freed.status).toBe(200);
        }
      }
      return booked;
    };
    const saturday = ['09', '10', '11', '12', '13', '14', '15', '16'].map((h) => `2026-12-05T${h}:00:00`);
    const munich = { lat: 48.1351, lng: 11.582 };

    // Friday 16:00 at the studio; a client in Munich needs 1315 minutes (21 h 55 min) each way.
    const near = await book((await m.client()).token, serviceId, { slots: ['2026-12-04T16:00:00'] });
    expect(near.status).toBe(200);
    const fromMunich = `&lat=${munich.lat}&lng=${munich.lng}`;
    expect((await freeOn(serviceId, '2026-12-05', fromMunich)).travel).toBe(1315);
    // Saturday's sessions in Munich whose trip leaves before Friday's session ends (17:00) are not free:
    // 15:00 leaves at 17:05 the day before.
    expect(await bookable(saturday, { position: munich })).toEqual(['15:00', '16:00']);
    expect(await free(fromMunich)).toEqual(['15:00', '16:00']);

    // The other way round: Friday's session in Munich keeps the coach away until Saturday 14:55.
    expect(
      (await t.request('POST', `/api/v1/session/${near.body[0].id}/decline`, { token: coach.token })).status,
    ).toBe(200);
    const away = await book((await m.client()).token, serviceId, {
      slots: ['2026-12-04T16:00:00'],
      position: munich,
    });
    expect(away.status).toBe(200);
    expect(away.body[0].minutesTravel).toBe(1315);
    expect(await bookable(saturday, {})).toEqual(['15:00', '16:00']);
    expect(await free()).toEqual(['15:00', '16:00']);
    const coachView = await t.request(
      'GET',
      `/api/v1/coach/${coach.id}/availability?from_date=2026-12-05&to_date=2026-12-05`,
    );
    expect(coachView.body.services[0].slots.map((s: { slot: string }) => s.slot.slice(11, 16))).toEqual([
      '15:00',
      '16:00',
    ]);
  });

  it('refuses a place more than a day of travel away (a client in Lisbon, 6015 minutes): 422, nothing held', async () => {
    const coach = await m.coach();
    await saveAddress(coach.token, 'Studio', ALEXANDERPLATZ);
    const serviceId = await m.offering(coach);
    const lisbon = { lat: 38.7223, lng: -9.1393 };
    const before = await freeOn(serviceId, '2026-12-03');
    expect(before.slots.length).toBeGreaterThan(0);
    const tooFar = {
      msg: expect.stringMatching(/6015 minutes of travel.*at most 1440/),
      type: 'value_error',
    };
    for (const path of [
      `/api/v1/service/${serviceId}/availability`,
      `/api/v1/coach/${coach.id}/availability`,
    ]) {
      const res = await t.request(
        'GET',
        `${path}?from_date=2026-12-03&to_date=2026-12-03&lat=${lisbon.lat}&lng=${lisbon.lng}`,
      );
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ detail: [{ loc: ['query', 'lat'], ...tooFar }] });
    }
    const res = await book((await m.client()).token, serviceId, {
      slots: [`2026-12-03T${before.slots[0]}:00`],
      position: lisbon,
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ loc: ['body', 'position'], ...tooFar }] });
    expect(await freeOn(serviceId, '2026-12-03')).toEqual(before);
    // The antipodes, the farthest there is: the same answer, never a 500.
    const antipodes = await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?lat=-52.5219&lng=-166.5868`,
    );
    expect(antipodes.status).toBe(422);
  });

  it('is 0 when the coach has no default address or the client gives no position', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const res = await book(client.token, serviceId, { slots: ['2026-12-02T10:00:00'], position: POTSDAM });
    expect(res.body[0].minutesTravel).toBe(0);
    const { serviceId: withBase } = await coachWithPlaces();
    const noPosition = await book(client.token, withBase, {
      slots: ['2026-12-02T10:00:00'],
      address: 'somewhere',
    });
    expect(noPosition.body[0].minutesTravel).toBe(0);
  });

  it('availability validates its place parameters', async () => {
    const { serviceId } = await coachWithPlaces();
    const url = `/api/v1/service/${serviceId}/availability`;
    expect((await t.request('GET', `${url}?lat=52.5`)).status).toBe(422);
    expect((await t.request('GET', `${url}?lat=95&lng=13`)).status).toBe(422);
    expect((await t.request('GET', `${url}?lat=x&lng=13`)).status).toBe(422);
    for (const bad of ['1e400', '52.5.5', '+52.5', '52,5', '0x10', `52.${'5'.repeat(40)}`, 'Infinity'])
      expect([bad, (await t.request('GET', `${url}?lat=${bad}&lng=13`)).status]).toEqual([bad, 422]);
    const notCoach = await t.request('GET', `${url}?address_id=${randomUUID()}`);
    expect(notCoach.status).toBe(404);
    expect(notCoach.body.error).toBe('address_not_found');
  });

  it('availability takes a position as a client prints it: full precision, or an exponent near 0', async () => {
    const { serviceId } = await coachWithPlaces();
    // Where a map's centre lands: 14 and more decimals (JavaScript prints up to 17 significant digits).
    const position = { lat: 52.39060065999999, lng: 13.064500000000002 };
    const res = await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?from_date=2026-12-02&to_date=2026-12-02&lat=${position.lat}&lng=${position.lng}`,
    );
    expect(res.status).toBe(200);
    expect(res.body.minutesTravel).toBe(75); // Potsdam, as the booking computes it
    const booked = await book((await m.client()).token, serviceId, {
      slots: [res.body.slots[0].slot],
      position,
    });
    expect(booked.status).toBe(200);
    expect(booked.body[0].minutesTravel).toBe(75);
    // (From a coach with no address: no travel. From Berlin the Gulf of Guinea is over a day away, 422.)
    const nowhere = await m.offering(await m.coach());
    const nearZero = await t.request('GET', `/api/v1/service/${nowhere}/availability?lat=1e-7&lng=-2.5e-8`);
    expect(nearZero.status).toBe(200);
  });
});

describe('Service.slots: the start times a service may be booked at', () => {
  it('limits availability (6, 11) and booking (8) to the listed local start times inside the schedule', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { slots: ['09:30', 'wednesday 14:00', 'friday 20:00'] });
    const service = await t.request('GET', `/api/v1/service/${serviceId}`);
    expect(service.body.slots).toEqual(['09:30', 'wednesday 14:00', 'friday 20:00']);
    expect((await freeOn(serviceId, '2026-12-02')).slots).toEqual(['09:30', '14:00']); // Wednesday
    expect((await freeOn(serviceId, '2026-12-03')).slots).toEqual(['09:30']); // Thursday
    // Friday 20:00 is outside the coach's hours (09:00-17:00): not offered.
    expect((await freeOn(serviceId, '2026-12-04')).slots).toEqual(['09:30']);
    const coachView = await t.request(
      'GET',
      `/api/v1/coach/${coach.id}/availability?from_date=2026-12-02&to_date=2026-12-02`,
    );
    expect(coachView.body.services[0].slots.map((s: { slot: string }) => s.slot.slice(11, 16))).toEqual([
      '09:30',
      '14:00',
    ]);

    const client = await m.client();
    const offGrid = await book(client.token, serviceId, { slots: ['2026-12-02T10:00:00'] });
    expect(offGrid.status).toBe(409);
    expect(offGrid.body.error).toBe('slot_unavailable');
    const onGrid = await book(client.token, serviceId, { slots: ['2026-12-02T14:00:00'] });
    expect(onGrid.status).toBe(200);
    expect(onGrid.body[0].slot).toBe('2026-12-02T14:00:00');
  });

  it('refuses start times that are not HH:mm or a weekday and HH:mm', async () => {
    const coach = await m.coach();
    for (const slots of [['25:00'], ['funday 10:00'], ['9:30'], ['monday'], [7]]) {
      const res = await t.request('POST', '/api/v1/coach/services', {
        token: coach.token,
        body: { name: 'x', price: 1, priceCurrency: 'EUR', sessionMinutesDuration: 60, slots },
      });
      expect({ slots, status: res.status, loc: res.body.detail?.[0]?.loc }).toEqual({
        slots,
        status: 422,
        loc: ['body', 'slots', 0],
      });
    }
  });
});

describe('the date range of availability (6, 11)', () => {
  it("counts calendar days, whatever the server's own zone: 62 days across a DST change pass, 63 do not", async () => {
    const { coach, serviceId } = await coachWithPlaces();
    const kept = Settings.defaultZone;
    Settings.defaultZone = 'America/New_York'; // the server's zone: DST begins 14 March 2027
    try {
      for (const path of [
        `/api/v1/service/${serviceId}/availability`,
        `/api/v1/coach/${coach.id}/availability`,
      ]) {
        const ok = await t.request('GET', `${path}?from_date=2027-02-01&to_date=2027-04-03`);
        expect(ok.status).toBe(200);
        expect(ok.body).toMatchObject({ fromDate: '2027-02-01', toDate: '2027-04-03' });
        const over = await t.request('GET', `${path}?from_date=2027-02-01&to_date=2027-04-04`);
        expect(over.status).toBe(422);
        expect(over.body.detail[0]).toMatchObject({ loc: ['query', 'to_date'] });
        // Autumn: an hour longer than whole days in New York.
        const autumn = await t.request('GET', `${path}?from_date=2027-10-01&to_date=2027-12-01`);
        expect(autumn.status).toBe(200);
      }
    } finally {
      Settings.defaultZone = kept;
    }
  });

  it("counts calendar days also where the server's zone skips a midnight: 63 days from that day do not pass", async () => {
    const { coach, serviceId } = await coachWithPlaces();
    const kept = Settings.defaultZone;
    // The server's zone: 6 September 2026 starts at 01:00 in Santiago (00:00 -04:00 became 01:00 -03:00).
    Settings.defaultZone = 'America/Santiago';
    try {
      for (const path of [
        `/api/v1/service/${serviceId}/availability`,
        `/api/v1/coach/${coach.id}/availability`,
      ]) {
        const ok = await t.request('GET', `${path}?from_date=2026-09-06&to_date=2026-11-06`);
        expect(ok.status).toBe(200);
        expect(ok.body).toMatchObject({ fromDate: '2026-09-06', toDate: '2026-11-06' });
        const over = await t.request('GET', `${path}?from_date=2026-09-06&to_date=2026-11-07`);
        expect(over.status).toBe(422);
        expect(over.body.detail[0]).toMatchObject({ loc: ['query', 'to_date'] });
      }
    } finally {
      Settings.defaultZone = kept;
    }
  });
});

describe('a group session takes place at one place', () => {
  it('shares its seats only with bookings at the same place; elsewhere its time is taken', async () => {
    const { coach, studio, park, serviceId } = await coachWithPlaces({ groupSession: true, maxGroupSize: 3 });
    const slot = '2026-12-02T10:00:00';
    const first = await book((await m.client()).token, serviceId, { slots: [slot], addressId: park });
    expect(first.status).toBe(200);

    const seatsAt = async (query: string) => {
      const res = await t.request(
        'GET',
        `/api/v1/service/${serviceId}/availability?from_date=2026-12-02&to_date=2026-12-02${query}`,
      );
      expect(res.status).toBe(200);
      return (res.body.slots as { slot: string; remainingSeats: number }[]).find((s) => s.slot === slot)
        ?.remainingSeats;
    };
    expect(await seatsAt(`&address_id=${park}`)).toBe(2);
    expect(await seatsAt(`&address_id=${studio}`)).toBeUndefined();
    expect(await seatsAt(`&lat=${TIERGARTEN.lat}&lng=${TIERGARTEN.lng}`)).toBeUndefined();
    // The coach's availability (11) says the same.
    const byCoach = await t.request(
      'GET',
      `/api/v1/coach/${coach.id}/availability?from_date=2026-12-02&to_date=2026-12-02&address_id=${studio}`,
    );
    expect(byCoach.status).toBe(200);
    expect(JSON.stringify(byCoach.body)).not.toContain(`"slot":"${slot}"`);

    const elsewhere = await book((await m.client()).token, serviceId, { slots: [slot], addressId: studio });
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.body).toMatchObject({ error: 'slot_unavailable' });
    const atHome = await book((await m.client()).token, serviceId, { slots: [slot], position: POTSDAM });
    expect(atHome.status).toBe(409);
    const samePlace = await book((await m.client()).token, serviceId, {
      slots: [slot],
      addressId: park.toUpperCase(),
    });
    expect(samePlace.status).toBe(200);
    expect(await seatsAt(`&address_id=${park}`)).toBe(1);
  });

  it('is not offered to a client who holds a seat in it (6, 11): booking it again is 409 slot_unavailable', async () => {
    const { coach, serviceId } = await coachWithPlaces({ groupSession: true, maxGroupSize: 3 });
    const slot = '2026-12-02T11:00:00';
    const holder = await m.client();
    const other = await m.client();
    expect((await book(holder.token, serviceId, { slots: [slot] })).status).toBe(200);
    const offered = async (token?: string) => {
      const range = 'from_date=2026-12-02&to_date=2026-12-02';
      const one = await t.request('GET', `/api/v1/service/${serviceId}/availability?${range}`, { token });
      const all = await t.request('GET', `/api/v1/coach/${coach.id}/availability?${range}`, { token });
      expect([one.status, all.status]).toEqual([200, 200]);
      const seats = (slots: { slot: string; remainingSeats: number }[]) =>
        slots.find((x) => x.slot === slot)?.remainingSeats;
      const byCoach = (all.body.services as { service: { id: string }; slots: never[] }[]).find(
        (x) => x.service.id === serviceId,
      )!;
      return [seats(one.body.slots), seats(byCoach.slots), one.body.slots.length];
    };
    // Anyone else (and an anonymous caller) is offered the seats left; the holder is not, its other slots stay.
    const [, , count] = await offered();
    expect(await offered()).toEqual([2, 2, count]);
    expect(await offered(other.token)).toEqual([2, 2, count]);
    expect(await offered(holder.token)).toEqual([undefined, undefined, count - 1]);
    // A booking of it, the way a client who was offered it would try, is refused clearly.
    const again = await book(holder.token, serviceId, { slots: [slot] });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      error: 'slot_unavailable',
      message: `you already hold ${slot}`,
      code: 409,
    });
    expect((await book(other.token, serviceId, { slots: [slot] })).status).toBe(200);
    expect(await offered(holder.token)).toEqual([undefined, undefined, count - 1]);
    expect(await offered()).toEqual([1, 1, count]);
  });

  it("shares seats at the client's place: availability asked with that lat/lng counts them, with its travel", async () => {
    const { serviceId } = await coachWithPlaces({ groupSession: true, maxGroupSize: 3 });
    const slot = '2026-12-02T12:00:00';
    const first = await book((await m.client()).token, serviceId, { slots: [slot], position: POTSDAM });
    expect([first.status, first.body[0].minutesTravel]).toEqual([200, 75]);
    const res = await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?from_date=2026-12-02&to_date=2026-12-02&lat=${POTSDAM.lat}&lng=${POTSDAM.lng}`,
    );
    expect(res.body.minutesTravel).toBe(75);
    expect(res.body.slots).toContainEqual(expect.objectContaining({ slot, remainingSeats: 2 }));
    const second = await book((await m.client()).token, serviceId, { slots: [slot], position: POTSDAM });
    expect([second.status, second.body[0].minutesTravel]).toEqual([200, 75]);
  });

  it('tells a seat holder it holds the slot also once the slot is full; a canceled seat is taken by the next', async () => {
    const { serviceId } = await coachWithPlaces({ groupSession: true, maxGroupSize: 2 });
    const slot = '2026-12-02T14:00:00';
    const [a, b, c] = [await m.client(), await m.client(), await m.client()];
    const seatA = await book(a.token, serviceId, { slots: [slot] });
    expect(seatA.status).toBe(200);
    expect((await book(b.token, serviceId, { slots: [slot] })).status).toBe(200);
    const full = await book(c.token, serviceId, { slots: [slot] });
    expect([full.status, full.body.message]).toEqual([
      409,
      `${slot} is taken: no seat is left; choose another slot of the availability`,
    ]);
    const again = await book(b.token, serviceId, { slots: [slot] });
    expect([again.status, again.body]).toEqual([
      409,
      { error: 'slot_unavailable', message: `you already hold ${slot}`, code: 409 },
    ]);
    expect(
      (await t.request('POST', `/api/v1/session/${seatA.body[0].id}/cancel`, { token: a.token })).status,
    ).toBe(200);
    expect((await book(c.token, serviceId, { slots: [slot] })).status).toBe(200);
    expect((await book(a.token, serviceId, { slots: [slot] })).status).toBe(409);
  });

  it('leaves a one-on-one session booked before its service became a group one to its client', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const slot = '2026-12-02T10:00:00';
    expect((await book((await m.client()).token, serviceId, { slots: [slot] })).status).toBe(200);
    const edit = await t.request('PUT', `/api/v1/coach/services/${serviceId}`, {
      token: coach.token,
      body: { groupSession: true, maxGroupSize: 5 },
    });
    expect(edit.status).toBe(200);
    // The new group slots are offered around it; the private session's hour is not a group slot.
    expect((await freeOn(serviceId, '2026-12-02')).slots).not.toContain('10:00');
    expect((await freeOn(serviceId, '2026-12-02')).slots).toContain('11:00');
    const joining = await book((await m.client()).token, serviceId, { slots: [slot] });
    expect(joining.status).toBe(409);
    expect(joining.body).toMatchObject({ error: 'slot_unavailable' });
  });
});

describe('a slot that cannot be booked (409 slot_unavailable) says why, so the client knows what to choose', () => {
  it('names the rule: passed, too soon, too far ahead, outside the hours or start times, or taken (booking and move)', async () => {
    // Now is Tuesday 1 December 2026, 09:00 in Berlin; weekdays 09:00-17:00; 2 hours' notice, 60 days ahead.
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { minimumNoticeHours: 2, bookingWindowDays: 60 });
    const client = await m.client();
    const refused = async (slot: string) => {
      const res = await book(client.token, serviceId, { slots: [slot] });
      expect([res.status, res.body.error]).toEqual([409, 'slot_unavailable']);
      return res.body.message as string;
    };
    expect(await refused('2026-11-30T10:00')).toBe(
      '2026-11-30T10:00 has passed: choose a later slot of the availability',
    );
    expect(await refused('2026-12-01T10:00')).toBe(
      '2026-12-01T10:00 is too soon: this service is booked at least 2 hour(s) before its start',
    );
    expect(await refused('2027-02-15T10:00')).toBe(
      '2027-02-15T10:00 is too far ahead: this service is booked at most 60 day(s) ahead',
    );
    expect(await refused('2026-12-05T10:00')).toBe(
      "2026-12-05T10:00 is not a start time of this service within the coach's hours: choose a slot of the availability",
    );
    expect(await refused('2026-12-02T10:30')).toBe(
      "2026-12-02T10:30 is not a start time of this service within the coach's hours: choose a slot of the availability",
    );
    const first = await book((await m.client()).token, serviceId, { slots: ['2026-12-02T10:00'] });
    expect(first.status).toBe(200);
    expect(await refused('2026-12-02T10:00')).toBe(
      '2026-12-02T10:00 is taken: choose another slot of the availability',
    );
    const mine = await book(client.token, serviceId, { slots: ['2026-12-03T10:00'] });
    const moved = await t.request('POST', `/api/v1/session/${mine.body[0].id}/reschedule`, {
      token: client.token,
      body: { slot: '2026-12-02T10:00' },
    });
    expect([moved.status, moved.body.message]).toEqual([
      409,
      '2026-12-02T10:00 is taken: choose another slot of the availability',
    ]);
  });
});

describe("the coach's hours as one stretch of time", () => {
  it("books a session that runs on past midnight into the next day's hours, and it blocks them", async () => {
    // Wednesday night 22:00-24:00 and Thursday 00:00-02:00: one stretch of the coach's time.
    const coach = await m.coach({
      weekly: { wednesday: [{ start: '22:00', end: '24:00' }], thursday: [{ start: '00:00', end: '02:00' }] },
    });
    const serviceId = await m.offering(coach, { sessionMinutesDuration: 90 });
    const night = async () =>
      (
        await t.request(
          'GET',
          `/api/v1/service/${serviceId}/availability?from_date=2026-12-02&to_date=2026-12-03`,
        )
      ).body.slots.map((s: { slot: string }) => s.slot);
    expect(await night()).toEqual(['2026-12-02T22:00:00', '2026-12-02T23:30:00', '2026-12-03T00:00:00']);
    const res = await book((await m.client()).token, serviceId, { slots: ['2026-12-02T23:30:00'] });
    expect(res.status).toBe(200);
    expect(res.body[0]).toMatchObject({
      startsAt: '2026-12-02T22:30:00.000Z',
      endsAt: '2026-12-03T00:00:00.000Z',
      dayAvailability: 3,
    });
    // Thursday's 00:00 overlaps it; Wednesday's 22:00 (to 23:30) does not.
    expect(await night()).toEqual(['2026-12-02T22:00:00']);
  });

  it('drops overrides of days gone by (before yesterday in its zone) when set and when read', async () => {
    const coach = await m.coach({ timezone: 'Europe/Berlin' });
    const off = [] as { start: string; end: string }[];
    const put = await t.request('PUT', '/api/v1/coach/schedule', {
      token: coach.token,
      body: {
        timezone: 'Europe/Berlin',
        weekly: {},
        overrides: {
          '2025-12-24': off,
          '2026-11-29': off,
          '2026-11-30': off,
          '2026-12-01': off,
          '2026-12-24': off,
        },
      },
    });
    const kept = { '2026-11-30': off, '2026-12-01': off, '2026-12-24': off };
    expect([put.status, put.body.overrides]).toEqual([200, kept]);
    const read = await t.request('GET', '/api/v1/coach/schedule', { token: coach.token });
    expect(read.body.overrides).toEqual(kept);
    // One set long ago (written so, as before this rule): its days gone by are not read back either.
    await t.system.deps.store.append(`calendar-${coach.id}`, [
      {
        type: 'ScheduleSet',
        data: {
          coachId: coach.id,
          schedule: {
            timezone: 'Europe/Berlin',
            weekly: {},
            overrides: { '2026-01-01': off, '2026-12-31': off },
          },
          setAt: '2025-12-01T00:00:00.000Z',
        },
      },
    ]);
    const later = await eventually(
      () => t.request('GET', '/api/v1/coach/schedule', { token: coach.token }),
      (r) => '2026-12-31' in r.body.overrides,
    );
    expect(later.body.overrides).toEqual({ '2026-12-31': off });
  });

  it('reads back the schedule as last published (GET /api/v1/coach/schedule), so it can be changed', async () => {
    const coach = await m.coach({ timezone: 'europe/berlin', overrides: { '2026-12-24': [] } });
    const read = (token: string) => t.request('GET', '/api/v1/coach/schedule', { token });
    const hours = [{ start: '09:00', end: '17:00' }];
    expect((await read(coach.token)).body).toEqual({
      timezone: 'Europe/Berlin',
      weekly: { monday: hours, tuesday: hours, wednesday: hours, thursday: hours, friday: hours },
      overrides: { '2026-12-24': [] },
    });
    // Another day off, added to what is there: the next read has both.
    const now = (await read(coach.token)).body;
    const put = await t.request('PUT', '/api/v1/coach/schedule', {
      token: coach.token,
      body: { ...now, overrides: { ...now.overrides, '2026-12-31': [{ start: '10:00', end: '12:00' }] } },
    });
    expect(put.status).toBe(200);
    expect((await read(coach.token)).body.overrides).toEqual({
      '2026-12-24': [],
      '2026-12-31': [{ start: '10:00', end: '12:00' }],
    });
    // A coach that published none has no hours yet; who is no coach, or no caller, is told so.
    const fresh = await m.client();
    const freshCoach = t.token(fresh.id, ['coach']);
    expect((await read(freshCoach)).status).toBe(404);
    const newCoach = await t.request('PUT', `/api/v1/users/${fresh.id}`, {
      token: m.service(),
      body: { type: 'coach' },
    });
    expect(newCoach.status).toBe(200);
    expect((await read(freshCoach)).body).toEqual({ timezone: 'UTC', weekly: {}, overrides: {} });
    expect((await read(fresh.token)).status).toBe(403);
    expect((await t.request('GET', '/api/v1/coach/schedule')).status).toBe(401);
  });

  it("names what is wrong with a day's hours (422 at the day, the interval or its time)", async () => {
    const coach = await m.coach();
    const put = async (weekly: unknown, overrides?: unknown) =>
      (
        await t.request('PUT', '/api/v1/coach/schedule', {
          token: coach.token,
          body: { timezone: 'UTC', weekly, ...(overrides === undefined ? {} : { overrides }) },
        })
      ).body.detail;
    const h = (start: string, end: string) => ({ start, end });
    const list = 'Input should be a list of intervals {start, end}';
    expect(await put({ monday: null })).toEqual([
      { loc: ['body', 'weekly', 'monday'], msg: list, type: 'invalid_intervals' },
    ]);
    expect(await put({ monday: '09:00-12:00' })).toEqual([
      { loc: ['body', 'weekly', 'monday'], msg: list, type: 'invalid_intervals' },
    ]);
    expect(await put({}, { '2026-12-24': null })).toEqual([
      { loc: ['body', 'overrides', '2026-12-24'], msg: list, type: 'invalid_intervals' },
    ]);
    expect(await put({ monday: [h('09:00', '12:00'), h('11:00', '13:00')] })).toEqual([
      {
        loc: ['body', 'weekly', 'monday'],
        msg: 'intervals of one day should not overlap',
        type: 'invalid_intervals',
      },
    ]);
    // Hours run to 24:00 at the latest; a night is two days' hours (22:00-24:00, then 00:00-02:00).
    expect(await put({ monday: [h('22:00', '02:00')] })).toEqual([
      { loc: ['body', 'weekly', 'monday', 0], msg: 'end should be after start', type: 'invalid_interval' },
    ]);
    for (const [bad, at] of [
      [h('9:5', '10:00'), 'start'],
      [h('09:00', '25:00'), 'end'],
      [h('09:00:00', '10:00'), 'start'],
    ] as const)
      expect(await put({ monday: [bad] })).toEqual([
        {
          loc: ['body', 'weekly', 'monday', 0, at],
          msg: 'Input should be a time HH:mm',
          type: 'invalid_time',
        },
      ]);
    expect(await put({}, [])).toEqual([
      {
        loc: ['body', 'overrides'],
        msg: 'Input should be an object of dates YYYY-MM-DD, each with a list of intervals',
        type: 'invalid_overrides',
      },
    ]);
    expect(await put({}, { '2026-02-30': [] })).toEqual([
      {
        loc: ['body', 'overrides'],
        msg: 'keys should be dates YYYY-MM-DD (at most 400)',
        type: 'invalid_overrides',
      },
    ]);
  });

  it('offers a session spanning touching intervals (hours sent as hourly blocks)', async () => {
    const blocks = ['09', '10', '11'].map((h) => ({ start: `${h}:00`, end: `${Number(h) + 1}:00` }));
    const coach = await m.coach({ weekly: { wednesday: blocks } });
    const serviceId = await m.offering(coach, { sessionMinutesDuration: 90 });
    expect((await freeOn(serviceId, '2026-12-02')).slots).toEqual(['09:00', '10:00']);
    expect((await book((await m.client()).token, serviceId, { slots: ['2026-12-02T10:00:00'] })).status).toBe(
      200,
    );
  });
});
