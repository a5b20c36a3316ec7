import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { bookingStream } from '../../commands/booking/events';
import { calendar } from '../../commands/calendar/decider';
import { calendarStream } from '../../commands/calendar/events';
import { readState } from '../../src/commandHandler';
import type { EventMetadata } from '../../src/eventstore/types';
import { bookingProcess } from '../../projections/bookingProcess';
import { notificationProcess } from '../../projections/notificationProcess';
import { eventually } from '../support/marketplace';
import { testEventStoreOnEsdb, type TestSystem } from '../support/system';
import { apiSuite, type Marketplace } from '../support/apiSuite';

// Tuesday 1 December 2026, 08:00 UTC (09:00 in Berlin).
let t: TestSystem;
let m: Marketplace;
const clock = apiSuite('2026-12-01T08:00:00Z', (system, market) => {
  t = system;
  m = market;
});

const SLOT = '2026-12-02T10:00:00'; // 09:00-10:00 UTC
const act = (
  token: string,
  sessionId: string,
  action: string,
  body?: unknown,
  headers?: Record<string, string>,
) => t.request('POST', `/api/v1/session/${sessionId}/${action}`, { token, body, headers });
const move = (token: string, sessionId: string, slot: string, headers?: Record<string, string>) =>
  act(token, sessionId, 'reschedule', { slot }, headers);
const freeSlots = (serviceId: string) => m.freeSlotsOn(serviceId, '2026-12-02');
const sessionAs = (token: string, id: string) => m.sessionAs(token, id);
const typesOf = async (stream: string) =>
  (await t.system.deps.store.readStream(stream)).events.map((e) => e.type);

/** The request's own write of the booking's record after the hold moved: only EventStoreDB writes them apart. */
const itOnEsdb = testEventStoreOnEsdb() ? it : it.skip;
if (!testEventStoreOnEsdb())
  console.log(
    "session-reschedule: the booking write after the hold moved (failing, or a cancellation or the payment's cancel via 16 landing before it) is tested on EventStoreDB only (the SQL stores write both in one transaction)",
  );

const booked = (over: Record<string, unknown> = {}) => m.sessionBooked(SLOT, over);

describe('POST /api/v1/session/{id}/reschedule', () => {
  it('the client moves a new session: same session, payment and price at the new time', async () => {
    const { client, coach, serviceId, session } = await booked();
    const res = await move(client.token, session.id, '2026-12-02T14:00');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: session.id,
      groupId: session.groupId,
      paymentId: session.paymentId,
      price: session.price,
      state: 'new',
      slot: '2026-12-02T14:00:00',
      startsAt: '2026-12-02T13:00:00.000Z',
      endsAt: '2026-12-02T14:00:00.000Z',
      dayAvailability: 3,
    });
    // The reads show it: the session, the lists of both parties, availability (old slot back, new one taken).
    expect(await sessionAs(coach.token, session.id)).toMatchObject({
      slot: '2026-12-02T14:00:00',
      state: 'new',
    });
    const list = await t.request('GET', '/api/v1/sessions', { token: client.token });
    expect(list.body.map((s: { id: string; slot: string }) => [s.id, s.slot])).toEqual([
      [session.id, '2026-12-02T14:00:00'],
    ]);
    const slots = await freeSlots(serviceId);
    expect(slots).toContain(SLOT);
    expect(slots).not.toContain('2026-12-02T14:00:00');
    // One calendar event moved the hold; the booking recorded it once.
    const cal = await typesOf(calendarStream(coach.id));
    expect(cal.filter((x) => x === 'SlotMoved')).toHaveLength(1);
    expect(cal.filter((x) => x === 'SlotsReserved')).toHaveLength(1);
    expect(cal).not.toContain('SlotsReleased');
    expect(await typesOf(bookingStream(session.groupId))).toEqual(['SessionsBooked', 'SessionRescheduled']);
    // Another client may book the freed slot.
    const other = await m.client();
    const taken = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: other.token,
      body: { slots: [SLOT] },
    });
    expect(taken.status).toBe(200);
  });

  it('moves by 30 minutes into its own time (Service.slots every half hour)', async () => {
    const { client, session } = await booked({ slots: ['10:00', '10:30'] });
    const res = await move(client.token, session.id, '2026-12-02T10:30:00');
    expect([res.status, res.body.slot]).toEqual([200, '2026-12-02T10:30:00']);
  });

  it('the coach moves an approved session: it stays approved; the client is told once', async () => {
    const { client, coach, session } = await booked();
    expect((await act(coach.token, session.id, 'approve')).status).toBe(200);
    const res = await move(coach.token, session.id, '2026-12-02T15:00');
    expect([res.status, res.body.state, res.body.slot]).toEqual([200, 'approved', '2026-12-02T15:00:00']);
    const notices = await eventually(
      async () => (await t.request('GET', '/api/v1/notifications', { token: client.token })).body,
      (l: { type: string }[]) => l.some((n) => n.type === 'session_rescheduled'),
    );
    expect(notices.filter((n: { type: string }) => n.type === 'session_rescheduled')).toEqual([
      expect.objectContaining({
        contentType: 'session',
        contentId: session.id,
        code: 8,
        message:
          'Your coach moved your session of Tennis basics from 2026-12-02 10:00 to 2026-12-02 15:00 (Europe/Berlin)',
      }),
    ]);
    const coachNotices = (await t.request('GET', '/api/v1/notifications', { token: coach.token })).body;
    expect(coachNotices.map((n: { type: string }) => n.type)).not.toContain('session_rescheduled');
  });

  it('the client moves an approved session: it is new again; the coach is notified and mailed once', async () => {
    const { client, coach, session } = await booked();
    await act(coach.token, session.id, 'approve');
    const res = await move(client.token, session.id, '2026-12-02T14:00');
    expect([res.status, res.body.state]).toEqual([200, 'new']);
    const notices = await eventually(
      async () => (await t.request('GET', '/api/v1/notifications', { token: coach.token })).body,
      (l: { type: string }[]) => l.some((n) => n.type === 'session_rescheduled'),
    );
    expect(notices.filter((n: { type: string }) => n.type === 'session_rescheduled')).toHaveLength(1);
    // A replay of the cause creates nothing twice.
    const { store } = t.system.deps;
    const cause = (await store.readStream(bookingStream(session.groupId))).events.find(
      (e) => e.type === 'SessionRescheduled',
    )!;
    await notificationProcess(store).react!(cause);
    expect(
      (await t.request('GET', '/api/v1/notifications', { token: coach.token })).body.filter(
        (n: { type: string }) => n.type === 'session_rescheduled',
      ),
    ).toHaveLength(1);
    const outbox = path.join(t.config.dataDir, 'outbox');
    const mails = await eventually(
      async () =>
        fs
          .readdirSync(outbox)
          .map((f) => fs.readFileSync(path.join(outbox, f), 'utf8').replace(/=\r\n/g, ''))
          .filter((c) => c.includes('Session moved')),
      (l) => l.some((c) => c.includes(coach.id.slice(0, 8))),
    );
    const toCoach = mails.filter((c) => c.includes(`To: ${coach.id.slice(0, 8)}@example.com`));
    expect(toCoach).toHaveLength(1);
    expect(toCoach[0]).toMatch(
      /2026-12-02 10:00 was moved by the client to 2026-12-02 14:00 \(Europe\/Berlin\)/,
    );
    expect(mails.filter((c) => c.includes(`To: ${client.id.slice(0, 8)}@example.com`))).toHaveLength(0);
    // The audit's lastChange shows the move and who made it.
    const audit = await t.request('GET', `/api/v1/audit/sessions/${session.id}/events`, { token: m.admin() });
    expect(audit.body.stateAt).toBe('new');
    expect(audit.body.lastChange).toMatchObject({
      type: 'SessionRescheduled',
      reason: null,
      actor: { userId: client.id, role: 'client' },
    });
    // And when the session was to take place then, as its parties' reads showed it: the new time now, the
    // time as booked just before the move.
    expect(audit.body.slotAt).toEqual({
      slot: '2026-12-02T14:00:00',
      startsAt: '2026-12-02T13:00:00.000Z',
      endsAt: '2026-12-02T14:00:00.000Z',
    });
    const before = audit.body.events.find((e: { type: string }) => e.type === 'SessionApproved').recordedAt;
    const then = await t.request('GET', `/api/v1/audit/sessions/${session.id}/events?at=${before}`, {
      token: m.admin(),
    });
    expect([then.body.stateAt, then.body.slotAt]).toEqual([
      'approved',
      {
        slot: '2026-12-02T10:00:00',
        startsAt: '2026-12-02T09:00:00.000Z',
        endsAt: '2026-12-02T10:00:00.000Z',
      },
    ]);
  });

  it('a taken slot is 409 slot_unavailable and nothing changes', async () => {
    const { client, coach, serviceId, session } = await booked();
    const other = await m.client();
    expect(
      (
        await t.request('POST', `/api/v1/service/${serviceId}`, {
          token: other.token,
          body: { slots: ['2026-12-02T14:00'] },
        })
      ).status,
    ).toBe(200);
    const before = await typesOf(calendarStream(coach.id));
    for (const slot of ['2026-12-02T14:00', '2026-12-02T20:00', '2026-11-30T10:00', '2026-12-02T13:30']) {
      const res = await move(client.token, session.id, slot);
      expect([slot, res.status, res.body.error]).toEqual([slot, 409, 'slot_unavailable']);
    }
    expect(await typesOf(calendarStream(coach.id))).toEqual(before);
    expect(await typesOf(bookingStream(session.groupId))).toEqual(['SessionsBooked']);
    expect(await sessionAs(client.token, session.id)).toMatchObject({ slot: SLOT });
    // The same time as now: 409 invalid_transition.
    const same = await move(client.token, session.id, '2026-12-02T10:00:00.000');
    expect([same.status, same.body.error]).toEqual([409, 'invalid_transition']);
  });

  it('refuses the client inside the cancellation window, a session not open, a non-party and bad input', async () => {
    const { client, coach, session } = await booked();
    clock.set('2026-12-01T09:30:00Z'); // 23.5 h before the start: the client's 24 h have passed
    const late = await move(client.token, session.id, '2026-12-02T14:00');
    expect([late.status, late.body.error]).toEqual([409, 'cancellation_window_passed']);
    const stranger = await m.client();
    const hidden = await move(stranger.token, session.id, '2026-12-02T14:00');
    expect([hidden.status, hidden.body.error]).toEqual([404, 'session_not_found']);
    const unknown = await move(client.token, randomUUID(), '2026-12-02T14:00');
    expect([unknown.status, unknown.body.error]).toEqual([404, 'session_not_found']);
    for (const body of [
      {},
      { slot: '2026-12-02T14:00Z' },
      { slot: '2026-02-30T10:00' },
      { slot: 'x', more: 1 },
    ])
      expect((await act(client.token, session.id, 'reschedule', body)).status).toBe(422);
    // The coach still may; then a declined (or canceled) session moves no more.
    expect((await move(coach.token, session.id, '2026-12-02T14:00')).status).toBe(200);
    await act(coach.token, session.id, 'decline');
    const gone = await move(coach.token, session.id, '2026-12-02T15:00');
    expect([gone.status, gone.body.error]).toEqual([409, 'invalid_transition']);
  });

  it('an Idempotency-Key replays the first answer and moves once', async () => {
    const { client, coach, session } = await booked();
    const key = randomUUID();
    const first = await move(client.token, session.id, '2026-12-02T14:00', { 'Idempotency-Key': key });
    const again = await move(client.token, session.id, '2026-12-02T14:00', { 'Idempotency-Key': key });
    expect(first.status).toBe(200);
    expect([again.status, again.body]).toEqual([200, first.body]);
    expect((await typesOf(calendarStream(coach.id))).filter((x) => x === 'SlotMoved')).toHaveLength(1);
    expect(await typesOf(bookingStream(session.groupId))).toEqual(['SessionsBooked', 'SessionRescheduled']);
    // Without a key, a repeat is refused as a move already made.
    const repeat = await move(client.token, session.id, '2026-12-02T14:00');
    expect([repeat.status, repeat.body.error]).toEqual([409, 'invalid_transition']);
  });

  it('two moves racing for one slot: one wins, the other is 409 slot_unavailable; never held twice', async () => {
    const { coach, serviceId, session, client } = await booked();
    const other = await m.client();
    const second = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: other.token,
      body: { slots: ['2026-12-02T11:00'] },
    });
    expect(second.status).toBe(200);
    const results = await Promise.all([
      move(client.token, session.id, '2026-12-02T15:00'),
      move(other.token, second.body[0].id, '2026-12-02T15:00'),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(results.find((r) => r.status === 409)!.body.error).toBe('slot_unavailable');
    const list = await t.request('GET', '/api/v1/sessions?as=coach', { token: coach.token });
    expect(list.body.filter((s: { slot: string }) => s.slot === '2026-12-02T15:00:00')).toHaveLength(1);
    // On the SQL stores the hold's move and the booking's record are one transaction.
    const { store } = t.system.deps;
    if (store.appendMany) {
      const moved = (await store.readStream(calendarStream(coach.id))).events.find(
        (e) => e.type === 'SlotMoved',
      )!;
      const groupId = (moved.data as { groupId: string }).groupId;
      expect(moved.metadata.writtenWith).toEqual([bookingStream(groupId)]);
    }
  });

  it('a move and a booking racing for the last seat of a group slot: one gets it, never a third seat', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, {
      groupSession: true,
      maxGroupSize: 2,
      sessionCancellationHours: 24,
    });
    const [seated, mover, booker] = [await m.client(), await m.client(), await m.client()];
    const book = (token: string, slot: string) =>
      t.request('POST', `/api/v1/service/${serviceId}`, { token, body: { slots: [slot] } });
    expect((await book(seated.token, '2026-12-02T15:00')).status).toBe(200);
    const moving = await book(mover.token, SLOT);
    expect(moving.status).toBe(200);
    const results = await Promise.all([
      move(mover.token, moving.body[0].id, '2026-12-02T15:00'),
      book(booker.token, '2026-12-02T15:00'),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(results.find((r) => r.status === 409)!.body.error).toBe('slot_unavailable');
    const holds = [
      ...(await readState(t.system.deps.store, calendarStream(coach.id), calendar)).reservations.values(),
    ];
    expect(holds.filter((h) => h.startsAt === '2026-12-02T14:00:00.000Z')).toHaveLength(2);
    // The mover holds one seat, at 15:00 or still at 10:00.
    expect(holds.filter((h) => h.sessionId === moving.body[0].id).map((h) => h.startsAt)).toEqual([
      results[0].status === 200 ? '2026-12-02T14:00:00.000Z' : '2026-12-02T09:00:00.000Z',
    ]);
    expect(await freeSlots(serviceId)).not.toContain('2026-12-02T15:00:00');
  });

  it('two moves of one session at once (client and coach, to different slots): the later is decided on the moved session', async () => {
    const { coach, client, serviceId, session } = await booked();
    const results = await Promise.all([
      move(client.token, session.id, '2026-12-02T14:00'),
      move(coach.token, session.id, '2026-12-02T15:00'),
    ]);
    // Both moves are valid ones: neither caller is sent to retry (it was 409 conflict, "moved meanwhile").
    expect(results.map((r) => r.status)).toEqual([200, 200]);
    const now = await sessionAs(client.token, session.id);
    expect(['2026-12-02T14:00:00', '2026-12-02T15:00:00']).toContain(now.slot);
    const slots = await freeSlots(serviceId);
    expect(slots).toContain(SLOT);
    expect(slots).not.toContain(now.slot);
    // The slot it left twice is free again: held once, at the session's time.
    const other = now.slot === '2026-12-02T14:00:00' ? '2026-12-02T15:00:00' : '2026-12-02T14:00:00';
    expect(slots).toContain(other);
    expect((await typesOf(calendarStream(coach.id))).filter((x) => x === 'SlotMoved')).toHaveLength(2);
    expect(await typesOf(bookingStream(session.groupId))).toEqual([
      'SessionsBooked',
      'SessionRescheduled',
      'SessionRescheduled',
    ]);
  });

  it('each of two moves in a row answers its own move, not the later one (it answered the session as read after it)', async () => {
    const { coach, client, session } = await booked();
    const { store } = t.system.deps;
    const { append, appendMany } = store;
    let coachMove: Promise<{ status: number; body: { slot: string } }> | undefined;
    let clientMove: Promise<unknown> | undefined;
    // Right after the client's request stores its move (the booking's record, with the hold's move on the SQL
    // stores), before its answer is made, the coach moves the session on.
    const recorded = (streamName: string, events: { type: string; metadata?: EventMetadata }[]) =>
      streamName === bookingStream(session.groupId) && events.some((e) => e.type === 'SessionRescheduled');
    const fromRequest = (events: { metadata?: EventMetadata }[]) => events.some((e) => e.metadata?.requestId);
    const thenCoach = async <R>(written: R, record: boolean) => {
      if (record && !coachMove) {
        coachMove = move(coach.token, session.id, '2026-12-02T15:00');
        await coachMove;
      }
      return written;
    };
    store.append = async (name, events, opts) => {
      // On EventStoreDB the booking process records the client's move only after the request has (it would
      // find it recorded), so the request's own write is the one stepped into.
      if (recorded(name, events) && !fromRequest(events) && !coachMove) await clientMove;
      return thenCoach(
        await append.call(store, name, events, opts),
        recorded(name, events) && fromRequest(events),
      );
    };
    if (appendMany)
      store.appendMany = async (appends) =>
        thenCoach(
          await appendMany.call(store, appends),
          appends.some((x) => 'events' in x && recorded(x.streamName, x.events)),
        );
    let res;
    try {
      clientMove = move(client.token, session.id, '2026-12-02T14:00');
      res = (await clientMove) as Awaited<ReturnType<typeof move>>;
    } finally {
      store.append = append;
      if (appendMany) store.appendMany = appendMany;
    }
    const later = await coachMove!;
    expect([later.status, later.body.slot]).toEqual([200, '2026-12-02T15:00:00']);
    expect([res.status, res.body.slot, res.body.state]).toEqual([200, '2026-12-02T14:00:00', 'new']);
    expect(await sessionAs(client.token, session.id)).toMatchObject({ slot: '2026-12-02T15:00:00' });
  });

  itOnEsdb(
    'a cancellation landing between the hold move and its record: the move is refused (it answered 200 with the canceled session)',
    async () => {
      const { client, coach, serviceId, session } = await booked();
      const { store } = t.system.deps;
      const append = store.append;
      let cancel: Promise<{ status: number }> | undefined;
      store.append = async (name, events, opts) => {
        // The request's record of the move: the coach's cancellation gets to the booking first.
        if (name === bookingStream(session.groupId) && events.some((e) => e.type === 'SessionRescheduled')) {
          cancel ??= act(coach.token, session.id, 'cancel', {});
          await cancel;
        }
        return append.call(store, name, events, opts);
      };
      let res;
      try {
        res = await move(client.token, session.id, '2026-12-02T14:00');
      } finally {
        store.append = append;
      }
      expect((await cancel)?.status).toBe(200);
      expect([res.status, res.body.error]).toEqual([409, 'invalid_transition']);
      expect(await sessionAs(client.token, session.id)).toMatchObject({ state: 'canceled', slot: SLOT });
      const slots = await freeSlots(serviceId);
      expect(slots).toEqual(expect.arrayContaining([SLOT, '2026-12-02T14:00:00']));
    },
  );

  /**
   * The payment canceled (16, the provider's integration) at an exact moment of a client's move: just before
   * the hold's move is written (`hold`), or on EventStoreDB between it and the booking's record (`record`).
   * Whichever way, the session ends canceled and neither its old nor its new slot stays held.
   */
  const paymentCanceledAs = async (when: 'hold' | 'record') => {
    const { client, coach, serviceId, session } = await booked();
    const { store } = t.system.deps;
    const { append, appendMany } = store;
    let cancel: Promise<{ status: number }> | undefined;
    const due = (name: string, events: { type: string }[]) =>
      when === 'hold'
        ? events.some((e) => e.type === 'SlotMoved')
        : name === bookingStream(session.groupId) && events.some((e) => e.type === 'SessionRescheduled');
    const cancelFirst = async () => {
      cancel ??= t.request('POST', `/api/v1/payment/private/payment/${session.paymentId}/cancel`, {
        token: t.token(randomUUID(), ['service']),
      });
      await cancel;
    };
    store.append = async (name, events, opts) => {
      if (due(name, events)) await cancelFirst();
      return append.call(store, name, events, opts);
    };
    if (appendMany)
      store.appendMany = async (appends) => {
        if (appends.some((x) => 'events' in x && due(x.streamName, x.events))) await cancelFirst();
        return appendMany.call(store, appends);
      };
    let res;
    try {
      res = await move(client.token, session.id, '2026-12-02T15:00');
    } finally {
      store.append = append;
      if (appendMany) store.appendMany = appendMany;
    }
    expect((await cancel)?.status).toBe(200);
    if (when === 'hold') expect([res.status, res.body.error]).toEqual([409, 'invalid_transition']);
    const read = await eventually(
      () => sessionAs(client.token, session.id),
      (x: { state: string }) => x.state === 'canceled',
    );
    expect(read).toMatchObject({ state: 'canceled', paymentState: 'canceled' });
    const holds = await eventually(
      async () => (await readState(store, calendarStream(coach.id), calendar)).reservations,
      (r) => !r.has(session.id),
    );
    expect(holds.has(session.id)).toBe(false);
    const slots = await eventually(
      () => freeSlots(serviceId),
      (x) => x.includes(SLOT) && x.includes('2026-12-02T15:00:00'),
    );
    expect(slots).toEqual(expect.arrayContaining([SLOT, '2026-12-02T15:00:00']));
  };

  it("the coach closing that time just before the hold's move is written: 409 slot_unavailable, nothing moved", async () => {
    const { client, coach, serviceId, session } = await booked();
    const { store } = t.system.deps;
    const { append, appendMany } = store;
    let closing: Promise<{ status: number }> | undefined;
    const hours = [{ start: '09:00', end: '17:00' }];
    // Wednesday 2 December ends at noon now.
    const closeFirst = async () => {
      closing ??= t.request('PUT', '/api/v1/coach/schedule', {
        token: coach.token,
        body: {
          timezone: 'Europe/Berlin',
          weekly: {
            monday: hours,
            tuesday: hours,
            wednesday: [{ start: '09:00', end: '12:00' }],
            thursday: hours,
            friday: hours,
          },
        },
      });
      await closing;
    };
    store.append = async (name, events, opts) => {
      if (events.some((e) => e.type === 'SlotMoved')) await closeFirst();
      return append.call(store, name, events, opts);
    };
    if (appendMany)
      store.appendMany = async (appends) => {
        if (appends.some((x) => 'events' in x && x.events.some((e) => e.type === 'SlotMoved')))
          await closeFirst();
        return appendMany.call(store, appends);
      };
    let res;
    try {
      res = await move(client.token, session.id, '2026-12-02T15:00');
    } finally {
      store.append = append;
      if (appendMany) store.appendMany = appendMany;
    }
    expect((await closing)?.status).toBe(200);
    expect([res.status, res.body.error]).toEqual([409, 'slot_unavailable']);
    expect(await typesOf(calendarStream(coach.id))).not.toContain('SlotMoved');
    expect(await sessionAs(client.token, session.id)).toMatchObject({ slot: SLOT });
    expect(await freeSlots(serviceId)).not.toContain('2026-12-02T15:00:00');
  });

  it("the payment canceled (16) just before the hold's move is written: 409, canceled, both slots free", () =>
    paymentCanceledAs('hold'));

  itOnEsdb(
    "the payment canceled (16) between the hold's move and its record: canceled, both slots free",
    () => paymentCanceledAs('record'),
  );

  itOnEsdb(
    'the booking write failing after the hold moved: answered moved, and the booking process records it',
    async () => {
      const { client, session } = await booked();
      const { store } = t.system.deps;
      const append = store.append;
      let failures = 1;
      store.append = async (name, events, opts) => {
        // The request's own write (its events carry the request id; the booking process's do not).
        const fromRequest = events.some((e) => e.metadata?.requestId);
        if (name === bookingStream(session.groupId) && fromRequest && failures-- > 0)
          throw new Error('connection reset');
        return append.call(store, name, events, opts);
      };
      try {
        const res = await move(client.token, session.id, '2026-12-02T14:00');
        expect([res.status, res.body.slot]).toEqual([200, '2026-12-02T14:00:00']);
      } finally {
        store.append = append;
      }
      const seen = await eventually(
        () => sessionAs(client.token, session.id),
        (x: { slot: string }) => x.slot === '2026-12-02T14:00:00',
      );
      expect(seen.slot).toBe('2026-12-02T14:00:00');
      expect(await typesOf(bookingStream(session.groupId))).toEqual(['SessionsBooked', 'SessionRescheduled']);
    },
  );

  it('the booking process records a calendar move whose booking event is missing, once (a request that died)', async () => {
    const { client, coach, session } = await booked();
    const { store } = t.system.deps;
    const cal = await store.readStream(calendarStream(coach.id));
    const held = cal.events.find((e) => e.type === 'SlotsReserved')!.data as {
      sessions: { startsAt: string; endsAt: string; slot: string }[];
      serviceId: string;
    };
    // The hold moved as EventStoreDB's reschedule writes it first, with no booking event after it.
    await store.append(
      calendarStream(coach.id),
      [
        {
          type: 'SlotMoved',
          data: {
            coachId: coach.id,
            groupId: session.groupId,
            sessionId: session.id,
            serviceId: held.serviceId,
            clientId: client.id,
            from: { startsAt: held.sessions[0]!.startsAt, endsAt: held.sessions[0]!.endsAt, slot: SLOT },
            to: {
              startsAt: '2026-12-02T13:00:00.000Z',
              endsAt: '2026-12-02T14:00:00.000Z',
              slot: '2026-12-02T14:00:00',
            },
            by: 'client',
            moveId: randomUUID(),
            movedAt: '2026-12-01T08:00:00.000Z',
          },
          metadata: { actor: { userId: client.id, role: 'client' } },
        },
      ],
      { expectedRevision: cal.revision },
    );
    const session_ = await eventually(
      () => sessionAs(client.token, session.id),
      (s: { slot: string }) => s.slot === '2026-12-02T14:00:00',
    );
    expect(session_).toMatchObject({ slot: '2026-12-02T14:00:00', state: 'new' });
    const moved = (await store.readStream(calendarStream(coach.id))).events.at(-1)!;
    await bookingProcess(store, () => new Date()).react!(moved);
    expect(await typesOf(bookingStream(session.groupId))).toEqual(['SessionsBooked', 'SessionRescheduled']);
  });

  it('a request that died after the hold moved, then the session canceled: neither slot stays held', async () => {
    const { client, coach, serviceId, session } = await booked();
    const { store } = t.system.deps;
    const cal = await store.readStream(calendarStream(coach.id));
    const held = cal.events.find((e) => e.type === 'SlotsReserved')!.data as {
      sessions: { startsAt: string; endsAt: string; slot: string }[];
      serviceId: string;
    };
    await store.append(
      calendarStream(coach.id),
      [
        {
          type: 'SlotMoved',
          data: {
            coachId: coach.id,
            groupId: session.groupId,
            sessionId: session.id,
            serviceId: held.serviceId,
            clientId: client.id,
            from: { startsAt: held.sessions[0]!.startsAt, endsAt: held.sessions[0]!.endsAt, slot: SLOT },
            to: {
              startsAt: '2026-12-02T13:00:00.000Z',
              endsAt: '2026-12-02T14:00:00.000Z',
              slot: '2026-12-02T14:00:00',
            },
            by: 'client',
            moveId: randomUUID(),
            movedAt: '2026-12-01T08:00:00.000Z',
          },
          metadata: { actor: { userId: client.id, role: 'client' } },
        },
      ],
      { expectedRevision: cal.revision },
    );
    // At once: before or after the booking process records the move, whichever it is.
    expect((await act(client.token, session.id, 'cancel', {})).status).toBe(200);
    const holds = await eventually(
      async () => (await readState(store, calendarStream(coach.id), calendar)).reservations,
      (r) => !r.has(session.id),
    );
    expect(holds.has(session.id)).toBe(false);
    const slots = await eventually(
      () => freeSlots(serviceId),
      (x) => x.includes(SLOT) && x.includes('2026-12-02T14:00:00'),
    );
    expect(slots).toEqual(expect.arrayContaining([SLOT, '2026-12-02T14:00:00']));
    expect(await sessionAs(client.token, session.id)).toMatchObject({ state: 'canceled' });
  });

  it("after the coach moved the schedule to another zone: right instants, e-mails in the booking's zone", async () => {
    const { client, coach, session } = await booked();
    const hours = [{ start: '09:00', end: '17:00' }];
    expect(
      (
        await t.request('PUT', '/api/v1/coach/schedule', {
          token: coach.token,
          body: {
            timezone: 'America/New_York',
            weekly: { monday: hours, tuesday: hours, wednesday: hours, thursday: hours, friday: hours },
          },
        })
      ).status,
    ).toBe(200);
    // The body's slot is a wall time of the schedule's zone now: 10:00 in New York is 15:00 UTC, 16:00 in Berlin.
    const res = await move(client.token, session.id, '2026-12-03T10:00');
    expect(res.status).toBe(200);
    const expected = {
      startsAt: '2026-12-03T15:00:00.000Z',
      endsAt: '2026-12-03T16:00:00.000Z',
      // The label of the zone it was moved in (as a package's session booked after the change is labelled).
      slot: '2026-12-03T10:00:00',
      dayAvailability: 4,
    };
    expect(res.body).toMatchObject(expected);
    expect(await sessionAs(client.token, session.id)).toMatchObject(expected);
    expect(await sessionAs(coach.token, session.id)).toMatchObject(expected);
    // The coach approves the new time: the approval's e-mail to the client names it in the booking's zone.
    expect((await act(coach.token, session.id, 'approve')).status).toBe(200);
    const outbox = path.join(t.config.dataDir, 'outbox');
    const toClient = (subject: string) =>
      eventually(
        async () =>
          fs
            .readdirSync(outbox)
            .map((f) => fs.readFileSync(path.join(outbox, f), 'utf8').replace(/=\r\n/g, ''))
            .filter((c) => c.includes(`To: ${client.id.slice(0, 8)}@example.com`) && c.includes(subject)),
        (l) => l.length > 0,
      );
    const moved = await eventually(
      async () =>
        fs
          .readdirSync(outbox)
          .map((f) => fs.readFileSync(path.join(outbox, f), 'utf8').replace(/=\r\n/g, ''))
          .filter(
            (c) => c.includes(`To: ${coach.id.slice(0, 8)}@example.com`) && c.includes('Session moved'),
          ),
      (l) => l.length > 0,
    );
    expect(moved[0]).toMatch(
      /2026-12-02 10:00 was moved by the client to 2026-12-03 16:00 \(Europe\/Berlin\)/,
    );
    const [approved] = await toClient('Session approved');
    expect(approved).toMatch(/approved .* on 2026-12-03 16:00 \(Europe\/Berlin\)/);
    // The coach is told in the app, without a time that could read in the wrong zone.
    const notices = (await t.request('GET', '/api/v1/notifications', { token: coach.token })).body as {
      type: string;
      message?: string;
    }[];
    expect(notices.filter((n) => n.type === 'session_rescheduled')).toHaveLength(1);
  });
});
