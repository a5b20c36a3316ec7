import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { SlotsReserved } from '../../commands/calendar/events';
import { eventually } from '../support/marketplace';
import { type TestSystem } from '../support/system';
import { apiSuite, type Marketplace } from '../support/apiSuite';

/**
 * The time rules of booking and of the session lifecycle, walked at their exact edges on the injected
 * clock: the last instant that is allowed and the millisecond after it.
 */
let t: TestSystem;
let m: Marketplace;
const clock = apiSuite('2026-12-01T08:00:00Z', (system, market) => {
  t = system;
  m = market;
});

const SLOT = '2026-12-02T10:00:00'; // Berlin: 09:00-10:00 UTC
const START = Date.parse('2026-12-02T09:00:00Z');
const END = Date.parse('2026-12-02T10:00:00Z');
const HOUR = 3_600_000;
const DAY = 86_400_000;
const at = (ms: number) => clock.set(new Date(ms).toISOString());
const act = (token: string, sessionId: string, action: string, body?: unknown) =>
  t.request('POST', `/api/v1/session/${sessionId}/${action}`, { token, body });
const book = (token: string, serviceId: string, body: Record<string, unknown>) =>
  t.request('POST', `/api/v1/service/${serviceId}`, { token, body });
const seatsAt = async (serviceId: string, slot: string) =>
  (
    await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?from_date=${slot.slice(0, 10)}&to_date=${slot.slice(0, 10)}`,
    )
  ).body.slots.find((s: { slot: string }) => s.slot === slot)?.remainingSeats ?? 0;

describe('booking: minimum notice and booking window, to the millisecond', () => {
  it('books a slot exactly minimumNoticeHours ahead, not a millisecond later; and exactly bookingWindowDays ahead, not a millisecond sooner', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { minimumNoticeHours: 5, bookingWindowDays: 2 });
    const client = await m.client();
    at(START - 5 * HOUR + 1);
    expect(await seatsAt(serviceId, SLOT)).toBe(0);
    expect((await book(client.token, serviceId, { slots: [SLOT] })).body.error).toBe('slot_unavailable');
    at(START - 5 * HOUR);
    expect(await seatsAt(serviceId, SLOT)).toBe(1);
    expect((await book(client.token, serviceId, { slots: [SLOT] })).status).toBe(200);

    const later = Date.parse('2026-12-03T09:00:00Z');
    at(later - 2 * DAY - 1);
    expect(await seatsAt(serviceId, '2026-12-03T10:00:00')).toBe(0);
    expect((await book(client.token, serviceId, { slots: ['2026-12-03T10:00:00'] })).body.error).toBe(
      'slot_unavailable',
    );
    at(later - 2 * DAY);
    expect(await seatsAt(serviceId, '2026-12-03T10:00:00')).toBe(1);
    expect((await book(client.token, serviceId, { slots: ['2026-12-03T10:00:00'] })).status).toBe(200);
  });
});

describe('session actions at the edges of their windows', () => {
  it('cancel up to sessionCancellationHours before, complete from the start, dispute until 30 days after the end', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { sessionCancellationHours: 24 });
    const client = await m.client();
    const [a, b] = await Promise.all([
      book(client.token, serviceId, { slots: [SLOT] }),
      book(client.token, serviceId, { slots: ['2026-12-02T12:00:00'] }),
    ]);
    const id = a.body[0].id;
    at(START - 24 * HOUR + 1);
    expect((await act(client.token, id, 'cancel')).body.error).toBe('cancellation_window_passed');
    // The other booking, 3 hours later, is still inside its window at this instant.
    at(Date.parse('2026-12-02T11:00:00Z') - 24 * HOUR);
    expect((await act(client.token, b.body[0].id, 'cancel')).body.state).toBe('canceled');

    expect((await act(coach.token, id, 'approve')).body.state).toBe('approved');
    at(START - 1);
    expect((await act(coach.token, id, 'complete')).body.message).toBe('the session has not started yet');
    at(START);
    expect((await act(client.token, id, 'cancel')).body.error).toBe('invalid_transition');
    expect((await act(coach.token, id, 'complete')).body.state).toBe('completed');
    // A completed session keeps its time: the slot does not come back.
    expect(await seatsAt(serviceId, SLOT)).toBe(0);
    at(END + 30 * DAY + 1);
    expect((await act(client.token, id, 'dispute', { reason: 'short' })).body.message).toBe(
      'disputes are possible for 30 days after the session',
    );
    at(END + 30 * DAY);
    expect((await act(client.token, id, 'dispute', { reason: 'short' })).body.state).toBe('disputed');
  });

  it('a session the coach completed late may be disputed for 30 days from its completion, not from its end', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const id = (await book(client.token, serviceId, { slots: [SLOT] })).body[0].id;
    expect((await act(coach.token, id, 'approve')).body.state).toBe('approved');
    // The coach marks it completed 40 days after it ended: the client's 30 days had run out by then.
    const completed = END + 40 * DAY;
    at(completed);
    expect((await act(coach.token, id, 'complete')).body.state).toBe('completed');
    at(completed + 30 * DAY + 1);
    expect((await act(client.token, id, 'dispute', { reason: 'no show' })).body.message).toBe(
      'disputes are possible for 30 days after the session',
    );
    at(completed + 30 * DAY);
    expect((await act(client.token, id, 'dispute', { reason: 'no show' })).body.state).toBe('disputed');
  });

  it('approves a session until its end, not at it', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const [a, b] = await Promise.all([
      book(client.token, serviceId, { slots: [SLOT] }),
      book(client.token, serviceId, { slots: ['2026-12-02T12:00:00'] }),
    ]);
    at(END - 1);
    expect((await act(coach.token, a.body[0].id, 'approve')).body.state).toBe('approved');
    at(Date.parse('2026-12-02T12:00:00Z'));
    expect((await act(coach.token, b.body[0].id, 'approve')).body).toMatchObject({
      error: 'invalid_transition',
      message: 'the session is over',
    });
  });
});

describe('a group slot', () => {
  it("one client's cancel gives back one seat and leaves the others booked", async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { groupSession: true, maxGroupSize: 3 });
    const [a, b] = [await m.client(), await m.client()];
    const ra = await book(a.token, serviceId, { slots: [SLOT] });
    const rb = await book(b.token, serviceId, { slots: [SLOT] });
    expect([ra.status, rb.status]).toEqual([200, 200]);
    expect(await seatsAt(serviceId, SLOT)).toBe(1);
    expect((await act(a.token, ra.body[0].id, 'cancel')).body.state).toBe('canceled');
    expect(await seatsAt(serviceId, SLOT)).toBe(2);
    expect((await t.request('GET', `/api/v1/session/${rb.body[0].id}`, { token: b.token })).body.state).toBe(
      'new',
    );
    expect((await act(coach.token, rb.body[0].id, 'decline')).body.state).toBe('declined');
    expect(await seatsAt(serviceId, SLOT)).toBe(3);
  });
});

describe("a package's session booked after the coach changed the schedule's zone", () => {
  it("is e-mailed at its right time, in the booking's zone", async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 2, price: 80 });
    const client = await m.client();
    const first = await book(client.token, serviceId, { slots: [SLOT] });
    expect(first.status).toBe(200);
    const hours = [{ start: '09:00', end: '17:00' }];
    const moved = await t.request('PUT', '/api/v1/coach/schedule', {
      token: coach.token,
      body: { timezone: 'Asia/Tokyo', weekly: { thursday: hours } },
    });
    expect(moved.status).toBe(200);
    // 10:00 in Tokyo on 3 December is 01:00Z, 02:00 in Berlin.
    const later = await book(client.token, serviceId, {
      slots: ['2026-12-03T10:00:00'],
      packageId: first.body[0].groupId,
    });
    expect(later.status).toBe(200);
    expect(later.body[0]).toMatchObject({
      slot: '2026-12-03T10:00:00',
      startsAt: '2026-12-03T01:00:00.000Z',
    });
    expect((await act(coach.token, later.body[0].id, 'approve')).body.state).toBe('approved');
    const outbox = path.join(t.config.dataDir, 'outbox');
    const approvals = await eventually(
      async () =>
        fs
          .readdirSync(outbox)
          .map((f) => fs.readFileSync(path.join(outbox, f), 'utf8').replace(/=\r?\n/g, ''))
          .filter(
            (c) => c.includes(`To: ${client.id.slice(0, 8)}@`) && c.includes('X-Coaching-Template: approve'),
          ),
      (l) => l.length > 0,
    );
    expect(approvals).toHaveLength(1);
    expect(approvals[0]).toContain('2026-12-03 02:00 (Europe/Berlin)');
    expect(approvals[0]).not.toContain('2026-12-03 10:00 (Europe/Berlin)');
    // The booking e-mails of the later session name it in the same zone (not in the coach's new one).
    const bookingMails = fs
      .readdirSync(outbox)
      .map((f) => fs.readFileSync(path.join(outbox, f), 'utf8').replace(/=\r?\n/g, ''))
      .filter((c) => c.includes('X-Coaching-Template: booking') && c.includes('2026-12-03'))
      .filter((c) => [client, coach].some((u) => c.includes(`To: ${u.id.slice(0, 8)}@`)));
    expect(bookingMails).toHaveLength(2); // client and coach
    for (const mail of bookingMails) {
      expect(mail).toContain('2026-12-03 02:00 (Europe/Berlin)');
      expect(mail).not.toContain('Asia/Tokyo');
    }
  });

  it("shows the package's expirationDate in the zone it was booked in, as it is enforced", async () => {
    clock.set('2026-12-01T21:30:00Z'); // 22:30 in Berlin, already 06:30 on 2 December in Tokyo
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 3, price: 90, expiresInDays: 3 });
    const client = await m.client();
    const first = await book(client.token, serviceId, { slots: [SLOT] });
    expect(first.body[0].expirationDate).toBe('04/12/2026'); // 1 December + 3 days, Berlin
    const hours = [{ start: '09:00', end: '17:00' }];
    await t.request('PUT', '/api/v1/coach/schedule', {
      token: coach.token,
      body: { timezone: 'Asia/Tokyo', weekly: { thursday: hours } },
    });
    const later = await book(client.token, serviceId, {
      slots: ['2026-12-03T10:00:00'],
      packageId: first.body[0].groupId,
    });
    expect(later.status).toBe(200);
    expect(later.body[0].expirationDate).toBe('04/12/2026');
    const read = await eventually(
      () => t.request('GET', `/api/v1/session/${later.body[0].id}`, { token: client.token }),
      (r) => r.status === 200,
    );
    expect(read.body.expirationDate).toBe('04/12/2026');
    expect(read.body.paymentExpirationAt).toBe(first.body[0].paymentExpirationAt);
    const packages = await t.request(
      'GET',
      `/api/v1/service/${serviceId}/availability?from_date=2026-12-03&to_date=2026-12-03`,
      { token: client.token },
    );
    expect(packages.body.packages).toEqual([
      expect.objectContaining({ expirationDate: '04/12/2026', remainingSessions: 1 }),
    ]);
    const listed = await t.request('GET', `/api/v1/sessions?as=client`, { token: client.token });
    expect(listed.body.map((x: { expirationDate: string }) => x.expirationDate)).toEqual([
      '04/12/2026',
      '04/12/2026',
    ]);
  });
});

describe("a package's later session whose booking request died after its hold", () => {
  it('is joined to the package by the booking process, found by its client, and can be canceled', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 3, price: 90 });
    const client = await m.client();
    const first = await book(client.token, serviceId, { slots: [SLOT] });
    expect(first.status).toBe(200);
    const { groupId, paymentId } = first.body[0];
    const store = t.system.deps.store;
    const calendar = `calendar-${coach.id}`;
    const { events, revision } = await store.readStream(calendar);
    const pkg = events.find((e) => e.type === 'SlotsReserved')!.data as SlotsReserved['data'];
    const sessionId = randomUUID();
    // Exactly the hold the route appends for a later session; the request then "crashes".
    await store.append(
      calendar,
      [
        {
          type: 'SlotsReserved',
          data: {
            ...pkg,
            sessions: [
              {
                sessionId,
                startsAt: '2026-12-03T09:00:00.000Z',
                endsAt: '2026-12-03T10:00:00.000Z',
                slot: '2026-12-03T10:00:00',
              },
            ],
            reservedAt: clock.now.toISOString(),
            packageTopUp: { bookedAt: pkg.reservedAt },
          },
        },
      ],
      { expectedRevision: revision },
    );
    const read = await eventually(
      () => t.request('GET', `/api/v1/session/${sessionId}`, { token: client.token }),
      (r) => r.status === 200,
    );
    expect(read.body).toMatchObject({ groupId, paymentId, state: 'new', slot: '2026-12-03T10:00:00' });
    const booked = (await store.readStream(`booking-${groupId}`)).events.filter(
      (e) => e.type === 'SessionsBooked',
    );
    expect(booked).toHaveLength(2);
    expect((await store.readStream(`payment-${paymentId}`)).events).toHaveLength(1); // no new payment
    expect(await seatsAt(serviceId, '2026-12-03T10:00:00')).toBe(0);
    // Its client finds it (the client's list was healed too) and cancels it: the slot comes back, and the
    // package keeps its payment (its first session remains).
    const canceled = await eventually(
      () => act(client.token, sessionId, 'cancel'),
      (r) => r.status === 200,
    );
    expect(canceled.body.state).toBe('canceled');
    expect(await seatsAt(serviceId, '2026-12-03T10:00:00')).toBe(1);
    expect(
      (await t.request('GET', `/api/v1/payment/${paymentId}`, { token: client.token })).body.status,
    ).toBe('awaiting');
  });
});
