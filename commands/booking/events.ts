import type { DomainEvent } from '../../src/decider';
import type { BookingTerms, HeldSlot } from '../calendar/events';

/** A session's states (the Session resource's `state`). */
export const SESSION_STATES = ['new', 'approved', 'declined', 'canceled', 'completed', 'disputed'] as const;
export type SessionState = (typeof SESSION_STATES)[number];
export type Actor = 'client' | 'coach' | 'system';

interface SessionRef {
  groupId: string;
  sessionId: string;
  coachId: string;
  clientId: string;
  serviceId: string;
}

/** The sessions of one booking group, created from its reservation (same ids, so completing it is idempotent). */
export type SessionsBooked = DomainEvent<
  'SessionsBooked',
  {
    groupId: string;
    coachId: string;
    clientId: string;
    serviceId: string;
    sessions: HeldSlot[];
    terms: BookingTerms;
    /** The coach's zone, for the dd/mm/yyyy dates of the reply. */
    timezone: string;
    bookedAt: string;
  }
>;
export type SessionApproved = DomainEvent<'SessionApproved', SessionRef & { at: string }>;
export type SessionDeclined = DomainEvent<'SessionDeclined', SessionRef & { reason: string; at: string }>;
export type SessionCanceled = DomainEvent<
  'SessionCanceled',
  SessionRef & { by: Actor; reason: string; at: string }
>;
export type SessionCompleted = DomainEvent<'SessionCompleted', SessionRef & { completedAt: string }>;
export type SessionDisputed = DomainEvent<'SessionDisputed', SessionRef & { reason: string; at: string }>;
export type SessionReviewed = DomainEvent<
  'SessionReviewed',
  SessionRef & { rating: number; comment: string; reviewedAt: string }
>;

/** A session's time as held: UTC instants and the local label in the booking's zone. */
export interface SessionTime {
  startsAt: string;
  endsAt: string;
  slot: string;
}

/**
 * A session moved to another time (same session, payment, price and place). `moveId` is the calendar's
 * `SlotMoved.moveId`: the booking records each move of the hold once. `state` is the session's state after
 * the move (an approved session moved by its client is `new` again).
 */
export type SessionRescheduled = DomainEvent<
  'SessionRescheduled',
  SessionRef & {
    from: SessionTime;
    to: SessionTime;
    by: 'client' | 'coach';
    state: 'new' | 'approved';
    moveId: string;
    at: string;
  }
>;

export type BookingEvent =
  | SessionsBooked
  | SessionRescheduled
  | SessionApproved
  | SessionDeclined
  | SessionCanceled
  | SessionCompleted
  | SessionDisputed
  | SessionReviewed;

export const bookingStream = (groupId: string) => `booking-${groupId}`;

/**
 * One entry of a client's own list of bookings (`bookings-of-<clientId>`): the write side's way from a
 * client to its payments (endpoint 17) and from a session id to its booking stream. Appended when the
 * booking is completed; a crash may list a booking twice, so readers keep the first entry per group.
 */
export type BookingListed = DomainEvent<
  'BookingListed',
  {
    groupId: string;
    clientId: string;
    coachId: string;
    serviceId: string;
    paymentId: string;
    sessionIds: string[];
    bookedAt: string;
  }
>;

export const clientBookingsStream = (clientId: string) => `bookings-of-${clientId}`;
