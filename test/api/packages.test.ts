import { randomUUID } from 'node:crypto';
import { eventually } from '../support/marketplace';
import { type TestSystem } from '../support/system';
import { apiSuite, type Marketplace } from '../support/apiSuite';

let t: TestSystem;
let m: Marketplace;
const clock = apiSuite('2026-12-01T08:00:00Z', (system, market) => {
  t = system;
  m = market;
});

const book = (token: string, serviceId: string, body: Record<string, unknown>) =>
  t.request('POST', `/api/v1/service/${serviceId}`, { token, body });

const packageOf = (over: Record<string, unknown> = {}) => m.packageBought('2026-12-02T10:00:00', over);

/** The payment received (checkout, then received): an unpaid package is canceled at its deadline. */
const pay = async (paymentId: string) => {
  for (const status of ['checkout', 'received']) {
    const res = await t.request('POST', `/api/v1/payment/private/payment/${paymentId}/update`, {
      token: m.service(),
      body: { status },
    });
    expect(res.status).toBe(200);
  }
};

const packagesIn = async (token: string | undefined, serviceId: string) =>
  (
    await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?from_date=2026-12-02&to_date=2026-12-02`,
      {
        token,
      },
    )
  ).body.packages;

describe('packages booked in several steps (8 with packageId)', () => {
  it('books the rest of a 3-session package later: same group and payment, at most 3 sessions', async () => {
    const { coach, client, serviceId, first } = await packageOf();
    expect(await packagesIn(undefined, serviceId)).toEqual([]);
    expect(await packagesIn(client.token, serviceId)).toEqual([
      {
        packageId: first.groupId,
        serviceId,
        serviceName: 'Tennis basics',
        numberOfSessions: 3,
        bookedSessions: 1,
        remainingSessions: 2,
        expirationDate: '31/12/2026',
        expired: false,
        paymentState: 'awaiting',
        open: true,
      },
    ]);

    const second = await book(client.token, serviceId, {
      slots: ['2026-12-03T10:00:00'],
      packageId: first.groupId,
    });
    expect(second.status).toBe(200);
    expect(second.body).toHaveLength(1);
    expect(second.body[0]).toMatchObject({
      groupId: first.groupId,
      paymentId: first.paymentId,
      price: 30,
      state: 'new',
      expirationDate: '31/12/2026',
    });
    // Still one payment, for the whole package.
    const payment = await t.request('GET', `/api/v1/payment/${first.paymentId}`, { token: client.token });
    expect(payment.body).toMatchObject({ price: 90, status: 'awaiting' });

    const tooMany = await book(client.token, serviceId, {
      slots: ['2026-12-04T10:00:00', '2026-12-07T10:00:00'],
      packageId: first.groupId,
    });
    expect(tooMany.status).toBe(409);
    expect(tooMany.body).toEqual({
      error: 'package_exhausted',
      message: 'the package has 1 of 3 session(s) left',
      code: 409,
    });
    const third = await book(client.token, serviceId, {
      slots: ['2026-12-04T10:00:00'],
      packageId: first.groupId,
    });
    expect(third.status).toBe(200);
    const none = await book(client.token, serviceId, {
      slots: ['2026-12-07T10:00:00'],
      packageId: first.groupId,
    });
    expect(none.status).toBe(409);
    expect(none.body.error).toBe('package_exhausted');
    expect(await packagesIn(client.token, serviceId)).toEqual([]); // nothing left to book

    // The coach sees the client's package and what is left of it.
    const view = await eventually(
      async () => (await t.request('GET', `/api/v1/coach/client/${client.id}`, { token: coach.token })).body,
      (v) => v.packages?.[0]?.bookedSessions === 3,
    );
    expect(view.packages).toEqual([
      expect.objectContaining({
        packageId: first.groupId,
        bookedSessions: 3,
        remainingSessions: 0,
        open: false,
      }),
    ]);

    // A session of the package booked later is the client's like the others: the client cancels it, and the
    // package gets that session back.
    const cancel = await t.request('POST', `/api/v1/session/${third.body[0].id}/cancel`, {
      token: client.token,
    });
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ state: 'canceled', groupId: first.groupId });
    const again = await book(client.token, serviceId, {
      slots: ['2026-12-08T10:00:00'],
      packageId: first.groupId,
    });
    expect(again.status).toBe(200);
    const sessions = (await t.request('GET', '/api/v1/sessions', { token: client.token })).body as {
      groupId: string;
    }[];
    expect(sessions.filter((s) => s.groupId === first.groupId)).toHaveLength(4);
  });

  it("shows each session's share of the package price in its currency's minor unit", async () => {
    // 10000 JPY over 3 sessions is 3333 yen each (yen have no decimals), 10 BHD is 3.333 dinars (3 decimals).
    for (const [price, priceCurrency, share] of [
      [10000, 'JPY', 3333],
      [10, 'BHD', 3.333],
      [100, 'EUR', 33.33],
    ] as const) {
      const { client, first } = await packageOf({ price, priceCurrency });
      const session = await t.request('GET', `/api/v1/session/${first.id}`, { token: client.token });
      expect(session.body).toMatchObject({ price: share, currency: priceCurrency });
    }
  });

  it('shows a price sent with binary noise (0.1 + 0.2) as the amount it means, alike on every endpoint', async () => {
    // 0.1 + 0.2 is 0.30000000000000004 in JavaScript: within the minor unit's tolerance, so taken, and it
    // was stored and shown so on the service, the payment and the audit, while the session said 0.3.
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { price: 0.1 + 0.2 });
    const client = await m.client();
    const booked = await book(client.token, serviceId, { slots: ['2026-12-02T10:00:00'] });
    expect(booked.status).toBe(200);
    const { id, paymentId } = booked.body[0] as { id: string; paymentId: string };
    const auditor = t.token(randomUUID(), ['auditor']);
    const get = async (path: string, token?: string) => (await t.request('GET', path, { token })).body;
    const audit = await get(`/api/v1/audit/payments/${paymentId}/events`, auditor);
    expect([
      (await get(`/api/v1/service/${serviceId}`)).price,
      booked.body[0].price,
      (await get(`/api/v1/session/${id}`, client.token)).price,
      (await get(`/api/v1/payment/${paymentId}`, client.token)).price,
      audit.stateAt.price,
      audit.events[0].data.price,
    ]).toEqual([0.3, 0.3, 0.3, 0.3, 0.3, 0.3]);
    // An edit likewise: 0.7 + 0.1 is 0.7999999999999999.
    const edited = await t.request('PUT', `/api/v1/coach/services/${serviceId}`, {
      token: coach.token,
      body: { price: 0.7 + 0.1 },
    });
    expect(edited.body.price).toBe(0.8);
    expect((await get(`/api/v1/service/${serviceId}`)).price).toBe(0.8);
  });

  it('answers a later session of the package with its own place and notes, as GET shows it', async () => {
    const { coach, client, serviceId } = await packageOf();
    const first = await book(client.token, serviceId, {
      slots: ['2026-12-03T10:00:00'],
      address: 'Court 1, Main St',
      orderDescription: 'first lesson',
    });
    const later = await book(client.token, serviceId, {
      slots: ['2026-12-04T10:00:00'],
      packageId: first.body[0].groupId,
      address: 'Beach court 7',
      position: { lat: 52.52, lng: 13.4 },
      orderDescription: 'serve practice',
    });
    expect(later.status).toBe(200);
    const id = later.body[0].id;
    const place = (s: Record<string, unknown>) => [s.clientAddress, s.clientLocation, s.orderDescription];
    expect(place(later.body[0])).toEqual(['Beach court 7', { lat: 52.52, lng: 13.4 }, 'serve practice']);
    const approved = await t.request('POST', `/api/v1/session/${id}/approve`, { token: coach.token });
    expect(approved.body.state).toBe('approved');
    expect(place(approved.body)).toEqual(place(later.body[0]));
    const read = await t.request('GET', `/api/v1/session/${id}`, { token: client.token });
    expect(read.body).toEqual(approved.body);
  });

  it('a later session held at the length the service has now says that length (minutesDuration)', async () => {
    const { coach, client, serviceId, first } = await packageOf();
    const longer = await t.request('PUT', `/api/v1/coach/services/${serviceId}`, {
      token: coach.token,
      body: { sessionMinutesDuration: 90, price: 300 },
    });
    expect(longer.status).toBe(200);
    const later = await book(client.token, serviceId, {
      slots: ['2026-12-03T10:30:00'],
      packageId: first.groupId,
    });
    expect(later.status).toBe(200);
    const s = later.body[0];
    const held = (Date.parse(s.endsAt) - Date.parse(s.startsAt)) / 60_000;
    expect([held, s.minutesDuration, s.price]).toEqual([90, 90, 30]); // the package's price, as bought
    const read = await t.request('GET', `/api/v1/session/${s.id}`, { token: client.token });
    expect(read.body.minutesDuration).toBe(90);
  });

  it("only the package's client, for its service, while its payment is open", async () => {
    const { coach, client, serviceId, first } = await packageOf();
    const stranger = await m.client();
    const notYours = await book(stranger.token, serviceId, {
      slots: ['2026-12-03T10:00:00'],
      packageId: first.groupId,
    });
    expect(notYours.status).toBe(404);
    expect(notYours.body.error).toBe('package_not_found');
    const unknown = await book(client.token, serviceId, {
      slots: ['2026-12-03T10:00:00'],
      packageId: randomUUID(),
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('package_not_found');
    const otherService = await m.offering(coach, { numberOfSessions: 3 });
    const wrongService = await book(client.token, otherService, {
      slots: ['2026-12-03T10:00:00'],
      packageId: first.groupId,
    });
    expect(wrongService.status).toBe(422);
    expect(wrongService.body).toEqual({
      detail: [
        { loc: ['body', 'packageId'], msg: 'packageId is a booking of another service', type: 'value_error' },
      ],
    });

    const canceled = await t.request('POST', `/api/v1/payment/private/payment/${first.paymentId}/cancel`, {
      token: m.service(),
    });
    expect(canceled.status).toBe(200);
    const afterCancel = await book(client.token, serviceId, {
      slots: ['2026-12-03T10:00:00'],
      packageId: first.groupId,
    });
    expect(afterCancel.status).toBe(409);
    expect(afterCancel.body.error).toBe('package_canceled');
  });

  it("a package of another coach's service is 422 at packageId, as one of the same coach's is", async () => {
    const { client, first } = await packageOf();
    const elsewhere = await m.coach();
    const wanted = { slots: ['2026-12-03T10:00:00'], packageId: first.groupId };
    const wrongService = {
      detail: [
        { loc: ['body', 'packageId'], msg: 'packageId is a booking of another service', type: 'value_error' },
      ],
    };
    for (const over of [{ numberOfSessions: 3 }, {}]) {
      const otherCoachService = await m.offering(elsewhere, over);
      const res = await book(client.token, otherCoachService, wanted);
      expect([res.status, res.body]).toEqual([422, wrongService]);
    }
    // Still 404 to anyone but the package's client: the id tells a stranger nothing.
    const stranger = await m.client();
    const notYours = await book(stranger.token, await m.offering(elsewhere, { numberOfSessions: 3 }), wanted);
    expect([notYours.status, notYours.body.error]).toEqual([404, 'package_not_found']);
  });

  it('books no later session before an unpaid package is due to be paid', async () => {
    const { client, serviceId, first } = await packageOf();
    // Booked 1 December 08:00Z for 2 December 10:00 Berlin: to be paid by 2 December 08:00Z, else canceled.
    // A session today would take place before that: the coach would work for a payment that can expire.
    const early = await book(client.token, serviceId, {
      slots: ['2026-12-01T15:00:00'],
      packageId: first.groupId,
    });
    expect(early.status).toBe(409);
    expect(early.body).toEqual({
      error: 'package_unpaid',
      message:
        '2026-12-01T15:00:00 starts before the package is paid: until it is, its sessions start from 2026-12-02T09:00:00.000Z',
      code: 409,
    });
    const later = await book(client.token, serviceId, {
      slots: ['2026-12-02T11:00:00'],
      packageId: first.groupId,
    });
    expect(later.status).toBe(200);

    const service = t.token(randomUUID(), ['service']);
    for (const status of ['checkout', 'received'])
      expect(
        (
          await t.request('POST', `/api/v1/payment/private/payment/${first.paymentId}/update`, {
            token: service,
            body: { status },
          })
        ).status,
      ).toBe(200);
    const paid = await book(client.token, serviceId, {
      slots: ['2026-12-01T15:00:00'],
      packageId: first.groupId,
    });
    expect(paid.status).toBe(200);
  });

  it('books nothing on an unpaid package once its payment deadline has passed, also before the expiry sweep', async () => {
    // Booked 1 December 08:00Z for 3 December: to be paid by 2 December 08:00Z, else canceled with its
    // sessions. A session booked after that deadline was answered 200 (new), then canceled by the sweep.
    const { client, serviceId, first } = await m.packageBought('2026-12-03T10:00:00');
    const packages = async () =>
      (
        await t.request(
          'GET',
          `/api/v1/service/${serviceId}/availability?from_date=2026-12-10&to_date=2026-12-10`,
          { token: client.token },
        )
      ).body.packages as { open: boolean }[];
    clock.set('2026-12-02T07:59:59Z');
    expect(await packages()).toEqual([expect.objectContaining({ packageId: first.groupId, open: true })]);
    clock.set('2026-12-02T08:00:00Z');
    const due = await book(client.token, serviceId, {
      slots: ['2026-12-10T10:00:00'],
      packageId: first.groupId,
    });
    expect([due.status, due.body.error]).toEqual([409, 'package_canceled']);
    // (The expiry sweep, running every few seconds, may have canceled the payment a moment before.)
    expect([
      "the package's payment was not made by its deadline, 2026-12-02T08:00:00.000Z",
      "the package's payment was canceled or refunded",
    ]).toContain(due.body.message);
    expect(await packages()).toEqual([]);

    // A package paid in time books on past its payment deadline.
    clock.set('2026-12-01T08:00:00Z');
    const paid = await m.packageBought('2026-12-03T10:00:00');
    const service = t.token(randomUUID(), ['service']);
    for (const status of ['checkout', 'received'])
      expect(
        (
          await t.request('POST', `/api/v1/payment/private/payment/${paid.first.paymentId}/update`, {
            token: service,
            body: { status },
          })
        ).status,
      ).toBe(200);
    clock.set('2026-12-02T08:00:00Z');
    const later = await book(paid.client.token, paid.serviceId, {
      slots: ['2026-12-10T10:00:00'],
      packageId: paid.first.groupId,
    });
    expect(later.status).toBe(200);
  });

  it('enforces the expiration date: no booking after it, and no session past it', async () => {
    const { client, serviceId, first } = await packageOf({ expiresInDays: 3 });
    await pay(first.paymentId); // (unpaid, it would be canceled at its deadline, 2 December)
    // Booked 1 December + 3 days: usable until the end of 4 December (Berlin).
    const late = await book(client.token, serviceId, {
      slots: ['2026-12-07T10:00:00'],
      packageId: first.groupId,
    });
    expect(late.status).toBe(409);
    expect(late.body).toEqual({
      error: 'package_expired',
      message: "2026-12-07T10:00:00 is after the package's expiration date",
      code: 409,
    });
    clock.set('2026-12-04T12:00:00Z'); // 13:00 in Berlin on the last day: still usable
    const lastDay = await book(client.token, serviceId, {
      slots: ['2026-12-04T16:00:00'],
      packageId: first.groupId,
    });
    expect(lastDay.status).toBe(200);
    clock.set('2026-12-04T23:01:00Z'); // 00:01 on 5 December in Berlin
    const expired = await book(client.token, serviceId, {
      slots: ['2026-12-08T10:00:00'],
      packageId: first.groupId,
    });
    expect(expired.status).toBe(409);
    expect(expired.body).toEqual({ error: 'package_expired', message: 'the package has expired', code: 409 });
    const view = await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?from_date=2026-12-08&to_date=2026-12-08`,
      {
        token: client.token,
      },
    );
    expect(view.body.packages).toEqual([]);
  });

  it("refuses a session past the package's expiration date in its first request too, as later", async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 3, price: 90, expiresInDays: 3 });
    const client = await m.client();
    // Booked 1 December + 3 days: its sessions take place by the end of 4 December (Berlin).
    const past = await book(client.token, serviceId, {
      slots: ['2026-12-02T10:00:00', '2026-12-07T10:00:00'],
    });
    expect(past.status).toBe(409);
    expect(past.body).toEqual({
      error: 'package_expired',
      message: "2026-12-07T10:00:00 is after the package's expiration date",
      code: 409,
    });
    const slots = await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?from_date=2026-12-02&to_date=2026-12-02`,
    );
    expect(slots.body.slots.map((x: { slot: string }) => x.slot)).toContain('2026-12-02T10:00:00');
    const within = await book(client.token, serviceId, {
      slots: ['2026-12-02T10:00:00', '2026-12-04T16:00:00'],
    });
    expect(within.status).toBe(200);
    expect(within.body[0].expirationDate).toBe('04/12/2026');
  });

  it("offers a package's slots (6, 11) only up to the expiration date a purchase now would have, each day further", async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, {
      numberOfSessions: 3,
      price: 90,
      expiresInDays: 2,
      bookingWindowDays: 30,
    });
    const days = async () => {
      const [one, all] = await Promise.all([
        t.request('GET', `/api/v1/service/${serviceId}/availability?from_date=2026-12-01&to_date=2026-12-08`),
        t.request('GET', `/api/v1/coach/${coach.id}/availability?from_date=2026-12-01&to_date=2026-12-08`),
      ]);
      expect(all.body.services[0].slots).toEqual(one.body.slots);
      return [...new Set(one.body.slots.map((x: { slot: string }) => x.slot.slice(0, 10)))];
    };
    // Bought on Tuesday 1 December (09:00 in Berlin) + 2 days: sessions by the end of Thursday 3 December.
    expect(await days()).toEqual(['2026-12-01', '2026-12-02', '2026-12-03']);
    const client = await m.client();
    const last = await book(client.token, serviceId, { slots: ['2026-12-03T16:00:00'] });
    expect(last.status).toBe(200);
    expect(last.body[0].expirationDate).toBe('03/12/2026');
    // The next local midnight moves the last day on (a cached answer included).
    clock.set('2026-12-01T22:59:00Z');
    expect(await days()).toEqual(['2026-12-02', '2026-12-03']);
    clock.set('2026-12-01T23:00:00Z'); // 00:00 on Wednesday 2 December in Berlin
    expect(await days()).toEqual(['2026-12-02', '2026-12-03', '2026-12-04']);
    // A one-session service is not a package: its window alone counts.
    const single = await m.offering(coach, { expiresInDays: 2, bookingWindowDays: 30 });
    const open = await t.request(
      'GET',
      `/api/v1/service/${single}/availability?from_date=2026-12-07&to_date=2026-12-07`,
    );
    expect(open.body.slots.length).toBeGreaterThan(0);
  });

  it('counts expiresInDays in calendar days across a DST change: booked at 00:30, usable to the end of day + n', async () => {
    clock.set('2026-10-19T22:30:00Z'); // 00:30 on Tuesday 20 October in Berlin (CEST); the clocks go back on the 25th
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 3, price: 90, expiresInDays: 10 });
    const client = await m.client();
    const first = await book(client.token, serviceId, { slots: ['2026-10-21T10:00:00'] });
    expect(first.status).toBe(200);
    // 20 October + 10 days is 30 October (10 × 24 h would end at 23:30 on the 29th).
    expect(first.body[0].expirationDate).toBe('30/10/2026');
    await pay(first.body[0].paymentId);
    const view = await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?from_date=2026-10-21&to_date=2026-10-21`,
      { token: client.token },
    );
    expect(view.body.packages[0]).toMatchObject({ expirationDate: '30/10/2026', open: true });
    const lastDay = await book(client.token, serviceId, {
      slots: ['2026-10-30T10:00:00'],
      packageId: first.body[0].groupId,
    });
    expect(lastDay.status).toBe(200);
    expect(lastDay.body[0].expirationDate).toBe('30/10/2026');
    clock.set('2026-10-30T22:59:59.999Z'); // 23:59:59.999 on the 30th (CET): the last instant it is open
    const stillOpen = await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?from_date=2026-10-31&to_date=2026-10-31`,
      { token: client.token },
    );
    expect(stillOpen.body.packages[0]).toMatchObject({ expired: false });
    clock.set('2026-10-30T23:00:00Z'); // 00:00 on the 31st
    const after = await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?from_date=2026-10-31&to_date=2026-10-31`,
      { token: client.token },
    );
    expect(after.body.packages).toEqual([]);
  });

  it('books nothing more once its last session is canceled, also a free package (whose payment stays received)', async () => {
    const { client, serviceId, first } = await packageOf({ price: 0 });
    expect(first).toMatchObject({ paymentState: 'received' });
    const cancel = await t.request('POST', `/api/v1/session/${first.id}/cancel`, { token: client.token });
    expect(cancel.status).toBe(200);
    const again = await book(client.token, serviceId, {
      slots: ['2026-12-03T10:00:00'],
      packageId: first.groupId,
    });
    expect([again.status, again.body.error]).toEqual([409, 'package_canceled']);
    // Nor is it offered as a package with sessions left to book.
    expect(await packagesIn(client.token, serviceId)).toEqual([]);
    const payment = await t.request('GET', `/api/v1/payment/${first.paymentId}`, { token: client.token });
    expect(payment.body).toMatchObject({ status: 'received' });
  });
});

describe('a package of a service withdrawn after it was sold', () => {
  it('keeps its remaining sessions bookable by its client (and their slots shown to them); new sales stop', async () => {
    clock.set('2026-12-01T08:00:00Z');
    const { client, serviceId, first } = await packageOf();
    const withdrawn = await t.request('POST', `/api/v1/admin/services/${serviceId}/reject`, {
      token: t.token(randomUUID(), ['admin']),
      body: { reason: 'complaint under review' },
    });
    expect(withdrawn.status).toBe(200);
    expect(withdrawn.body.status).toBe('rejected');

    const stranger = await m.client();
    const sale = await book(stranger.token, serviceId, { slots: ['2026-12-02T12:00:00'] });
    expect(sale.status).toBe(404);
    expect(sale.body).toMatchObject({ error: 'service_not_found' });
    const range = `/api/v1/service/${serviceId}/availability?from_date=2026-12-02&to_date=2026-12-02`;
    expect((await t.request('GET', range, { token: stranger.token })).status).toBe(404);
    expect((await t.request('GET', range)).status).toBe(404);

    const shown = await t.request('GET', range, { token: client.token });
    expect(shown.status).toBe(200);
    expect(shown.body.slots.map((s: { slot: string }) => s.slot)).toContain('2026-12-02T12:00:00');
    expect(shown.body.packages).toEqual([
      expect.objectContaining({ packageId: first.groupId, remainingSessions: 2 }),
    ]);
    const owed = await book(client.token, serviceId, {
      slots: ['2026-12-02T12:00:00'],
      packageId: first.groupId,
    });
    expect(owed.status).toBe(200);
    expect(owed.body[0]).toMatchObject({ groupId: first.groupId });
    // Without its package, the same client buys nothing new either.
    expect((await book(client.token, serviceId, { slots: ['2026-12-02T14:00:00'] })).status).toBe(404);
  });

  it('shows the withdrawn service to its package client on 7 and 11 as on 6; to no one else', async () => {
    clock.set('2026-12-01T08:00:00Z');
    const { coach, client, serviceId, first } = await packageOf();
    const other = await m.offering(coach, { name: 'Still sold' });
    const admin = t.token(randomUUID(), ['admin']);
    expect(
      (await t.request('POST', `/api/v1/admin/services/${serviceId}/reject`, { token: admin })).status,
    ).toBe(200);
    const stranger = await m.client();
    const service = `/api/v1/service/${serviceId}`;
    const shown = await t.request('GET', service, { token: client.token });
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ id: serviceId, status: 'rejected', numberOfSessions: 3 });
    expect((await t.request('GET', service, { token: stranger.token })).status).toBe(404);
    expect((await t.request('GET', service)).status).toBe(404);

    const range = `/api/v1/coach/${coach.id}/availability?from_date=2026-12-02&to_date=2026-12-02`;
    const offered = (body: { services: { service: { id: string } }[] }) =>
      body.services.map((s) => s.service.id).sort();
    const mine = await t.request('GET', range, { token: client.token });
    expect(mine.status).toBe(200);
    expect(offered(mine.body)).toEqual([serviceId, other].sort());
    const owed = mine.body.services.find((s: { service: { id: string } }) => s.service.id === serviceId);
    expect(owed.slots.map((s: { slot: string }) => s.slot)).toContain('2026-12-02T12:00:00');
    expect(owed.packages).toEqual([expect.objectContaining({ packageId: first.groupId, open: true })]);
    expect(offered((await t.request('GET', range, { token: stranger.token })).body)).toEqual([other]);
    expect(offered((await t.request('GET', range)).body)).toEqual([other]);

    // Once the package is used up, the withdrawn service is gone for its client too.
    for (const slot of ['2026-12-02T12:00:00', '2026-12-02T14:00:00'])
      expect((await book(client.token, serviceId, { slots: [slot], packageId: first.groupId })).status).toBe(
        200,
      );
    expect((await t.request('GET', service, { token: client.token })).status).toBe(404);
    expect(offered((await t.request('GET', range, { token: client.token })).body)).toEqual([other]);
  });
});
