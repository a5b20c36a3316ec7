import type { ServiceFields, ServiceStatus } from '../../commands/services/events';

/** The interface document's `Service`, plus minimumNoticeHours and bookingWindowDays. */
export interface ServiceOut extends ServiceFields {
  id: string;
  status: ServiceStatus;
}

export const toServiceOut = (s: ServiceFields & { id: string; status: ServiceStatus }): ServiceOut => ({
  id: s.id,
  name: s.name,
  description: s.description,
  promo: s.promo,
  price: s.price,
  priceCurrency: s.priceCurrency,
  serviceOtherType: s.serviceOtherType,
  sessionMinutesDuration: s.sessionMinutesDuration,
  sessionCancellationHours: s.sessionCancellationHours,
  status: s.status,
  serviceTypes: s.serviceTypes,
  numberOfSessions: s.numberOfSessions,
  expiresInDays: s.expiresInDays,
  groupSession: s.groupSession,
  maxGroupSize: s.maxGroupSize,
  slots: s.slots,
  minimumNoticeHours: s.minimumNoticeHours,
  bookingWindowDays: s.bookingWindowDays,
});
