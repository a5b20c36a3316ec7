import { isLeft, isRight, type Either } from 'fp-ts/Either';
import { booking, DISPUTE_DAYS, type BookingCommand, type By } from '../../commands/booking/decider';
import type { BookingEvent } from '../../commands/booking/events';
import type { DomainError } from '../../src/decider';
import { bookingTerms } from '../support/marketplace';

const groupId = '9a000000-0000-4000-8000-000000000001';
const coachId = '1c000000-0000-4000-8000-000000000001';
const clientId = 'c1000000-0000-4000-8000-000000000001';
const stranger = 'ee000000-0000-4000-8000-000000000001';
const serviceId = '5e000000-0000-4000-8000-000000000001';
const s1 = '5a000000-0000-4000-8000-000000000001';
const s2 = '5a000000-0000-4000-8000-000000000002';

// Session s1: Wednesday 2 December 2026 09:00-10:00 UTC; s2 a day later. The client may cancel up to 24 h before.
const START = '2026-12-02T09:00:00.000Z';
const END = '2026-12-02T10:00:00.000Z';
const hoursFromStart = (h: number) => new Date(Date.parse(START) + h * 3_600_000).toISOString();

const coach: By = { userId: coachId };
const client: By = { userId: clientId };
const system: By = { userId: '00000000-0000-0000-0000-000000000000' };
const ref = (sessionId = s1) => ({ groupId, sessionId, coachId, clientId, serviceId });

const booked: BookingEvent = {
  type: 'SessionsBooked',
  data: {
    groupId,
    coachId,
    clientId,
    serviceId,
    sessions: [
      { sessionId: s1, startsAt: START, endsAt: END, slot: '2026-12-02T10:00:00' },
      {
        sessionId: s2,
        startsAt: '2026-12-03T09:00:00.000Z',
        endsAt: '2026-12-03T10:00:00.000Z',
        slot: '2026-12-03T10:00:00',
      },
    ],
    terms: bookingTerms({
      paymentId: 'pay-1',
      numberOfSessions: 2,
      expiresInDays: 3,
      paymentExpiresAt: '2026-11-30T08:00:00.000Z',
    }),
    timezone: 'Europe/Berlin',
    bookedAt: '2026-11-29T08:00:00.000Z',
  },
};
const at = '2026-11-30T08:00:00.000Z';
const approved = (sessionId = s1): BookingEvent => ({
  type: 'SessionApproved',
  data: { ...ref(sessionId), at },
});
const completed = (sessionId = s1): BookingEvent => ({
  type: 'SessionCompleted',
  data: { ...ref(sessionId), completedAt: END },
});
const canceled = (sessionId = s1): BookingEvent => ({
  type: 'SessionCanceled',
  data: { ...ref(sessionId), by: 'client', reason: '', at },
});
const declined = (sessionId = s1): BookingEvent => ({
  type: 'SessionDeclined',
  data: { ...ref(sessionId), reason: '', at },
});
const disputed = (sessionId = s1): BookingEvent => ({
  type: 'SessionDisputed',
  data: { ...ref(sessionId), reason: 'no show', at: END },
});
const reviewed = (sessionId = s1): BookingEvent => ({
  type: 'SessionReviewed',
  data: { ...ref(sessionId), rating: 5, comment: '', reviewedAt: END },
});

/** given past events, when a command, then new events (or a refusal). */
const given = (events: BookingEvent[]) => ({
  when: (command: BookingCommand) =>
    booking.decide(command, events.reduce(booking.evolve, booking.initialState())),
});
const outcome = (r: Either<DomainError, BookingEvent[]>) =>
  isLeft(r) ? r.left.code : r.right.map((e) => e.type).join(',');

const approve = (by: By, now = at, sessionId = s1): BookingCommand => ({
  type: 'Approve',
  sessionId,
  by,
  now,
});
const decline = (by: By, now = at, sessionId = s1): BookingCommand => ({
  type: 'Decline',
  sessionId,
  by,
  reason: 'busy',
  now,
});
const cancel = (by: By, now = at, sessionId = s1): BookingCommand => ({
  type: 'Cancel',
  sessionId,
  by,
  reason: 'ill',
  now,
});
const complete = (by: By, now = END, sessionId = s1): BookingCommand => ({
  type: 'Complete',
  sessionId,
  by,
  now,
});
const dispute = (by: By, now = END, sessionId = s1): BookingCommand => ({
  type: 'Dispute',
  sessionId,
  by,
  reason: 'no show',
  now,
});
const review = (by: By, rating = 4, now = END, sessionId = s1): BookingCommand => ({
  type: 'Review',
  sessionId,
  by,
  rating,
  comment: 'great',
  now,
});

describe('booking decider: Approve', () => {
  it('lets the coach approve a new session', () => {
    expect(given([booked]).when(approve(coach))).toEqual({
      _tag: 'Right',
      right: [{ type: 'SessionApproved', data: { ...ref(), at } }],
    });
  });

  it('refuses the client (forbidden) and a session that is not new (invalid_transition)', () => {
    expect(outcome(given([booked]).when(approve(client)))).toBe('forbidden');
    expect(outcome(given([booked, approved()]).when(approve(coach)))).toBe('invalid_transition');
    expect(outcome(given([booked, declined()]).when(approve(coach)))).toBe('invalid_transition');
    expect(outcome(given([booked, canceled()]).when(approve(coach)))).toBe('invalid_transition');
  });

  it('names the state it refuses from in readable English', () => {
    const message = (r: Either<DomainError, BookingEvent[]>) => (isLeft(r) ? r.left.message : '');
    expect(message(given([booked, approved()]).when(approve(coach)))).toBe(
      'an approved session cannot be approved',
    );
    expect(message(given([booked, declined()]).when(approve(coach)))).toBe(
      'a declined session cannot be approved',
    );
  });

  it('says what must come first where a step is early: approval before completion, completion before a review', () => {
    const message = (r: Either<DomainError, BookingEvent[]>) => (isLeft(r) ? r.left.message : '');
    expect(message(given([booked]).when(complete(coach)))).toBe(
      'a new session cannot be completed: its coach approves it first',
    );
    expect(message(given([booked, approved()]).when(review(client)))).toBe(
      'an approved session cannot be reviewed: it can be once its coach marks it completed',
    );
    expect(message(given([booked]).when(review(client)))).toBe(
      'a new session cannot be reviewed: it can be once its coach marks it completed',
    );
    expect(message(given([booked, canceled()]).when(review(client)))).toBe(
      'a canceled session cannot be reviewed',
    );
  });

  it('allows approval until the end, not after it', () => {
    expect(outcome(given([booked]).when(approve(coach, hoursFromStart(0.5))))).toBe('SessionApproved');
    expect(outcome(given([booked]).when(approve(coach, END)))).toBe('invalid_transition');
    expect(outcome(given([booked]).when(approve(coach, hoursFromStart(5))))).toBe('invalid_transition');
  });

  it('changes only the named session of the group', () => {
    const state = [booked, approved(s1)].reduce(booking.evolve, booking.initialState());
    expect(state.sessions.get(s1)!.state).toBe('approved');
    expect(state.sessions.get(s2)!.state).toBe('new');
  });
});

describe('booking decider: Decline', () => {
  it('lets the coach decline a new session, with the reason', () => {
    expect(given([booked]).when(decline(coach))).toEqual({
      _tag: 'Right',
      right: [{ type: 'SessionDeclined', data: { ...ref(), reason: 'busy', at } }],
    });
  });

  it('refuses the client, and a session that is not new', () => {
    expect(outcome(given([booked]).when(decline(client)))).toBe('forbidden');
    expect(outcome(given([booked, approved()]).when(decline(coach)))).toBe('invalid_transition');
    expect(outcome(given([booked, declined()]).when(decline(coach)))).toBe('invalid_transition');
  });
});

describe('booking decider: Cancel', () => {
  it('lets the client cancel up to sessionCancellationHours before the start', () => {
    expect(given([booked]).when(cancel(client, hoursFromStart(-25)))).toEqual({
      _tag: 'Right',
      right: [
        {
          type: 'SessionCanceled',
          data: { ...ref(), by: 'client', reason: 'ill', at: hoursFromStart(-25) },
        },
      ],
    });
    expect(outcome(given([booked]).when(cancel(client, hoursFromStart(-24))))).toBe('SessionCanceled');
    expect(outcome(given([booked, approved()]).when(cancel(client, hoursFromStart(-30))))).toBe(
      'SessionCanceled',
    );
  });

  it('refuses the client inside the cancellation window (cancellation_window_passed)', () => {
    const result = given([booked]).when(cancel(client, hoursFromStart(-23)));
    expect(outcome(result)).toBe('cancellation_window_passed');
    expect(isLeft(result) && result.left.message).toMatch(/24 hours/);
    expect(outcome(given([booked, approved()]).when(cancel(client, hoursFromStart(-1))))).toBe(
      'cancellation_window_passed',
    );
  });

  it('lets the coach cancel any time before the start, recorded as by coach', () => {
    const result = given([booked, approved()]).when(cancel(coach, hoursFromStart(-0.1)));
    expect(isRight(result) && result.right).toEqual([
      {
        type: 'SessionCanceled',
        data: { ...ref(), by: 'coach', reason: 'ill', at: hoursFromStart(-0.1) },
      },
    ]);
  });

  it('refuses anyone once the session has started', () => {
    expect(outcome(given([booked]).when(cancel(coach, START)))).toBe('invalid_transition');
    expect(outcome(given([booked, approved()]).when(cancel(coach, hoursFromStart(0.5))))).toBe(
      'invalid_transition',
    );
    expect(outcome(given([booked]).when(cancel(client, hoursFromStart(0.5))))).toBe('invalid_transition');
    expect(outcome(given([booked]).when(cancel(coach, hoursFromStart(2))))).toBe('invalid_transition');
    expect(outcome(given([booked, approved()]).when(cancel(client, hoursFromStart(2))))).toBe(
      'invalid_transition',
    );
  });

  it('lets the client cancel a session the coach never approved once it is over (its payment is not held)', () => {
    expect(given([booked]).when(cancel(client, END))).toEqual({
      _tag: 'Right',
      right: [{ type: 'SessionCanceled', data: { ...ref(), by: 'client', reason: 'ill', at: END } }],
    });
    expect(outcome(given([booked]).when(cancel(client, hoursFromStart(72))))).toBe('SessionCanceled');
  });

  it('refuses a session that is not open', () => {
    for (const past of [declined(), canceled()])
      expect(outcome(given([booked, past]).when(cancel(coach, hoursFromStart(-48))))).toBe(
        'invalid_transition',
      );
    expect(outcome(given([booked, approved(), completed()]).when(cancel(coach, hoursFromStart(2))))).toBe(
      'invalid_transition',
    );
  });

  it('knows no system user in a session: the system cancels through CancelGroup', () => {
    expect(outcome(given([booked]).when(cancel(system, hoursFromStart(-48))))).toBe('session_not_found');
  });
});

describe('booking decider: CancelGroup', () => {
  const cancelGroup: BookingCommand = { type: 'CancelGroup', reason: 'payment expired', now: at };

  it('cancels every open session of the group, by the system', () => {
    expect(given([booked, approved(s2)]).when(cancelGroup)).toEqual({
      _tag: 'Right',
      right: [s1, s2].map((id) => ({
        type: 'SessionCanceled',
        data: { ...ref(id), by: 'system', reason: 'payment expired', at },
      })),
    });
  });

  it('leaves sessions that are no longer open', () => {
    const result = given([booked, declined(s1)]).when(cancelGroup);
    expect(
      isRight(result) && result.right.map((e) => ('sessionId' in e.data ? e.data.sessionId : null)),
    ).toEqual([s2]);
  });

  it('cancels only the named sessions when given (a package session held after its payment closed)', () => {
    expect(given([booked, approved(s2)]).when({ ...cancelGroup, sessionIds: [s2] })).toEqual({
      _tag: 'Right',
      right: [{ type: 'SessionCanceled', data: { ...ref(s2), by: 'system', reason: 'payment expired', at } }],
    });
    expect(given([booked, canceled(s2)]).when({ ...cancelGroup, sessionIds: [s2] })).toEqual({
      _tag: 'Right',
      right: [],
    });
  });

  it('decides nothing when no session is open', () => {
    expect(given([booked, declined(s1), canceled(s2)]).when(cancelGroup)).toEqual({
      _tag: 'Right',
      right: [],
    });
  });

  it('refuses an unknown group (no events) with session_not_found', () => {
    expect(outcome(given([]).when(cancelGroup))).toBe('session_not_found');
  });
});

describe('booking decider: Complete', () => {
  it('lets the coach complete an approved session once it has started', () => {
    expect(given([booked, approved()]).when(complete(coach, hoursFromStart(0.5)))).toEqual({
      _tag: 'Right',
      right: [{ type: 'SessionCompleted', data: { ...ref(), completedAt: hoursFromStart(0.5) } }],
    });
    expect(outcome(given([booked, approved()]).when(complete(coach, START)))).toBe('SessionCompleted');
  });

  it('refuses before the start, a session that is not approved, and the client', () => {
    expect(outcome(given([booked, approved()]).when(complete(coach, hoursFromStart(-1))))).toBe(
      'invalid_transition',
    );
    expect(outcome(given([booked]).when(complete(coach)))).toBe('invalid_transition');
    expect(outcome(given([booked, approved(), completed()]).when(complete(coach)))).toBe(
      'invalid_transition',
    );
    expect(outcome(given([booked, approved()]).when(complete(client)))).toBe('forbidden');
  });
});

describe('booking decider: Dispute', () => {
  const done = [booked, approved(), completed()];

  it('lets the client dispute a completed session', () => {
    expect(given(done).when(dispute(client))).toEqual({
      _tag: 'Right',
      right: [{ type: 'SessionDisputed', data: { ...ref(), reason: 'no show', at: END } }],
    });
  });

  it(`allows it for ${DISPUTE_DAYS} days after the end, not later`, () => {
    const limit = new Date(Date.parse(END) + DISPUTE_DAYS * 86_400_000).toISOString();
    const later = new Date(Date.parse(limit) + 1000).toISOString();
    expect(outcome(given(done).when(dispute(client, limit)))).toBe('SessionDisputed');
    expect(outcome(given(done).when(dispute(client, later)))).toBe('invalid_transition');
  });

  it('lets the client dispute an approved session the coach never completed, once it is over', () => {
    const limit = new Date(Date.parse(END) + DISPUTE_DAYS * 86_400_000).toISOString();
    const later = new Date(Date.parse(limit) + 1000).toISOString();
    expect(outcome(given([booked, approved()]).when(dispute(client, hoursFromStart(0.5))))).toBe(
      'invalid_transition',
    );
    expect(given([booked, approved()]).when(dispute(client, END))).toEqual({
      _tag: 'Right',
      right: [{ type: 'SessionDisputed', data: { ...ref(), reason: 'no show', at: END } }],
    });
    expect(outcome(given([booked, approved()]).when(dispute(client, limit)))).toBe('SessionDisputed');
    expect(outcome(given([booked, approved()]).when(dispute(client, later)))).toBe('invalid_transition');
    expect(outcome(given([booked, approved()]).when(dispute(coach, END)))).toBe('forbidden');
  });

  it('refuses the coach, a session that is neither completed nor approved, and a second dispute', () => {
    expect(outcome(given(done).when(dispute(coach)))).toBe('forbidden');
    expect(outcome(given([booked]).when(dispute(client)))).toBe('invalid_transition');
    expect(outcome(given([...done, disputed()]).when(dispute(client)))).toBe('invalid_transition');
  });
});

describe('booking decider: Review', () => {
  const done = [booked, approved(), completed()];

  it('lets the client review a completed session, keeping the rating and comment', () => {
    expect(given(done).when(review(client, 3))).toEqual({
      _tag: 'Right',
      right: [{ type: 'SessionReviewed', data: { ...ref(), rating: 3, comment: 'great', reviewedAt: END } }],
    });
  });

  it('allows one review per session (already_reviewed), per session not per group', () => {
    expect(outcome(given([...done, reviewed()]).when(review(client)))).toBe('already_reviewed');
    const both = [...done, approved(s2), completed(s2), reviewed(s1)];
    expect(outcome(given(both).when(review(client, 5, END, s2)))).toBe('SessionReviewed');
  });

  it('keeps the session completed after a review', () => {
    const state = [...done, reviewed()].reduce(booking.evolve, booking.initialState());
    expect(state.sessions.get(s1)).toMatchObject({ state: 'completed', reviewed: true });
  });

  it('refuses the coach and a session that is not completed', () => {
    expect(outcome(given(done).when(review(coach)))).toBe('forbidden');
    expect(outcome(given([booked, approved()]).when(review(client)))).toBe('invalid_transition');
    expect(outcome(given([...done, disputed()]).when(review(client)))).toBe('invalid_transition');
  });
});

describe('booking decider: who may ask', () => {
  const commands: [string, (by: By) => BookingCommand, BookingEvent[]][] = [
    ['Approve', (by) => approve(by), [booked]],
    ['Decline', (by) => decline(by), [booked]],
    ['Cancel', (by) => cancel(by), [booked]],
    ['Complete', (by) => complete(by), [booked, approved()]],
    ['Dispute', (by) => dispute(by), [booked, approved(), completed()]],
    ['Review', (by) => review(by), [booked, approved(), completed()]],
  ];

  it.each(commands)('%s: someone who is not a party learns nothing (session_not_found)', (_, make, past) => {
    expect(outcome(given(past).when(make({ userId: stranger })))).toBe('session_not_found');
  });

  it.each(commands)('%s: an unknown session id of the group is session_not_found', (_, make, past) => {
    const cmd = { ...make(coach), sessionId: 'ffffffff-0000-4000-8000-000000000000' } as BookingCommand;
    expect(outcome(given(past).when(cmd))).toBe('session_not_found');
  });

  it.each(commands)('%s: no booking at all (no events) is session_not_found', (_, make) => {
    expect(outcome(given([]).when(make(coach)))).toBe('session_not_found');
  });

  it("a party doing the other party's part is forbidden: the role comes from the booking", () => {
    expect(outcome(given([booked]).when(approve(client)))).toBe('forbidden');
    const done = [booked, approved(), completed()];
    expect(outcome(given(done).when(review(coach)))).toBe('forbidden');
  });
});

describe('booking decider: Reschedule and RecordMove', () => {
  const to = {
    startsAt: '2026-12-02T13:00:00.000Z',
    endsAt: '2026-12-02T14:00:00.000Z',
    slot: '2026-12-02T14:00:00',
  };
  const from = { startsAt: START, endsAt: END, slot: '2026-12-02T10:00:00' };
  const reschedule = (by: By, now = at, sessionId = s1): BookingCommand => ({
    type: 'Reschedule',
    sessionId,
    by,
    to,
    moveId: 'move-1',
    now,
  });
  const moved = (by: 'client' | 'coach', state: 'new' | 'approved'): BookingEvent => ({
    type: 'SessionRescheduled',
    data: { ...ref(), from, to, by, state, moveId: 'move-1', at },
  });

  it('a client moves a new session: it stays new, at the new time', () => {
    const r = given([booked]).when(reschedule(client));
    expect(r).toEqual({ _tag: 'Right', right: [moved('client', 'new')] });
    const after = [booked, moved('client', 'new')].reduce(booking.evolve, booking.initialState());
    expect(after.sessions.get(s1)).toMatchObject({ state: 'new', ...to, moves: ['move-1'] });
  });

  it('a client moves an approved session: it is new again (the coach approves the new time)', () => {
    expect(given([booked, approved()]).when(reschedule(client))).toEqual({
      _tag: 'Right',
      right: [moved('client', 'new')],
    });
  });

  it('the coach moves an approved session: it stays approved', () => {
    expect(given([booked, approved()]).when(reschedule(coach))).toEqual({
      _tag: 'Right',
      right: [moved('coach', 'approved')],
    });
  });

  it('refuses who and when as a cancellation does', () => {
    expect(outcome(given([booked]).when(reschedule({ userId: stranger })))).toBe('session_not_found');
    expect(outcome(given([booked]).when(reschedule(system)))).toBe('session_not_found');
    for (const past of [declined(), canceled()])
      expect(outcome(given([booked, past]).when(reschedule(coach)))).toBe('invalid_transition');
    expect(outcome(given([booked, approved(), completed()]).when(reschedule(coach)))).toBe(
      'invalid_transition',
    );
    // Started: nobody; inside the cancellation hours: the coach only.
    expect(outcome(given([booked]).when(reschedule(coach, START)))).toBe('invalid_transition');
    const late = hoursFromStart(-1);
    expect(outcome(given([booked]).when(reschedule(client, late)))).toBe('cancellation_window_passed');
    expect(outcome(given([booked]).when(reschedule(coach, late)))).toBe('SessionRescheduled');
  });

  it('the same time as now is refused', () => {
    const same: BookingCommand = { ...reschedule(client), to: from } as BookingCommand;
    expect(outcome(given([booked]).when(same))).toBe('invalid_transition');
  });

  it('RecordMove writes a missing move once, and nothing for a session gone or moved since', () => {
    const record: BookingCommand = {
      type: 'RecordMove',
      sessionId: s1,
      from,
      to,
      by: 'client',
      moveId: 'move-1',
      now: at,
    };
    expect(given([booked, approved()]).when(record)).toEqual({
      _tag: 'Right',
      right: [moved('client', 'new')],
    });
    expect(given([booked, moved('client', 'new')]).when(record)).toEqual({ _tag: 'Right', right: [] });
    expect(given([booked, canceled()]).when(record)).toEqual({ _tag: 'Right', right: [] });
    expect(given([booked]).when({ ...record, from: to } as BookingCommand)).toEqual({
      _tag: 'Right',
      right: [],
    });
  });
});
