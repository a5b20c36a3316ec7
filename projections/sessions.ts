import type { BookingEvent } from '../commands/booking/events';
import type { PaymentCreated, PaymentStatusChanged } from '../commands/payments/events';
import { assertNever } from '../src/decider';
import type { Projection } from './runner';
import { bumped, bumpedRows, userScope } from '../src/readModels/readVersions';

const STATE_OF = {
  SessionApproved: 'approved',
  SessionDeclined: 'declined',
  SessionCanceled: 'canceled',
  SessionCompleted: 'completed',
  SessionDisputed: 'disputed',
} as const;

/**
 * Each change to a client's sessions bumps the client's cached packages (availability) with it (several
 * sessions: with the first; a rebuild replays the plain statement, one text it can merge).
 */
const INSERT_SESSION = `INSERT INTO sessions (id, group_id, coach_id, client_id, service_id, payment_id, state, payment_state,
   starts_at, ends_at, slot, timezone, terms, booked_at, updated_at)
 VALUES ($1, $2, $3, $4, $5, $6, 'new',
   -- a package's later sessions share its payment, which may have moved on already
   COALESCE((SELECT payment_state FROM sessions WHERE payment_id = $6 LIMIT 1), 'awaiting'),
   $7, $8, $9,
   -- the zone of the booking's dates (expirationDate, paymentExpirationAt): a package's later sessions keep
   -- the package's, also when booked after the coach changed the schedule's zone
   COALESCE((SELECT timezone FROM sessions WHERE group_id = $2 LIMIT 1), $10),
   $11::jsonb, $12, $12)
 ON CONFLICT (id) DO NOTHING`;
const INSERT_SESSION_BUMPED = bumped(INSERT_SESSION, 'sessions');
// `revision` counts the changes a calendar feed shows (its SEQUENCE): the state, the time.
const SET_STATE = bumpedRows(
  'UPDATE sessions SET state = $2, updated_at = $3, revision = revision + 1 WHERE id = $1',
  'client_id',
  'sessions',
);
const RESCHEDULE = bumpedRows(
  'UPDATE sessions SET starts_at = $2, ends_at = $3, slot = $4, state = $5, updated_at = $6, revision = revision + 1 WHERE id = $1',
  'client_id',
  'sessions',
);
/**
 * A seat moved away from a group slot: the seats left there (any state, with the same coach, service and
 * start) count the change, more than the moved seat took with it, so the slot's count in a coach's feed
 * (queries/calendarFeed.ts, the sum over its seats) still grows.
 */
const LEFT_BEHIND = `UPDATE sessions
  SET revision = revision + 2 + COALESCE((SELECT m.revision FROM sessions m WHERE m.id = $4), 0)
  WHERE coach_id = $1 AND service_id = $2 AND starts_at = $3 AND id <> $4`;
const SET_PAYMENT_STATE = bumpedRows(
  'UPDATE sessions SET payment_state = $2, updated_at = $3 WHERE payment_id = $1',
  'client_id',
  'sessions',
);

/** Read model `sessions`: one row per booked session, its lifecycle state and its payment's status. */
export const sessionsProjection: Projection = {
  name: 'sessions',
  handles: [
    'SessionsBooked',
    ...Object.keys(STATE_OF),
    'SessionReviewed',
    'SessionRescheduled',
    'PaymentCreated',
    'PaymentStatusChanged',
  ],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as
      BookingEvent | PaymentCreated | PaymentStatusChanged;
    const at = recorded.createdAt.toISOString();
    switch (event.type) {
      case 'SessionsBooked': {
        const d = event.data;
        for (const [i, s] of d.sessions.entries())
          await tx.query(i === 0 ? INSERT_SESSION_BUMPED : INSERT_SESSION, [
            s.sessionId,
            d.groupId,
            d.coachId,
            d.clientId,
            d.serviceId,
            d.terms.paymentId,
            s.startsAt,
            s.endsAt,
            s.slot,
            d.timezone,
            JSON.stringify(d.terms),
            d.bookedAt,
            ...(i === 0 ? [[userScope(d.clientId)]] : []),
          ]);
        return;
      }
      case 'SessionApproved':
      case 'SessionDeclined':
      case 'SessionCanceled':
      case 'SessionCompleted':
      case 'SessionDisputed':
        await tx.query(SET_STATE, [event.data.sessionId, STATE_OF[event.type], at]);
        return;
      case 'SessionReviewed':
        await tx.query('UPDATE sessions SET reviewed = true, updated_at = $2 WHERE id = $1', [
          event.data.sessionId,
          at,
        ]);
        return;
      case 'SessionRescheduled': {
        const d = event.data;
        // Before the move (it reads the moved seat's count); write-only, as a batched rebuild replays it.
        await tx.query(LEFT_BEHIND, [d.coachId, d.serviceId, d.from.startsAt, d.sessionId]);
        await tx.query(RESCHEDULE, [d.sessionId, d.to.startsAt, d.to.endsAt, d.to.slot, d.state, at]);
        return;
      }
      case 'PaymentCreated':
        // A booking's sessions are written before its payment, as `awaiting`; a free booking's payment is
        // created received (commands/payments/transitions.ts, initialStatus). Nothing to write otherwise.
        if (event.data.status !== 'awaiting')
          await tx.query(SET_PAYMENT_STATE, [event.data.paymentId, event.data.status, at]);
        return;
      case 'PaymentStatusChanged':
        await tx.query(SET_PAYMENT_STATE, [event.data.paymentId, event.data.to, at]);
        return;
      default:
        assertNever(event);
    }
  },
};
