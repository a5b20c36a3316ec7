import type { DomainEvent } from '../../src/decider';

export const WEEKDAYS = [
  'monday',
  'tuesday',
  'wednesday',
  'thursday',
  'friday',
  'saturday',
  'sunday',
] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** Local wall-clock hours, "HH:mm", end after start. */
export interface Interval {
  start: string;
  end: string;
}

export interface Schedule {
  /** IANA zone the hours are in, e.g. "Europe/Berlin". */
  timezone: string;
  weekly: Partial<Record<Weekday, Interval[]>>;
  /** Per local date (YYYY-MM-DD): these hours instead of the weekday's; [] is a day off. */
  overrides: Record<string, Interval[]>;
}

/** One held slot: UTC instants plus the local label the client chose. */
export interface HeldSlot {
  sessionId: string;
  startsAt: string;
  endsAt: string;
  slot: string;
}

/** What a booking needs to be completed from the reservation alone (see commands/booking/complete.ts). */
export interface BookingTerms {
  paymentId: string;
  serviceName: string;
  price: number;
  currency: string;
  promo: boolean;
  minutesDuration: number;
  cancellationHours: number;
  numberOfSessions: number;
  expiresInDays: number;
  method: string;
  methodId: number;
  /** One of the coach's saved addresses where the session takes place; null: at the client's place. */
  addressId: string | null;
  /**
   * That address's name and text as they were when booked: the session keeps its place after the coach
   * deletes the address. Absent at the client's place, and in bookings made before it was copied.
   */
  place?: { name: string; address: string };
  clientAddress: string;
  clientLocation: { lat: number; lng: number } | null;
  parking: string;
  parkingDescription: string;
  orderDescription: string;
  paymentExpiresAt: string;
  /**
   * Minutes the coach travels to the client's place and back, each way (0 at the coach's address or with no
   * default address to start from); blocked on the calendar before and after each session. Absent in
   * bookings made before travel was computed (read as 0).
   */
  minutesTravel?: number;
}

export type ScheduleSet = DomainEvent<'ScheduleSet', { coachId: string; schedule: Schedule; setAt: string }>;
export type SlotsReserved = DomainEvent<
  'SlotsReserved',
  {
    coachId: string;
    groupId: string;
    serviceId: string;
    clientId: string;
    groupSession: boolean;
    maxGroupSize: number;
    /** The schedule's zone when reserved: the booking's dates are shown in it. */
    timezone: string;
    sessions: HeldSlot[];
    terms: BookingTerms;
    reservedAt: string;
    /**
     * Set when these sessions are booked later against an earlier booking's package (`groupId` is that
     * booking's): same payment and terms, no new payment. `bookedAt` is then the package's booking time.
     */
    packageTopUp?: { bookedAt: string };
  }
>;
export type SlotsReleased = DomainEvent<
  'SlotsReleased',
  { coachId: string; groupId: string; sessionIds: string[]; reason: string; releasedAt: string }
>;

/**
 * One held session moved to another time, in one event: the new time is taken and the old one freed at
 * once (the hold keeps its travel, place and seat). `moveId` names the move: the booking's
 * `SessionRescheduled` carries it, so the booking process writes a missing one exactly once.
 */
export type SlotMoved = DomainEvent<
  'SlotMoved',
  {
    coachId: string;
    groupId: string;
    sessionId: string;
    serviceId: string;
    clientId: string;
    from: Omit<HeldSlot, 'sessionId'>;
    to: Omit<HeldSlot, 'sessionId'>;
    /** Who moved it (the booking's `SessionRescheduled.by`). */
    by: 'client' | 'coach';
    moveId: string;
    movedAt: string;
  }
>;

export type CalendarEvent = ScheduleSet | SlotsReserved | SlotsReleased | SlotMoved;

export const calendarStream = (coachId: string) => `calendar-${coachId}`;
