import { DateTime } from 'luxon';
import type { Booking } from '../../commands/booking/decider';
import type { BookingTerms, SlotsReserved } from '../../commands/calendar/events';
import { dayMonthYear, packageLastDay } from '../../commands/calendar/slots';
import { initialStatus } from '../../commands/payments/transitions';
import { currencyDecimals } from '../../commands/services/decider';

/** What the Session reply is made of: a sessions row, or a fresh booking before its row exists. */
export interface SessionRecord {
  id: string;
  groupId: string;
  coachId: string;
  clientId: string;
  serviceId: string;
  state: string;
  paymentState: string;
  startsAt: string;
  endsAt: string;
  slot: string;
  timezone: string;
  terms: BookingTerms;
  bookedAt: string;
  reviewed: boolean;
}

/**
 * A session's share of its booking's price (a package's price over its sessions), in the currency's minor
 * unit: 10000 JPY over 3 is 3333 (yen have no decimals), 10 BHD is 3.333, 100 EUR is 33.33.
 */
export function sessionShare(terms: Pick<BookingTerms, 'price' | 'currency' | 'numberOfSessions'>): number {
  const unit = 10 ** currencyDecimals(terms.currency);
  // toPrecision drops the binary noise of the division (1.005 * 100 is 100.49999999999999) before rounding.
  const minor = Number(((terms.price / Math.max(1, terms.numberOfSessions)) * unit).toPrecision(12));
  return Math.round(minor) / unit;
}

/**
 * The interface document's `Session`, plus `slot` (local), `startsAt`/`endsAt` (UTC) and `reviewed`.
 * `dayAvailability` is the ISO weekday (1 = Monday) of the slot; `expirationDate` is the last day the
 * booking's package can be used (booking day + the service's expiresInDays); both dates are dd/mm/yyyy in
 * the coach's zone, as the interface document writes them.
 */
export const toSessionOut = (s: SessionRecord) => ({
  id: s.id,
  name: s.terms.serviceName,
  state: s.state,
  price: sessionShare(s.terms),
  currency: s.terms.currency,
  dayAvailability: DateTime.fromISO(s.slot).weekday,
  minutesDuration: s.terms.minutesDuration,
  minutesTravel: s.terms.minutesTravel ?? 0,
  promo: s.terms.promo,
  parking: s.terms.parking,
  parkingDescription: s.terms.parkingDescription,
  orderDescription: s.terms.orderDescription,
  paymentId: s.terms.paymentId,
  coachId: s.coachId,
  clientId: s.clientId,
  serviceId: s.serviceId,
  addressId: s.terms.addressId,
  clientAddress: s.terms.clientAddress,
  clientLocation: s.terms.clientLocation,
  groupId: s.groupId,
  expirationDate: packageLastDay(s.bookedAt, s.terms.expiresInDays, s.timezone).toFormat('dd/MM/yyyy'),
  paymentState: s.paymentState,
  paymentExpirationAt: dayMonthYear(s.terms.paymentExpiresAt, s.timezone),
  slot: s.slot,
  startsAt: s.startsAt,
  endsAt: s.endsAt,
  reviewed: s.reviewed,
});

export type SessionOut = ReturnType<typeof toSessionOut>;

/** A session's record from its booking's own stream (and its payment's status): exact while read models lag. */
export function sessionRecordOf(b: Booking, sessionId: string, paymentState: string): SessionRecord | null {
  const s = b.sessions.get(sessionId);
  if (!s || !b.groupId || !b.terms) return null;
  return {
    id: sessionId,
    groupId: b.groupId,
    coachId: b.coachId,
    clientId: b.clientId,
    serviceId: b.serviceId,
    state: s.state,
    paymentState,
    startsAt: s.startsAt,
    endsAt: s.endsAt,
    slot: s.slot,
    timezone: b.timezone,
    terms: s.terms ?? b.terms,
    bookedAt: b.bookedAt,
    reviewed: s.reviewed,
  };
}

/** The sessions of a fresh booking, from its hold alone (the booking's reply, before any read model). */
export const sessionRecordsOfHold = (h: SlotsReserved['data']): SessionRecord[] =>
  h.sessions.map((s) => ({
    id: s.sessionId,
    groupId: h.groupId,
    coachId: h.coachId,
    clientId: h.clientId,
    serviceId: h.serviceId,
    state: 'new',
    paymentState: initialStatus(h.terms.price),
    startsAt: s.startsAt,
    endsAt: s.endsAt,
    slot: s.slot,
    timezone: h.timezone,
    terms: h.terms,
    bookedAt: h.packageTopUp?.bookedAt ?? h.reservedAt,
    reviewed: false,
  }));
