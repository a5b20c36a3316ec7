import { randomUUID } from 'node:crypto';
import { calendarStream } from '../../commands/calendar/events';
import { bookingStream } from '../../commands/booking/events';
import { paymentStream } from '../../commands/payments/events';
import { bookingTerms, eventually, holdData } from '../support/marketplace';
import { type TestSystem } from '../support/system';
import { apiSuite, type Marketplace } from '../support/apiSuite';

let t: TestSystem;
let m: Marketplace;
const clock = apiSuite('2026-12-01T08:00:00Z', (system, market) => {
  t = system;
  m = market;
});

const SLOT = '2026-12-02T10:00:00'; // 09:00-10:00 UTC
const act = (token: string, sessionId: string, action: string, body?: unknown) =>
  t.request('POST', `/api/v1/session/${sessionId}/${action}`, { token, body });
const freeSlots = (serviceId: string) => m.freeSlotsOn(serviceId, '2026-12-02');
const sessionAs = (token: string, id: string) => m.sessionAs(token, id);

const booked = (over: Record<string, unknown> = {}) => m.sessionBooked(SLOT, over);

describe('session lifecycle', () => {
  it('approve, complete, review: the rating and session count reach the public profile', async () => {
    const { coach, client, session } = await booked();
    const approved = await act(coach.token, session.id, 'approve');
    expect(approved.status).toBe(200);
    expect(approved.body.state).toBe('approved');
    expect((await act(coach.token, session.id, 'complete')).body).toMatchObject({
      error: 'invalid_transition',
      message: 'the session has not started yet',
    });
    clock.set('2026-12-02T10:05:00Z');
    expect((await act(coach.token, session.id, 'complete')).body.state).toBe('completed');
    const review = await act(client.token, session.id, 'review', {
      rating: 4,
      comment: 'great backhand drills',
    });
    expect(review.status).toBe(200);
    expect(review.body.reviewed).toBe(true);
    const twice = await act(client.token, session.id, 'review', { rating: 5 });
    expect(twice.status).toBe(409);
    expect(twice.body.error).toBe('already_reviewed');
    const profile = await t.request('GET', `/api/v1/coach/${coach.id}/profile`);
    expect(profile.body).toMatchObject({ rating: 4, sessionCount: 1 });
    const reviews = await t.request('GET', `/api/v1/service/${coach.id}/reviews`);
    expect(reviews.body[0]).toMatchObject({
      rating: 4,
      comment: 'great backhand drills',
      sessionId: session.id,
    });
  });

  it('reads an optional reason or comment sent as null as not sent, as the booking body does', async () => {
    const declined = await booked();
    const res = await act(declined.coach.token, declined.session.id, 'decline', { reason: null });
    expect([res.status, res.body.state]).toEqual([200, 'declined']);
    clock.set('2026-12-01T08:00:00Z');
    const canceled = await booked();
    const cancel = await act(canceled.client.token, canceled.session.id, 'cancel', { reason: null });
    expect([cancel.status, cancel.body.state]).toEqual([200, 'canceled']);
    const reviewed = await booked();
    await act(reviewed.coach.token, reviewed.session.id, 'approve');
    clock.set('2026-12-02T10:05:00Z');
    await act(reviewed.coach.token, reviewed.session.id, 'complete');
    const review = await act(reviewed.client.token, reviewed.session.id, 'review', {
      rating: 5,
      comment: null,
    });
    expect([review.status, review.body.reviewed]).toEqual([200, true]);
    const reviews = await t.request('GET', `/api/v1/service/${reviewed.coach.id}/reviews`);
    expect(reviews.body[0]).toMatchObject({ rating: 5, comment: '', sessionId: reviewed.session.id });
    // A value of the wrong type is still 422 at the field.
    const wrong = await act(reviewed.client.token, reviewed.session.id, 'dispute', { reason: 5 });
    expect(wrong.body.detail[0].loc).toEqual(['body', 'reason']);
  });

  it('decline frees the slot at once', async () => {
    const { coach, serviceId, session } = await booked();
    expect(await freeSlots(serviceId)).not.toContain(SLOT);
    const res = await act(coach.token, session.id, 'decline', { reason: 'injured' });
    expect(res.body.state).toBe('declined');
    expect(await freeSlots(serviceId)).toContain(SLOT);
    expect((await act(coach.token, session.id, 'approve')).status).toBe(409);
  });

  it('a client cancels only up to sessionCancellationHours before the start; the coach any time before it', async () => {
    const late = await booked();
    clock.set('2026-12-01T10:00:00Z'); // 23 hours before the start, inside the 24 h window
    const refused = await act(late.client.token, late.session.id, 'cancel');
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('cancellation_window_passed');
    const byCoach = await act(late.coach.token, late.session.id, 'cancel', { reason: 'rain' });
    expect(byCoach.body.state).toBe('canceled');
    expect(await freeSlots(late.serviceId)).toContain(SLOT);

    clock.set('2026-12-01T08:00:00Z');
    const early = await booked();
    const ok = await act(early.client.token, early.session.id, 'cancel', {});
    expect(ok.status).toBe(200);
    expect(ok.body.state).toBe('canceled');
  });

  it('a client disputes a completed session; illegal moves are 409 invalid_transition', async () => {
    const { coach, client, session } = await booked();
    expect((await act(client.token, session.id, 'dispute', { reason: 'no show' })).body.error).toBe(
      'invalid_transition',
    );
    await act(coach.token, session.id, 'approve');
    clock.set('2026-12-02T10:30:00Z');
    await act(coach.token, session.id, 'complete');
    // A reason of blanks only says nothing: 422, and the session stays completed.
    const blank = await act(client.token, session.id, 'dispute', { reason: ' \n ' });
    expect(blank.status).toBe(422);
    expect(blank.body.detail[0].loc).toEqual(['body', 'reason']);
    const disputed = await act(client.token, session.id, 'dispute', { reason: 'ended 20 minutes early' });
    expect(disputed.body.state).toBe('disputed');
    expect((await act(client.token, session.id, 'dispute', {})).status).toBe(422);
  });

  it('a client disputes an approved session the coach never completed, once it is over (a no-show)', async () => {
    const { coach, client, session } = await booked();
    await act(coach.token, session.id, 'approve');
    clock.set('2026-12-02T09:30:00Z');
    expect((await act(client.token, session.id, 'dispute', { reason: 'no show' })).body).toEqual({
      error: 'invalid_transition',
      message: 'the session is not over yet',
      code: 409,
    });
    clock.set('2026-12-02T10:00:00Z');
    const disputed = await act(client.token, session.id, 'dispute', { reason: 'the coach did not come' });
    expect(disputed.status).toBe(200);
    expect(disputed.body.state).toBe('disputed');
    // The coach hears of it, and can no longer mark it completed.
    const types = await eventually(
      async () =>
        (await t.request('GET', '/api/v1/notifications', { token: coach.token })).body.map(
          (n: { type: string }) => n.type,
        ) as string[],
      (seen) => seen.includes('session_disputed'),
    );
    expect(types).toContain('session_disputed');
    expect((await act(coach.token, session.id, 'complete')).body.error).toBe('invalid_transition');
  });

  it('replays a lifecycle action retried with its Idempotency-Key instead of refusing it as done', async () => {
    const { coach, client, serviceId, session } = await booked();
    const keyed = (token: string, action: string, key: string, body?: unknown) =>
      t.request('POST', `/api/v1/session/${session.id}/${action}`, {
        token,
        body,
        headers: { 'Idempotency-Key': key },
      });
    const approved = await keyed(coach.token, 'approve', 'approve-1');
    expect(approved.status).toBe(200);
    const again = await keyed(coach.token, 'approve', 'approve-1');
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(approved.body);

    const canceled = await keyed(client.token, 'cancel', 'cancel-1', { reason: 'moving' });
    expect(canceled.body.state).toBe('canceled');
    const retried = await keyed(client.token, 'cancel', 'cancel-1', { reason: 'moving' });
    expect([retried.status, retried.body.state]).toEqual([200, 'canceled']);
    expect((await keyed(client.token, 'cancel', 'cancel-1', { reason: 'other' })).body.error).toBe(
      'idempotency_key_reused',
    );
    // Without a key a repeat is still a refused move.
    expect((await act(client.token, session.id, 'cancel')).body.error).toBe('invalid_transition');
    expect(await freeSlots(serviceId)).toContain(SLOT);
  });

  it('hides a session from anyone but its parties and enforces who may do what', async () => {
    const { coach, client, session } = await booked();
    const stranger = await m.client();
    for (const action of ['approve', 'cancel']) {
      const res = await act(stranger.token, session.id, action);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ error: 'session_not_found' });
    }
    expect((await t.request('GET', `/api/v1/session/${session.id}`, { token: stranger.token })).status).toBe(
      404,
    );
    expect((await act(client.token, session.id, 'approve')).status).toBe(403);
    expect((await act(coach.token, session.id, 'review', { rating: 5 })).status).toBe(403);
    expect((await act(client.token, session.id, 'review', { rating: 6 })).status).toBe(422);
    expect((await act(client.token, randomUUID(), 'cancel')).status).toBe(404);
    expect((await act(client.token, 'not-a-uuid', 'cancel')).status).toBe(422);
    const mine = await t.request('GET', `/api/v1/session/${session.id}`, { token: client.token });
    expect(mine.body).toMatchObject({ id: session.id, state: 'new', paymentState: 'awaiting' });
  });

  it('lets the coach of a booked client read that client, and no other coach', async () => {
    const { coach, client } = await booked();
    const other = await m.coach();
    expect((await t.request('GET', `/api/v1/coach/client/${client.id}`, { token: coach.token })).status).toBe(
      200,
    );
    expect((await t.request('GET', `/api/v1/coach/client/${client.id}`, { token: other.token })).status).toBe(
      404,
    );
  });

  it('records every change for auditors, with who did it, and answers the state at a past instant', async () => {
    const { coach, session } = await booked();
    const bookedAt = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    await act(coach.token, session.id, 'approve');
    const auditor = t.token(randomUUID(), ['auditor']);
    const all = await t.request('GET', `/api/v1/audit/sessions/${session.id}/events`, { token: auditor });
    expect(all.status).toBe(200);
    expect(all.body.stateAt).toBe('approved');
    expect(all.body.events.map((e: { type: string }) => e.type)).toEqual([
      'SessionsBooked',
      'SessionApproved',
    ]);
    expect(all.body.events[1].metadata.actor).toEqual({ userId: coach.id, role: 'coach' });
    const past = await t.request('GET', `/api/v1/audit/sessions/${session.id}/events?at=${bookedAt}`, {
      token: auditor,
    });
    expect(past.body.stateAt).toBe('new');
    expect(
      (await t.request('GET', `/api/v1/audit/sessions/${session.id}/events`, { token: coach.token })).status,
    ).toBe(403);
  });
  it('tells auditors who made the last change of a session and why, as of the instant asked', async () => {
    const { coach, client, session } = await booked();
    await act(coach.token, session.id, 'approve');
    const approvedBy = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    await act(client.token, session.id, 'cancel', { reason: 'ill, sorry' });
    const auditor = t.token(randomUUID(), ['auditor']);
    const now = await t.request('GET', `/api/v1/audit/sessions/${session.id}/events`, { token: auditor });
    const canceled = now.body.events.at(-1);
    expect(now.body.stateAt).toBe('canceled');
    expect(now.body.lastChange).toEqual({
      eventId: canceled.eventId,
      type: 'SessionCanceled',
      at: canceled.recordedAt,
      reason: 'ill, sorry',
      actor: { userId: client.id, role: 'client' },
    });
    const then = await t.request('GET', `/api/v1/audit/sessions/${session.id}/events?at=${approvedBy}`, {
      token: auditor,
    });
    expect(then.body.stateAt).toBe('approved');
    expect(then.body.lastChange).toMatchObject({
      type: 'SessionApproved',
      reason: null,
      actor: { userId: coach.id, role: 'coach' },
    });
    const before = await t.request(
      'GET',
      `/api/v1/audit/sessions/${session.id}/events?at=2000-01-01T00:00:00Z`,
      {
        token: auditor,
      },
    );
    expect(before.body).toMatchObject({ stateAt: null, lastChange: null });
  });
  it('shows a decline sent without a reason with the empty reason it recorded', async () => {
    const { coach, session } = await booked();
    expect((await act(coach.token, session.id, 'decline')).status).toBe(200);
    const auditor = t.token(randomUUID(), ['auditor']);
    const now = await t.request('GET', `/api/v1/audit/sessions/${session.id}/events`, { token: auditor });
    expect(now.body.events.at(-1).data.reason).toBe('');
    expect(now.body.lastChange).toMatchObject({ type: 'SessionDeclined', reason: '' });
  });

  it("finds a coach's session on the kept calendar, not by reading the coach's whole history each time", async () => {
    const { coach, session } = await booked();
    const other = await booked();
    const store = t.system.deps.store;
    const stream = calendarStream(coach.id);
    // Years of a busy calendar: the schedule published again and again.
    const schedule = (await store.readStream(stream)).events.find((e) => e.type === 'ScheduleSet')!;
    await store.append(
      stream,
      Array.from({ length: 300 }, () => ({ type: schedule.type, data: schedule.data })),
    );
    const readStream = store.readStream.bind(store);
    let calendarEventsRead = 0;
    const spy = jest.spyOn(store, 'readStream').mockImplementation(async (name, opts) => {
      const read = await readStream(name, opts);
      if (name === stream) calendarEventsRead += read.events.length;
      return read;
    });
    try {
      expect((await act(coach.token, session.id, 'approve')).status).toBe(200); // folds the calendar once
      calendarEventsRead = 0;
      expect((await act(coach.token, session.id, 'cancel')).body.state).toBe('canceled');
      expect(calendarEventsRead).toBeLessThan(10);
      // A released session is no longer held: still found (a repeat is 409, not 404), from the whole stream.
      expect((await act(coach.token, session.id, 'cancel')).body.error).toBe('invalid_transition');
      // Not this coach's session (another coach's): 404, as before.
      expect((await act(coach.token, other.session.id, 'approve')).status).toBe(404);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('bookings follow their payment, and heal after a crash', () => {
  it('a canceled payment cancels its sessions and frees their slots', async () => {
    const { client, serviceId, session } = await booked();
    const service = t.token(randomUUID(), ['service']);
    const res = await t.request('POST', `/api/v1/payment/private/payment/${session.paymentId}/cancel`, {
      token: service,
    });
    expect(res.status).toBe(200);
    const s = await eventually(
      () => sessionAs(client.token, session.id),
      (x) => x.state === 'canceled',
    );
    expect(s).toMatchObject({ state: 'canceled', paymentState: 'canceled' });
    // An auditor sees that the system did it, and why.
    const audit = await t.request('GET', `/api/v1/audit/sessions/${session.id}/events`, {
      token: t.token(randomUUID(), ['auditor']),
    });
    expect(audit.body.lastChange).toMatchObject({
      type: 'SessionCanceled',
      reason: 'payment_canceled',
      actor: { userId: '00000000-0000-0000-0000-000000000000', role: 'system' },
    });
    expect(
      await eventually(
        () => freeSlots(serviceId),
        (slots) => slots.includes(SLOT),
      ),
    ).toContain(SLOT);
  });

  it("a payment's cancel (16), or its move to canceled or deleted (15, 17), answers once its sessions are canceled and their slots free", async () => {
    const service = t.token(randomUUID(), ['service']);
    const moves: [string, (p: { paymentId: string }, clientId: string) => [string, unknown?]][] = [
      ['16', (p) => [`/api/v1/payment/private/payment/${p.paymentId}/cancel`]],
      ['15', (p) => [`/api/v1/payment/private/payment/${p.paymentId}/update`, { status: 'canceled' }]],
      ['17', (_p, clientId) => [`/api/v1/payment/private/user/${clientId}/update`, { status: 'deleted' }]],
    ];
    const seen: Record<string, unknown> = {};
    for (const [endpoint, request] of moves) {
      const { client, serviceId, session } = await booked();
      const [path, body] = request(session, client.id);
      expect((await t.request('POST', path, { token: service, body })).status).toBe(200);
      // The very next reads, no waiting: the session, the client's list, the slot.
      const read = await sessionAs(client.token, session.id);
      const listed = (await t.request('GET', '/api/v1/sessions', { token: client.token })).body;
      seen[endpoint] = {
        state: read.state,
        paymentState: read.paymentState,
        listed: listed.map((x: { state: string }) => x.state),
        free: (await freeSlots(serviceId)).includes(SLOT),
      };
    }
    const expected = (paymentState: string) => ({
      state: 'canceled',
      paymentState,
      listed: ['canceled'],
      free: true,
    });
    expect(seen).toEqual({ 16: expected('canceled'), 15: expected('canceled'), 17: expected('deleted') });
  });

  it('an unpaid booking past its payment expiry is canceled by the system and its slot comes back', async () => {
    const { client, serviceId, session } = await booked();
    clock.set('2026-12-02T08:30:00Z'); // past paymentExpiresAt (one hour before the 09:00 UTC start)
    expect(await t.system.sweepExpiredPayments()).toBeGreaterThanOrEqual(1);
    const s = await eventually(
      () => sessionAs(client.token, session.id),
      (x) => x.state === 'canceled',
    );
    expect(s).toMatchObject({ state: 'canceled', paymentState: 'canceled' });
    clock.set('2026-12-01T08:00:00Z');
    expect(
      await eventually(
        () => freeSlots(serviceId),
        (slots) => slots.includes(SLOT),
      ),
    ).toContain(SLOT);
  });

  it('a booking whose every session is gone takes its payment along: canceled when unpaid, refunded when paid', async () => {
    const service = t.token(randomUUID(), ['service']);
    const paymentOf = async (id: string, token: string) =>
      (await t.request('GET', `/api/v1/payment/${id}`, { token })).body;

    const unpaid = await booked();
    await act(unpaid.coach.token, unpaid.session.id, 'decline');
    const canceled = await eventually(
      () => paymentOf(unpaid.session.paymentId, unpaid.client.token),
      // Status and history come from two read models, each at its own pace: wait for both.
      (p) => p.status === 'canceled' && p.history.at(-1)?.to === 'canceled',
    );
    expect(canceled.history.at(-1)).toMatchObject({
      from: 'awaiting',
      to: 'canceled',
      reason: 'booking_canceled',
    });

    clock.set('2026-12-01T08:00:00Z');
    const paid = await booked();
    for (const status of ['checkout', 'received'])
      await t.request('POST', `/api/v1/payment/private/payment/${paid.session.paymentId}/update`, {
        token: service,
        body: { status },
      });
    await act(paid.coach.token, paid.session.id, 'cancel', { reason: 'ill' });
    const refunded = await eventually(
      () => paymentOf(paid.session.paymentId, paid.client.token),
      (p) => p.status === 'refund' && p.history.at(-1)?.to === 'refund',
    );
    expect(refunded.history.at(-1)).toMatchObject({
      from: 'received',
      to: 'refund',
      reason: 'booking_canceled',
    });
  });

  it("the last session's decline or cancel settles the payment before it answers, once", async () => {
    const service = t.token(randomUUID(), ['service']);
    const paymentOf = async (id: string, token: string) =>
      (await t.request('GET', `/api/v1/payment/${id}`, { token })).body;
    const SYSTEM = { userId: '00000000-0000-0000-0000-000000000000', role: 'system' };

    // Unpaid: the decline's answer and the next reads (no waiting) show the payment canceled.
    const unpaid = await booked();
    const declined = await act(unpaid.coach.token, unpaid.session.id, 'decline');
    expect([declined.status, declined.body.paymentState]).toEqual([200, 'canceled']);
    const canceled = await paymentOf(unpaid.session.paymentId, unpaid.client.token);
    expect(canceled.status).toBe('canceled');
    expect(canceled.history.at(-1)).toMatchObject({
      to: 'canceled',
      reason: 'booking_canceled',
      actor: SYSTEM,
    });
    expect((await sessionAs(unpaid.client.token, unpaid.session.id)).paymentState).toBe('canceled');

    // A paid package of two: the first cancel keeps the money, the last one refunds it, once.
    const coach = await m.coach();
    const serviceId = await m.offering(coach, {
      numberOfSessions: 2,
      price: 80,
      sessionCancellationHours: 1,
    });
    const client = await m.client();
    const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: [SLOT, '2026-12-03T10:00:00'] },
    });
    expect(res.status).toBe(200);
    const [first, second] = res.body as { id: string; paymentId: string }[];
    for (const status of ['checkout', 'received'])
      await t.request('POST', `/api/v1/payment/private/payment/${first!.paymentId}/update`, {
        token: service,
        body: { status },
      });
    const one = await act(client.token, first!.id, 'cancel');
    expect([one.status, one.body.paymentState]).toEqual([200, 'received']);
    const last = await act(coach.token, second!.id, 'cancel', { reason: 'ill' });
    expect([last.status, last.body.paymentState]).toEqual([200, 'refund']);
    const refunded = await paymentOf(first!.paymentId, client.token);
    expect(refunded.status).toBe('refund');
    expect(refunded.history.at(-1)).toMatchObject({
      from: 'received',
      to: 'refund',
      reason: 'booking_canceled',
      actor: SYSTEM,
    });
    // The booking process, handling the same cancellations, refunds nothing twice.
    await eventually(
      () => freeSlots(serviceId),
      (slots) => slots.includes(SLOT),
    );
    await new Promise((r) => setTimeout(r, 300));
    const moves = (await t.system.deps.store.readStream(paymentStream(first!.paymentId))).events
      .filter((e) => e.type === 'PaymentStatusChanged')
      .map((e) => (e.data as { to: string }).to);
    expect(moves).toEqual(['checkout', 'received', 'refund']);
  });

  it('a paid session the coach never approved can be canceled by its client once it is over, and is refunded', async () => {
    const service = t.token(randomUUID(), ['service']);
    clock.set('2026-12-01T08:00:00Z');
    const b = await booked();
    for (const status of ['checkout', 'received'])
      await t.request('POST', `/api/v1/payment/private/payment/${b.session.paymentId}/update`, {
        token: service,
        body: { status },
      });
    clock.set('2026-12-02T09:30:00Z'); // under way, not approved: the coach may still approve it
    expect((await act(b.client.token, b.session.id, 'cancel')).body).toMatchObject({
      error: 'invalid_transition',
      message: 'the session has started',
    });
    clock.set('2026-12-02T10:00:00Z'); // over, never approved: approving is closed
    expect((await act(b.coach.token, b.session.id, 'approve')).status).toBe(409);
    const canceled = await act(b.client.token, b.session.id, 'cancel', { reason: 'coach never confirmed' });
    expect(canceled.status).toBe(200);
    expect(canceled.body.state).toBe('canceled');
    const refunded = await eventually(
      async () =>
        (await t.request('GET', `/api/v1/payment/${b.session.paymentId}`, { token: b.client.token })).body,
      (p) => p.status === 'refund' && p.history.at(-1)?.to === 'refund',
    );
    expect(refunded.history.at(-1)).toMatchObject({
      from: 'received',
      to: 'refund',
      reason: 'booking_canceled',
    });
  });

  it('money paid after the booking was canceled goes back: received becomes refund', async () => {
    const service = t.token(randomUUID(), ['service']);
    const b = await booked();
    const update = (status: string) =>
      t.request('POST', `/api/v1/payment/private/payment/${b.session.paymentId}/update`, {
        token: service,
        body: { status },
      });
    expect((await update('checkout')).status).toBe(200);
    expect((await act(b.client.token, b.session.id, 'cancel')).body.state).toBe('canceled');
    // In checkout the payment is the provider's: it is left alone until the outcome arrives. The outcome's
    // answer tells the integration to pay it back (refund, not received), and the next reads show it.
    const paid = await update('received');
    expect([paid.status, paid.body.status]).toEqual([200, 'refund']);
    const p = (await t.request('GET', `/api/v1/payment/${b.session.paymentId}`, { token: b.client.token }))
      .body;
    expect(p.status).toBe('refund');
    expect(p.history.at(-1)).toMatchObject({
      from: 'received',
      to: 'refund',
      reason: 'booking_canceled',
      actor: { role: 'system' },
    });
    // Recorded as the system's follow-up of the provider's move, in its request's correlation.
    const log = (await t.system.deps.store.readStream(paymentStream(b.session.paymentId))).events;
    expect(log.at(-1)!.metadata).toMatchObject({
      causationId: log.at(-2)!.id,
      correlationId: log.at(-2)!.metadata.correlationId,
    });
  });

  it('a delivered payment is left as it is when its booking is canceled: the service refunds only a received one', async () => {
    const service = t.token(randomUUID(), ['service']);
    const b = await booked();
    for (const status of ['checkout', 'received', 'delivered'])
      expect(
        (
          await t.request('POST', `/api/v1/payment/private/payment/${b.session.paymentId}/update`, {
            token: service,
            body: { status },
          })
        ).status,
      ).toBe(200);
    expect((await act(b.coach.token, b.session.id, 'cancel', { reason: 'ill' })).body.state).toBe('canceled');
    // Once every process has handled the cancellation, the payment has not moved.
    const { events } = await t.system.deps.store.readStream(bookingStream(b.session.groupId));
    expect(await t.system.runner.waitFor(events.at(-1)!.position, 5000)).toBe(true);
    const payment = await t.system.deps.store.readStream(paymentStream(b.session.paymentId));
    expect(payment.events.map((e) => (e.data as { to?: string }).to ?? e.type)).toEqual([
      'PaymentCreated',
      'checkout',
      'received',
      'delivered',
    ]);
  });

  it('a payment that fails after its booking was canceled is canceled at once, not left open to 17 until its deadline', async () => {
    const service = t.token(randomUUID(), ['service']);
    const older = await booked(); // a second coach's service, booked by b's client below
    const b = await booked();
    const client = b.client;
    // The same client's older booking, still to be paid.
    clock.set('2026-12-01T08:00:30Z');
    const first = await t.request('POST', `/api/v1/service/${older.serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-03T10:00:00'] },
    });
    expect(first.status).toBe(200);
    clock.set('2026-12-01T08:01:00Z');
    const latest = await t.request('POST', `/api/v1/service/${b.serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-03T11:00:00'] },
    });
    expect(latest.status).toBe(200);
    const gone = latest.body[0] as { id: string; paymentId: string };
    const update = (status: string) =>
      t.request('POST', `/api/v1/payment/private/payment/${gone.paymentId}/update`, {
        token: service,
        body: { status },
      });
    expect((await update('checkout')).status).toBe(200);
    expect((await act(b.coach.token, gone.id, 'decline')).body.state).toBe('declined');
    // In checkout the payment is the provider's; its outcome is a failure, answered as the cancel it leads to.
    const failed = await update('failed');
    expect([failed.status, failed.body.status]).toEqual([200, 'canceled']);
    const p = (await t.request('GET', `/api/v1/payment/${gone.paymentId}`, { token: client.token })).body;
    expect(p.status).toBe('canceled');
    expect(p.history.at(-1)).toMatchObject({ from: 'failed', to: 'canceled', reason: 'booking_canceled' });
    // The client's open payment for the provider (17) is the booking that still stands, not the dead one.
    const next = await t.request('POST', `/api/v1/payment/private/user/${client.id}/update`, {
      token: service,
      body: { status: 'checkout' },
    });
    expect(next.status).toBe(200);
    expect(next.body).toMatchObject({ status: 'checkout', serviceId: older.serviceId });
  });

  it('an unpaid payment deleted by the provider cancels its sessions and frees their slots', async () => {
    const service = t.token(randomUUID(), ['service']);
    const b = await booked();
    const res = await t.request('POST', `/api/v1/payment/private/payment/${b.session.paymentId}/update`, {
      token: service,
      body: { status: 'deleted' },
    });
    expect(res.status).toBe(200);
    const s = await eventually(
      () => sessionAs(b.client.token, b.session.id),
      (x) => x.state === 'canceled',
    );
    expect(s).toMatchObject({ state: 'canceled', paymentState: 'deleted' });
    expect(
      await eventually(
        () => freeSlots(b.serviceId),
        (slots) => slots.includes(SLOT),
      ),
    ).toContain(SLOT);
  });

  it("shows the provider's client secret to the payer only, not to the coach", async () => {
    const service = t.token(randomUUID(), ['service']);
    const b = await booked();
    await t.request('POST', `/api/v1/payment/private/payment/${b.session.paymentId}/update`, {
      token: service,
      body: {
        status: 'checkout',
        clientSecret: 'pi_1_secret_2',
        checkout: { url: 'https://pay.example/c/1' },
      },
    });
    const read = async (token: string) =>
      (await t.request('GET', `/api/v1/payment/${b.session.paymentId}`, { token })).body;
    expect(await read(b.client.token)).toMatchObject({ status: 'checkout', clientSecret: 'pi_1_secret_2' });
    const coachView = await read(b.coach.token);
    expect(coachView.status).toBe('checkout');
    expect(coachView).not.toHaveProperty('clientSecret');
    expect(coachView).not.toHaveProperty('checkout');
  });

  it('a package keeps its payment while one of its sessions remains', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 2, price: 80 });
    const client = await m.client();
    const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: [SLOT, '2026-12-03T10:00:00'] },
    });
    expect(res.status).toBe(200);
    await act(coach.token, res.body[0].id, 'decline');
    // The process manager has handled the decline once the slot is back.
    await eventually(
      () => freeSlots(serviceId),
      (slots) => slots.includes(SLOT),
    );
    const payment = (
      await t.request('GET', `/api/v1/payment/${res.body[0].paymentId}`, { token: client.token })
    ).body;
    expect(payment.status).toBe('awaiting');
  });

  it('a received payment shows on the session', async () => {
    const { client, session } = await booked();
    const service = t.token(randomUUID(), ['service']);
    for (const status of ['checkout', 'received'])
      expect(
        (
          await t.request('POST', `/api/v1/payment/private/payment/${session.paymentId}/update`, {
            token: service,
            body: { status },
          })
        ).status,
      ).toBe(200);
    const s = await eventually(
      () => sessionAs(client.token, session.id),
      (x) => x.paymentState === 'received',
    );
    expect(s.paymentState).toBe('received');
  });

  it('a hold whose booking request died before writing sessions and payment is completed by the process manager', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const [groupId, sessionId, paymentId] = [randomUUID(), randomUUID(), randomUUID()];
    // Exactly what the booking route appends first; the request then "crashes".
    await t.system.deps.store.append(calendarStream(coach.id), [
      {
        type: 'SlotsReserved',
        data: holdData({
          coachId: coach.id,
          clientId: client.id,
          groupId,
          serviceId,
          sessionId,
          terms: bookingTerms({ paymentId, paymentExpiresAt: '2026-12-02T08:00:00.000Z' }),
          reservedAt: clock.now.toISOString(),
        }),
      },
    ]);
    const s = await eventually(
      () => t.request('GET', `/api/v1/session/${sessionId}`, { token: client.token }),
      (r) => r.status === 200,
    );
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({
      id: sessionId,
      groupId,
      paymentId,
      state: 'new',
      paymentState: 'awaiting',
    });
    expect((await t.system.deps.store.readStream(`payment-${paymentId}`)).events.map((e) => e.type)).toEqual([
      'PaymentCreated',
    ]);
    expect(await freeSlots(serviceId)).not.toContain(SLOT);
  });
});
