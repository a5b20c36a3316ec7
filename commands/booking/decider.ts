import { left, right } from 'fp-ts/Either';
import { assertNever, type Decider, type DomainError } from '../../src/decider';
import type { BookingTerms } from '../calendar/events';
import type { BookingEvent, SessionRescheduled, SessionState, SessionTime } from './events';

export interface SessionView {
  state: SessionState;
  startsAt: string;
  endsAt: string;
  /** The local label the client booked, in the booking's zone. */
  slot: string;
  reviewed: boolean;
  /** When the coach marked it completed (`SessionCompleted.completedAt`): the dispute window counts from it. */
  completedAt?: string;
  /**
   * A package's session booked later: its own terms (the place, travel and notes of its request; price and
   * expiry are the package's). Absent for the sessions of the booking's first SessionsBooked (`Booking.terms`).
   */
  terms?: BookingTerms;
  /** The calendar moves (`SlotMoved.moveId`) the session's times come from: each is recorded once. */
  moves?: readonly string[];
}

export interface Booking {
  groupId: string | null;
  coachId: string;
  clientId: string;
  serviceId: string;
  paymentId: string;
  cancellationHours: number;
  sessions: Map<string, SessionView>;
  /** What the Session reply shows, as booked. */
  terms: BookingTerms | null;
  timezone: string;
  bookedAt: string;
}

/**
 * Who asks: a user. Whether it acts as the session's coach or its client is read from the booking itself,
 * so a route needs no read model to tell; the system acts through CancelGroup only.
 */
export interface By {
  userId: string;
}

export type BookingCommand =
  | { type: 'Approve'; sessionId: string; by: By; now: string }
  | { type: 'Decline'; sessionId: string; by: By; reason: string; now: string }
  | { type: 'Cancel'; sessionId: string; by: By; reason: string; now: string }
  /** The system cancels the booking's open sessions (only `sessionIds` of them, when given). */
  | { type: 'CancelGroup'; reason: string; now: string; sessionIds?: string[] }
  | { type: 'Complete'; sessionId: string; by: By; now: string }
  | { type: 'Dispute'; sessionId: string; by: By; reason: string; now: string }
  | { type: 'Review'; sessionId: string; by: By; rating: number; comment: string; now: string }
  /** The session's client or coach moves it to `to`, the time the calendar moved its hold to (`moveId`). */
  | { type: 'Reschedule'; sessionId: string; by: By; to: SessionTime; moveId: string; now: string }
  /**
   * The system records a calendar move whose booking event is missing (the booking process, on a store
   * without multi-stream transactions): once per `moveId`, while the session is open and still at `from`.
   */
  | {
      type: 'RecordMove';
      sessionId: string;
      from: SessionTime;
      to: SessionTime;
      by: 'client' | 'coach';
      moveId: string;
      now: string;
    };

/**
 * A client may dispute a completed session for this long after its end, or after its completion when the coach
 * marked it completed later (a late completion does not take the client's window away).
 */
export const DISPUTE_DAYS = 30;

const notFound: DomainError = { code: 'session_not_found', message: 'no such session' };
/** What must come first where a step is early (not where it is too late: a canceled session stays so). */
const FIRST: Readonly<Partial<Record<string, Partial<Record<SessionState, string>>>>> = {
  completed: { new: 'its coach approves it first' },
  reviewed: {
    new: 'it can be once its coach marks it completed',
    approved: 'it can be once its coach marks it completed',
  },
};
const invalid = (from: SessionState, action: string): DomainError => {
  const first = FIRST[action]?.[from];
  return {
    code: 'invalid_transition',
    message: `${/^[aeiou]/.test(from) ? 'an' : 'a'} ${from} session cannot be ${action}${first ? `: ${first}` : ''}`,
  };
};
const forbidden = (who: string): DomainError => ({
  code: 'forbidden',
  message: `only the session's ${who} may do this`,
});

/**
 * Whether `by` may move the session now (checked before the calendar is asked, and again when deciding):
 * its client or coach, while `new` or `approved` and before its start; a client only up to the service's
 * cancellation hours before the current start, as for a cancellation.
 */
export function refuseReschedule(state: Booking, sessionId: string, by: By, now: string): DomainError | null {
  const session = state.sessions.get(sessionId);
  const isCoach = by.userId === state.coachId;
  const isClient = by.userId === state.clientId;
  if (!state.groupId || !session || !(isCoach || isClient)) return notFound;
  if (session.state !== 'new' && session.state !== 'approved') return invalid(session.state, 'rescheduled');
  const at = Date.parse(now);
  if (at >= Date.parse(session.startsAt))
    return { code: 'invalid_transition', message: 'the session has started' };
  if (isClient && at > Date.parse(session.startsAt) - state.cancellationHours * 3_600_000)
    return {
      code: 'cancellation_window_passed',
      message: `a client may reschedule up to ${state.cancellationHours} hours before the start`,
    };
  return null;
}

/** The booking's record of a move: a client's move of an approved session asks the coach again. */
function rescheduled(
  state: Booking,
  sessionId: string,
  by: 'client' | 'coach',
  from: SessionTime,
  to: SessionTime,
  moveId: string,
  at: string,
): SessionRescheduled {
  const session = state.sessions.get(sessionId)!;
  return {
    type: 'SessionRescheduled',
    data: {
      groupId: state.groupId!,
      sessionId,
      coachId: state.coachId,
      clientId: state.clientId,
      serviceId: state.serviceId,
      from,
      to,
      by,
      state: by === 'client' ? 'new' : (session.state as 'new' | 'approved'),
      moveId,
      at,
    },
  };
}

export const booking: Decider<BookingCommand, BookingEvent, Booking> = {
  initialState: () => ({
    groupId: null,
    coachId: '',
    clientId: '',
    serviceId: '',
    paymentId: '',
    cancellationHours: 0,
    sessions: new Map(),
    terms: null,
    timezone: '',
    bookedAt: '',
  }),

  evolve(state, event) {
    const set = (id: string, patch: Partial<SessionView>) => {
      const sessions = new Map(state.sessions);
      sessions.set(id, { ...sessions.get(id)!, ...patch });
      return { ...state, sessions };
    };
    switch (event.type) {
      case 'SessionsBooked': {
        const d = event.data;
        const later = !!state.groupId;
        const booked = d.sessions.map(
          (s) =>
            [
              s.sessionId,
              {
                state: 'new',
                startsAt: s.startsAt,
                endsAt: s.endsAt,
                slot: s.slot,
                reviewed: false,
                ...(later ? { terms: d.terms } : {}),
              },
            ] as const,
        );
        // A package's sessions booked later join the booking, each with the terms it was booked on (its own
        // place and notes); the booking's terms stay those it was bought with.
        if (later) return { ...state, sessions: new Map([...state.sessions, ...booked]) };
        return {
          groupId: d.groupId,
          coachId: d.coachId,
          clientId: d.clientId,
          serviceId: d.serviceId,
          paymentId: d.terms.paymentId,
          cancellationHours: d.terms.cancellationHours,
          sessions: new Map(booked),
          terms: d.terms,
          timezone: d.timezone,
          bookedAt: d.bookedAt,
        };
      }
      case 'SessionApproved':
        return set(event.data.sessionId, { state: 'approved' });
      case 'SessionDeclined':
        return set(event.data.sessionId, { state: 'declined' });
      case 'SessionCanceled':
        return set(event.data.sessionId, { state: 'canceled' });
      case 'SessionCompleted':
        return set(event.data.sessionId, { state: 'completed', completedAt: event.data.completedAt });
      case 'SessionDisputed':
        return set(event.data.sessionId, { state: 'disputed' });
      case 'SessionReviewed':
        return set(event.data.sessionId, { reviewed: true });
      case 'SessionRescheduled': {
        const d = event.data;
        const before = state.sessions.get(d.sessionId);
        return set(d.sessionId, {
          state: d.state,
          startsAt: d.to.startsAt,
          endsAt: d.to.endsAt,
          slot: d.to.slot,
          moves: [...(before?.moves ?? []), d.moveId],
        });
      }
      default:
        return assertNever(event);
    }
  },

  decide(command, state) {
    if (!state.groupId) return left(notFound);
    const groupId = state.groupId;
    const ref = (sessionId: string) => ({
      groupId,
      sessionId,
      coachId: state.coachId,
      clientId: state.clientId,
      serviceId: state.serviceId,
    });

    if (command.type === 'CancelGroup') {
      const only = command.sessionIds ? new Set(command.sessionIds) : null;
      const open = [...state.sessions].filter(
        ([id, s]) => (s.state === 'new' || s.state === 'approved') && (!only || only.has(id)),
      );
      return right(
        open.map(
          ([id]) =>
            ({
              type: 'SessionCanceled',
              data: { ...ref(id), by: 'system', reason: command.reason, at: command.now },
            }) as const,
        ),
      );
    }

    if (command.type === 'RecordMove') {
      const s = state.sessions.get(command.sessionId);
      // Recorded already, or the session changed since (declined, canceled: its hold is released): nothing.
      if (!s || s.moves?.includes(command.moveId)) return right([]);
      if ((s.state !== 'new' && s.state !== 'approved') || s.startsAt !== command.from.startsAt)
        return right([]);
      return right([
        rescheduled(
          state,
          command.sessionId,
          command.by,
          command.from,
          command.to,
          command.moveId,
          command.now,
        ),
      ]);
    }

    const session = state.sessions.get(command.sessionId);
    // Someone who is neither party learns nothing, not even that the session exists.
    const isCoach = command.by.userId === state.coachId;
    const isClient = command.by.userId === state.clientId;
    if (!session || !(isCoach || isClient)) return left(notFound);
    const now = Date.parse(command.now);
    const base = ref(command.sessionId);

    switch (command.type) {
      case 'Approve':
        if (!isCoach) return left(forbidden('coach'));
        if (session.state !== 'new') return left(invalid(session.state, 'approved'));
        if (now >= Date.parse(session.endsAt))
          return left({ code: 'invalid_transition', message: 'the session is over' });
        return right([{ type: 'SessionApproved', data: { ...base, at: command.now } }]);
      case 'Decline':
        if (!isCoach) return left(forbidden('coach'));
        if (session.state !== 'new') return left(invalid(session.state, 'declined'));
        return right([
          { type: 'SessionDeclined', data: { ...base, reason: command.reason, at: command.now } },
        ]);
      case 'Cancel': {
        if (!isCoach && !isClient) return left(forbidden('coach or client'));
        if (session.state !== 'new' && session.state !== 'approved')
          return left(invalid(session.state, 'canceled'));
        // Over, and never approved by the coach: it did not take place as booked, and without this the
        // client's payment would stay held until the coach declines (approving is closed by then).
        const unconfirmedAndOver = session.state === 'new' && now >= Date.parse(session.endsAt);
        if (isClient && unconfirmedAndOver)
          return right([
            {
              type: 'SessionCanceled',
              data: { ...base, by: 'client', reason: command.reason, at: command.now },
            },
          ]);
        if (now >= Date.parse(session.startsAt))
          return left({ code: 'invalid_transition', message: 'the session has started' });
        const deadline = Date.parse(session.startsAt) - state.cancellationHours * 3_600_000;
        if (isClient && now > deadline)
          return left({
            code: 'cancellation_window_passed',
            message: `a client may cancel up to ${state.cancellationHours} hours before the start`,
          });
        const by = isCoach ? 'coach' : 'client';
        return right([
          { type: 'SessionCanceled', data: { ...base, by, reason: command.reason, at: command.now } },
        ]);
      }
      case 'Complete':
        if (!isCoach) return left(forbidden('coach'));
        if (session.state !== 'approved') return left(invalid(session.state, 'completed'));
        if (now < Date.parse(session.startsAt))
          return left({ code: 'invalid_transition', message: 'the session has not started yet' });
        return right([{ type: 'SessionCompleted', data: { ...base, completedAt: command.now } }]);
      case 'Dispute':
        if (!isClient) return left(forbidden('client'));
        // Also an approved session that is over and that the coach never marked completed (a no-show): the
        // client could neither cancel it (started) nor dispute it, and had no way to be heard.
        if (session.state !== 'completed' && session.state !== 'approved')
          return left(invalid(session.state, 'disputed'));
        if (session.state === 'approved' && now < Date.parse(session.endsAt))
          return left({ code: 'invalid_transition', message: 'the session is not over yet' });
        if (
          now >
          Math.max(Date.parse(session.endsAt), Date.parse(session.completedAt ?? session.endsAt)) +
            DISPUTE_DAYS * 86_400_000
        )
          return left({
            code: 'invalid_transition',
            message: `disputes are possible for ${DISPUTE_DAYS} days after the session`,
          });
        return right([
          { type: 'SessionDisputed', data: { ...base, reason: command.reason, at: command.now } },
        ]);
      case 'Review':
        if (!isClient) return left(forbidden('client'));
        if (session.state !== 'completed') return left(invalid(session.state, 'reviewed'));
        if (session.reviewed)
          return left({ code: 'already_reviewed', message: 'this session has a review already' });
        return right([
          {
            type: 'SessionReviewed',
            data: { ...base, rating: command.rating, comment: command.comment, reviewedAt: command.now },
          },
        ]);
      case 'Reschedule': {
        const refused = refuseReschedule(state, command.sessionId, command.by, command.now);
        if (refused) return left(refused);
        if (command.to.startsAt === session.startsAt)
          return left({ code: 'invalid_transition', message: `the session is at ${session.slot} already` });
        const from = { startsAt: session.startsAt, endsAt: session.endsAt, slot: session.slot };
        const by = isCoach ? 'coach' : 'client';
        return right([
          rescheduled(state, command.sessionId, by, from, command.to, command.moveId, command.now),
        ]);
      }
      default:
        return assertNever(command);
    }
  },
};
