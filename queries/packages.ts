import type { BookingTerms } from '../commands/calendar/events';
import { packageExpiresAt } from '../commands/calendar/decider';
import { packageLastDay } from '../commands/calendar/slots';
import type { Queryable } from '../src/db/database';
import { EXPIRABLE_STATUSES, paidAtSession } from '../commands/payments/transitions';
import type { PaymentStatus } from '../commands/payments/events';

/** A client's package (a booking of a service with numberOfSessions > 1) and what is left of it. */
export interface PackageOut {
  /** The booking's groupId: send it as `packageId` to book the remaining sessions. */
  packageId: string;
  serviceId: string;
  serviceName: string;
  numberOfSessions: number;
  /** Sessions booked and not declined or canceled (those give their session back). */
  bookedSessions: number;
  remainingSessions: number;
  /** dd/mm/yyyy, the last day the package may be used (booked + expiresInDays), coach's zone. */
  expirationDate: string;
  expired: boolean;
  paymentState: string;
  /** Whether more sessions can be booked on it now: sessions left, not expired, payment not closed. */
  open: boolean;
}

const CLOSED_PAYMENTS = ['canceled', 'deleted', 'refund'];

/** The packages of a client, from the `sessions` read model, newest first; filters by coach and service. */
export async function clientPackages(
  db: Queryable,
  clientId: string,
  filter: { coachId?: string; serviceId?: string },
  now: Date,
): Promise<PackageOut[]> {
  return (await clientPackagesUntil(db, clientId, filter, now)).packages;
}

/**
 * `clientPackages`, and `until`: the first instant (epoch ms, exclusive) at which time alone changes the
 * answer (a package expires: `expired` and `open` flip). Nothing else here depends on `now`. `openUntil`:
 * by service, the latest instant a session of the client's open packages of it may take place.
 */
export async function clientPackagesUntil(
  db: Queryable,
  clientId: string,
  filter: { coachId?: string; serviceId?: string },
  now: Date,
): Promise<{ packages: PackageOut[]; until: number; openUntil: Map<string, number> }> {
  let until = Infinity;
  const openUntil = new Map<string, number>();
  const res = await db.query<{
    group_id: string;
    service_id: string;
    booked_at: Date;
    timezone: string;
    terms: BookingTerms;
    used: string;
    payment_state: PaymentStatus;
  }>(
    `SELECT group_id, service_id, min(booked_at) AS booked_at, min(timezone) AS timezone,
       (array_agg(terms ORDER BY starts_at))[1] AS terms,
       count(*) FILTER (WHERE state NOT IN ('declined', 'canceled'))::text AS used,
       min(payment_state) AS payment_state
     FROM sessions
     WHERE client_id = $1 AND ($2::uuid IS NULL OR coach_id = $2) AND ($3::uuid IS NULL OR service_id = $3)
     GROUP BY group_id, service_id
     ORDER BY min(booked_at) DESC, group_id`,
    [clientId, filter.coachId ?? null, filter.serviceId ?? null],
  );
  const packages = res.rows
    .filter((r) => r.terms.numberOfSessions > 1)
    .map((r) => {
      const bookedAt = new Date(r.booked_at).toISOString();
      const n = r.terms.numberOfSessions;
      const used = Number(r.used);
      const expiresAt = packageExpiresAt({ bookedAt, terms: r.terms }, r.timezone);
      const expired = now.getTime() > expiresAt;
      if (!expired) until = Math.min(until, expiresAt + 1);
      const remaining = Math.max(0, n - used);
      // Unpaid at its payment deadline: the expiry cancels it (never cash), and booking says package_canceled.
      const dueAt = Date.parse(r.terms.paymentExpiresAt);
      const expirable =
        EXPIRABLE_STATUSES.includes(r.payment_state) &&
        !paidAtSession(r.terms.method) &&
        Number.isFinite(dueAt);
      const unpaidPastDue = expirable && now.getTime() >= dueAt;
      if (expirable && !unpaidPastDue) until = Math.min(until, dueAt);
      // A package whose every session was declined or canceled books nothing more (package_canceled), also
      // a free one, whose payment stays received.
      const open =
        used > 0 && remaining > 0 && !expired && !unpaidPastDue && !CLOSED_PAYMENTS.includes(r.payment_state);
      if (open) openUntil.set(r.service_id, Math.max(openUntil.get(r.service_id) ?? -Infinity, expiresAt));
      return {
        packageId: r.group_id,
        serviceId: r.service_id,
        serviceName: r.terms.serviceName,
        numberOfSessions: n,
        bookedSessions: used,
        remainingSessions: remaining,
        expirationDate: packageLastDay(bookedAt, r.terms.expiresInDays, r.timezone).toFormat('dd/MM/yyyy'),
        expired,
        paymentState: r.payment_state,
        open,
      };
    });
  return { packages, until, openUntil };
}
