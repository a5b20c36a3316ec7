import type { DomainEvent } from '../../src/decider';

export type ServiceStatus = 'review' | 'approved' | 'rejected';

/** The fields a coach gives a service: the interface document's `Service` without id and status. */
export interface ServiceFields {
  name: string;
  description: string;
  promo: boolean;
  price: number;
  priceCurrency: string;
  serviceOtherType: string;
  sessionMinutesDuration: number;
  sessionCancellationHours: number;
  serviceTypes: string[];
  numberOfSessions: number;
  expiresInDays: number;
  groupSession: boolean;
  maxGroupSize: number;
  /**
   * Start times the service may be booked at, inside the coach's schedule: `HH:mm` (every day) or
   * `<weekday> HH:mm`, local to the coach's zone; empty: every step of the session length (docs/api.md).
   */
  slots: string[];
  /** Not in the interface document: how long before its start a slot can still be booked. */
  minimumNoticeHours: number;
  /** Not in the interface document: how many days ahead a slot can be booked. */
  bookingWindowDays: number;
}

export type ServiceCreated = DomainEvent<
  'ServiceCreated',
  { serviceId: string; coachId: string } & ServiceFields & { status: 'review'; createdAt: string }
>;
/** Only the fields that changed, with their new values. */
export type ServiceUpdated = DomainEvent<
  'ServiceUpdated',
  { serviceId: string; coachId: string; changes: Partial<ServiceFields>; updatedAt: string }
>;
export type ServiceApproved = DomainEvent<
  'ServiceApproved',
  { serviceId: string; coachId: string; at: string }
>;
export type ServiceRejected = DomainEvent<
  'ServiceRejected',
  { serviceId: string; coachId: string; reason: string; at: string }
>;
/** A rejected service the coach edited goes back to review (status rejected -> review). */
export type ServiceResubmitted = DomainEvent<
  'ServiceResubmitted',
  { serviceId: string; coachId: string; at: string }
>;

export type ServiceEvent =
  ServiceCreated | ServiceUpdated | ServiceApproved | ServiceRejected | ServiceResubmitted;

export const serviceStream = (serviceId: string) => `service-${serviceId}`;
