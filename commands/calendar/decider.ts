import { left, right } from 'fp-ts/Either';
import { assertNever, type Decider, type DomainError } from '../../src/decider';
import type { ServiceState } from '../services/decider';
import type { BookingTerms, CalendarEvent, HeldSlot, Schedule } from './events';
import { paidAtSession } from '../payments/transitions';
import { PersistentMap } from '../../src/persistentMap';
import {
  freeSlots,
  instantsOf,
  packageLastDay,
  parseLocal,
  placeKey,
  slotRulesOf,
  withoutPastOverrides,
  type Reservation,
  type SlotRules,
} from './slots';
import { holdsAround, indexHold, unindexHold, type HoldsByDay } from './holdsByDay';

/** The one place that decides whether a coach's slot is free: all of its schedule and active holds. */
export interface Calendar {
  schedule: Schedule | null;
  /** Active holds by session id (persistent maps: a booking must not copy the coach's whole calendar). */
  reservations: PersistentMap<Reservation & { groupId: string }>;
  /** The same holds' session ids by the UTC dates their busy time touches (see holdsByDay.ts). */
  holdsByDay: HoldsByDay;
  /** Every booking's package as first booked (by group id): the terms later sessions are booked on. */
  packages: PersistentMap<PackageOf>;
}

export interface PackageOf {
  clientId: string;
  serviceId: string;
  terms: BookingTerms;
  bookedAt: string;
  /**
   * The schedule's zone when the package was booked: its sessions show their `expirationDate` in it, so it
   * expires at the end of that day there, also after the coach changed zone.
   */
  timezone: string;
}

/**
 * The last moment a package may be used: the end (in the coach's zone) of its `expirationDate`, the local
 * day it was booked plus `expiresInDays` calendar days, as the Session reply shows it.
 */
export const packageExpiresAt = (
  p: Pick<PackageOf, 'bookedAt'> & { terms: Pick<BookingTerms, 'expiresInDays'> },
  zone: string,
): number => packageLastDay(p.bookedAt, p.terms.expiresInDays, zone).endOf('day').toMillis();

export type CalendarCommand =
  | { type: 'SetSchedule'; coachId: string; schedule: Schedule; now: string }
  | {
      type: 'ReserveSlots';
      /**
       * The service as folded from its own stream (`service-<id>`) just before deciding: its status and
       * terms are checked here, never taken from a read model that may lag or have stopped.
       */
      service: BookableService;
      groupId: string;
      clientId: string;
      /** Local date-times in the coach's zone, as the client sent them. */
      slots: string[];
      sessionIds: string[];
      /** The client's part of the terms; the service's part comes from `service`. */
      order: ClientOrder;
      /** How long an unpaid booking holds its slots; capped at one hour before the first session. */
      paymentWindowHours: number;
      now: string;
      /**
       * Book against this earlier booking's package (its group id) instead of buying a new one; with
       * whether its payment is still open (from the payment's stream: a canceled package books nothing).
       */
      package?: {
        groupId: string;
        paymentOpen: boolean;
        /** Not received yet (from the payment's stream): it may still expire at its deadline. */
        paymentUnpaid: boolean;
        /**
         * In a status the expiry cancels at its deadline (`awaiting`, `failed`): once that has passed the
         * package is due to be canceled with its sessions, whether or not the sweep got to it yet.
         */
        paymentExpirable: boolean;
      };
    }
  | {
      type: 'ReleaseSlots';
      coachId: string;
      groupId: string;
      sessionIds: string[];
      reason: string;
      now: string;
    }
  | MoveSlot;

/**
 * Move one held session to another slot of its service (a reschedule): free by the rules a booking of the
 * service at the session's place uses, its own current hold not counting against it.
 */
export interface MoveSlot {
  type: 'MoveSlot';
  /** The service as folded from its own stream: its hours rules (notice, window, start times, seats). */
  service: BookableService;
  groupId: string;
  sessionId: string;
  /** Who moves it (checked on the booking: its client or its coach). */
  by: 'client' | 'coach';
  /** Where the booking has the session now: the hold must be there still (else it moved meanwhile). */
  from: Omit<HeldSlot, 'sessionId'>;
  /** The new local date-time in the coach's zone, as sent. */
  slot: string;
  /** The session's own length as booked (it keeps it, and its price). */
  minutesDuration: number;
  /**
   * The payment is unpaid in a status its deadline cancels (`awaiting`, `failed`): the session may not start
   * before one hour after that deadline (the hour a booking keeps before its first session).
   */
  paymentExpirable: boolean;
  moveId: string;
  now: string;
}

export type BookableService = NonNullable<ServiceState['service']>;

/** What the client adds to a booking: its payment id and method, where the session is, its notes. */
export type ClientOrder = Pick<
  BookingTerms,
  | 'paymentId'
  | 'method'
  | 'methodId'
  | 'addressId'
  | 'place'
  | 'clientAddress'
  | 'clientLocation'
  | 'parking'
  | 'parkingDescription'
  | 'orderDescription'
  | 'minutesTravel'
>;

/** A package's terms without the place of its first booking (a later session is at its own order's). */
const termsWithoutPlace = (terms: BookingTerms): BookingTerms => {
  const rest = { ...terms };
  delete rest.place;
  return rest;
};

/** The service's part of a booking's terms, as the service is when the booking is decided. */
export const serviceTermsOf = (s: BookableService) => ({
  serviceName: s.name,
  price: s.price,
  currency: s.priceCurrency,
  promo: s.promo,
  minutesDuration: s.sessionMinutesDuration,
  cancellationHours: s.sessionCancellationHours,
  numberOfSessions: s.numberOfSessions,
  expiresInDays: s.expiresInDays,
});

/**
 * A service that cannot be booked answers as if it did not exist (rejected or in review). A package sold
 * while it was approved keeps its sessions after a withdrawal: what was paid for is still owed (the
 * package's own rules, below, still hold), while new sales stop.
 */
function refuseService(command: Extract<CalendarCommand, { type: 'ReserveSlots' }>): DomainError | null {
  const s = command.service;
  if (s.status !== 'approved' && !command.package)
    return { code: 'service_not_found', message: 'no such bookable service' };
  if (s.coachId === command.clientId)
    return { code: 'forbidden', message: 'a coach cannot book its own service' };
  if (!command.package && command.slots.length > s.numberOfSessions)
    return {
      code: 'validation',
      message: `this service books at most ${s.numberOfSessions} slot(s) at once`,
      locs: [['body', 'slots']],
    };
  return null;
}

/**
 * Sessions booked later against a package: only by its client, for its service, while its payment is open,
 * by its expiration date, and no more than its numberOfSessions (declined and canceled ones give their
 * session back, as their holds are released).
 */
function refusePackage(
  command: Extract<CalendarCommand, { type: 'ReserveSlots' }>,
  state: Calendar,
): DomainError | null {
  const ref = command.package!;
  const pkg = state.packages.get(ref.groupId);
  if (!pkg || pkg.clientId !== command.clientId)
    return { code: 'package_not_found', message: 'packageId is not one of your bookings' };
  if (pkg.serviceId !== command.service.id)
    return {
      code: 'validation',
      message: 'packageId is a booking of another service',
      locs: [['body', 'packageId']],
    };
  if (!ref.paymentOpen)
    return { code: 'package_canceled', message: "the package's payment was canceled or refunded" };
  // Unpaid at its deadline: the expiry cancels it (never cash), so a session held now would be canceled
  // with it within seconds of being answered 200.
  if (
    ref.paymentExpirable &&
    !paidAtSession(pkg.terms.method) &&
    Date.parse(command.now) >= Date.parse(pkg.terms.paymentExpiresAt)
  )
    return {
      code: 'package_canceled',
      message: `the package's payment was not made by its deadline, ${new Date(pkg.terms.paymentExpiresAt).toISOString()}`,
    };
  const used = [...state.reservations.values()].filter((r) => r.groupId === ref.groupId).length;
  // Every session declined or canceled (a completed one stays held): the package is over, though its
  // payment may stay open a moment (settled by the booking process) or for good (a free one stays received).
  if (used === 0)
    return { code: 'package_canceled', message: 'every session of the package was declined or canceled' };
  const expires = packageExpiresAt(pkg, pkg.timezone);
  if (Date.parse(command.now) > expires)
    return { code: 'package_expired', message: 'the package has expired' };
  const left_ = pkg.terms.numberOfSessions - used;
  if (command.slots.length > left_)
    return {
      code: 'package_exhausted',
      message: `the package has ${Math.max(0, left_)} of ${pkg.terms.numberOfSessions} session(s) left`,
    };
  return null;
}

/** The shortest time a booking gets to be paid, unless its session starts sooner. */
export const MIN_PAYMENT_MINUTES = 15;
/** A booking is to be paid this long before its first session (unless booked at shorter notice). */
const PAID_BEFORE_START_MS = 3_600_000;

const unavailable = (message: string): DomainError => ({ code: 'slot_unavailable', message });

/**
 * Why `slot` (starting at `start`, epoch ms), which the rules do not offer, is not free, in words that tell
 * the client what to choose: passed, inside the minimum notice, past the booking window, not a start time of
 * the service within the coach's hours (the rules offer it on an empty calendar neither), or taken (a seat
 * too: the group slot is full). It said "is not a free slot of this service" in every case.
 */
function notFree(
  slot: string,
  start: number,
  now: Date,
  schedule: Schedule,
  rules: SlotRules,
  date: string,
  travel: number,
): DomainError {
  const t = now.getTime();
  if (start <= t) return unavailable(`${slot} has passed: choose a later slot of the availability`);
  if (start < t + rules.minimumNoticeHours * 3_600_000)
    return unavailable(
      `${slot} is too soon: this service is booked at least ${rules.minimumNoticeHours} hour(s) before its start`,
    );
  if (start > t + rules.bookingWindowDays * 86_400_000)
    return unavailable(
      `${slot} is too far ahead: this service is booked at most ${rules.bookingWindowDays} day(s) ahead`,
    );
  if (!freeSlots(schedule, [], rules, date, date, now, travel, slot.slice(0, 16))[0])
    return unavailable(
      `${slot} is not a start time of this service within the coach's hours: choose a slot of the availability`,
    );
  return unavailable(
    `${slot} is taken${rules.groupSession ? ': no seat is left;' : ':'} choose another slot of the availability`,
  );
}

export const calendar: Decider<CalendarCommand, CalendarEvent, Calendar> = {
  initialState: () => ({
    schedule: null,
    reservations: PersistentMap.empty(),
    holdsByDay: PersistentMap.empty(),
    packages: PersistentMap.empty(),
  }),

  evolve(state, event) {
    switch (event.type) {
      case 'ScheduleSet':
        return { ...state, schedule: event.data.schedule };
      case 'SlotsReserved': {
        let { reservations, holdsByDay } = state;
        const { groupId, serviceId, clientId } = event.data;
        for (const s of event.data.sessions) {
          const hold = {
            sessionId: s.sessionId,
            serviceId,
            clientId,
            groupId,
            startsAt: s.startsAt,
            endsAt: s.endsAt,
            travelMinutes: event.data.terms.minutesTravel ?? 0,
            place: placeKey(event.data.terms.addressId, event.data.terms.clientLocation),
            shared: event.data.groupSession,
          };
          const before = reservations.get(s.sessionId);
          if (before) holdsByDay = unindexHold(holdsByDay, before);
          reservations = reservations.set(s.sessionId, hold);
          holdsByDay = indexHold(holdsByDay, hold);
        }
        if (state.packages.has(groupId)) return { ...state, reservations, holdsByDay };
        const packages = state.packages.set(groupId, {
          clientId,
          serviceId,
          terms: event.data.terms,
          bookedAt: event.data.packageTopUp?.bookedAt ?? event.data.reservedAt,
          timezone: event.data.timezone,
        });
        return { ...state, reservations, holdsByDay, packages };
      }
      case 'SlotMoved': {
        const hold = state.reservations.get(event.data.sessionId);
        if (!hold) return state;
        const moved = { ...hold, startsAt: event.data.to.startsAt, endsAt: event.data.to.endsAt };
        return {
          ...state,
          reservations: state.reservations.set(hold.sessionId, moved),
          holdsByDay: indexHold(unindexHold(state.holdsByDay, hold), moved),
        };
      }
      case 'SlotsReleased': {
        let { reservations, holdsByDay } = state;
        for (const id of event.data.sessionIds) {
          const hold = reservations.get(id);
          if (!hold) continue;
          reservations = reservations.delete(id);
          holdsByDay = unindexHold(holdsByDay, hold);
        }
        return { ...state, reservations, holdsByDay };
      }
      default:
        return assertNever(event);
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'SetSchedule':
        return right([
          {
            type: 'ScheduleSet',
            data: {
              coachId: command.coachId,
              schedule: withoutPastOverrides(command.schedule, command.now),
              setAt: command.now,
            },
          },
        ]);

      case 'ReserveSlots': {
        const refused = refuseService(command);
        if (refused) return left(refused);
        // Group seats are shared only at the place this order names (see placeKey).
        const rules = {
          ...slotRulesOf(command.service),
          place: placeKey(command.order.addressId, command.order.clientLocation),
        };
        const { schedule } = state;
        if (!schedule) return left(unavailable('the coach has not published a schedule'));
        const pkg = command.package ? state.packages.get(command.package.groupId) : undefined;
        if (command.package) {
          const refusedPackage = refusePackage(command, state);
          if (refusedPackage) return left(refusedPackage);
        }
        const now = new Date(command.now);
        // A package's sessions take place by its expiration date, those of its first request too (booked at
        // once or one by one, the same sessions of the same package).
        const expiresAt = pkg
          ? packageExpiresAt(pkg, pkg.timezone)
          : command.service.numberOfSessions > 1
            ? packageExpiresAt(
                { bookedAt: command.now, terms: { expiresInDays: command.service.expiresInDays } },
                schedule.timezone,
              )
            : Infinity;
        const held: HeldSlot[] = [];
        for (const [i, slot] of command.slots.entries()) {
          const start = parseLocal(slot, schedule.timezone);
          if (!start) return left(unavailable(`${slot} does not exist in ${schedule.timezone}`));
          const date = start.toISODate()!;
          // Earlier slots of this same request count as taken, so a package cannot overlap itself.
          const travel = command.order.minutesTravel ?? 0;
          // The holds of the days around the slot: a superset of what the check below can compare (the
          // slot's local day, a day either side for zone offsets, and this booking's travel), never the
          // whole calendar.
          const margin = 3 * 86_400_000 + travel * 60_000;
          const at = start.toMillis();
          const active = holdsAround(state.reservations, state.holdsByDay, at - margin, at + margin);
          const taken = held.length
            ? [
                ...active,
                ...held.map((h) => ({
                  ...h,
                  serviceId: '',
                  clientId: command.clientId,
                  travelMinutes: travel,
                })),
              ]
            : active;
          // A client holds one seat of a slot: said so also when the slot is full (not merely "not free").
          const sameClient = active.some(
            (r) =>
              r.clientId === command.clientId && r.serviceId === command.service.id && instantsOf(r).s === at,
          );
          if (sameClient) return left(unavailable(`you already hold ${slot}`));
          // Only the asked slot is checked (by the same rules that list free slots).
          const free = freeSlots(schedule, taken, rules, date, date, now, travel, slot.slice(0, 16))[0];
          if (!free) return left(notFree(slot, at, now, schedule, rules, date, travel));
          if (Date.parse(free.startsAt) > expiresAt)
            return left({
              code: 'package_expired',
              message: `${slot} is after the package's expiration date`,
            });
          const freeStart = Date.parse(free.startsAt);
          // An unpaid package is canceled at its deadline: a later session taking place before then would
          // be worked for a payment that may never come, so it starts no sooner than a booking's first would.
          // (Not for cash: it is paid at the sessions and never canceled as unpaid.)
          if (pkg && command.package!.paymentUnpaid && !paidAtSession(pkg.terms.method)) {
            const from = Date.parse(pkg.terms.paymentExpiresAt) + PAID_BEFORE_START_MS;
            if (freeStart < from)
              return left({
                code: 'package_unpaid',
                message: `${slot} starts before the package is paid: until it is, its sessions start from ${new Date(from).toISOString()}`,
              });
          }
          held.push({
            sessionId: command.sessionIds[i]!,
            startsAt: free.startsAt,
            endsAt: free.endsAt,
            slot: free.slot,
          });
        }
        const firstStart = Math.min(...held.map((h) => Date.parse(h.startsAt)));
        // Pay within the window, and an hour before the first session; but a slot booked at short notice
        // still gets MIN_PAYMENT_MINUTES (never past its start) rather than a deadline that is already due.
        const floor = Math.min(now.getTime() + MIN_PAYMENT_MINUTES * 60_000, firstStart);
        // Cash is paid to the coach at the first session: that is its deadline (never swept).
        const expires = paidAtSession(command.order.method)
          ? firstStart
          : Math.max(
              floor,
              Math.min(
                now.getTime() + command.paymentWindowHours * 3_600_000,
                firstStart - PAID_BEFORE_START_MS,
              ),
            );
        return right([
          {
            type: 'SlotsReserved',
            data: {
              coachId: command.service.coachId,
              groupId: command.groupId,
              serviceId: command.service.id,
              clientId: command.clientId,
              groupSession: rules.groupSession,
              maxGroupSize: rules.maxGroupSize,
              timezone: schedule.timezone,
              sessions: held,
              // A package's later sessions keep its terms (price, payment, expiry); the place is this order's,
              // and the length is the service's as held now (the coach may have changed it since).
              terms: pkg
                ? {
                    ...termsWithoutPlace(pkg.terms),
                    minutesDuration: rules.minutesDuration,
                    addressId: command.order.addressId,
                    ...(command.order.place ? { place: command.order.place } : {}),
                    clientAddress: command.order.clientAddress,
                    clientLocation: command.order.clientLocation,
                    parking: command.order.parking,
                    parkingDescription: command.order.parkingDescription,
                    orderDescription: command.order.orderDescription,
                    minutesTravel: command.order.minutesTravel ?? 0,
                  }
                : {
                    ...serviceTermsOf(command.service),
                    ...command.order,
                    paymentExpiresAt: new Date(expires).toISOString(),
                  },
              reservedAt: command.now,
              ...(pkg ? { packageTopUp: { bookedAt: pkg.bookedAt } } : {}),
            },
          },
        ]);
      }

      case 'ReleaseSlots': {
        // Idempotent: releasing what is no longer held decides nothing.
        const held = command.sessionIds.filter(
          (id) => state.reservations.get(id)?.groupId === command.groupId,
        );
        if (held.length === 0) return right([]);
        return right([
          {
            type: 'SlotsReleased',
            data: {
              coachId: command.coachId,
              groupId: command.groupId,
              sessionIds: held,
              reason: command.reason,
              releasedAt: command.now,
            },
          },
        ]);
      }
      case 'MoveSlot':
        return decideMove(command, state);
      default:
        return assertNever(command);
    }
  },
};

/** A reschedule on the calendar: the new slot checked as a booking's, then one SlotMoved. */
function decideMove(command: MoveSlot, state: Calendar): ReturnType<typeof calendar.decide> {
  const hold = state.reservations.get(command.sessionId);
  if (!hold || hold.groupId !== command.groupId)
    return left({ code: 'invalid_transition', message: 'the session is no longer held' });
  if (hold.startsAt !== command.from.startsAt)
    return left({ code: 'conflict', message: 'the session was moved meanwhile; retry the request' });
  const { schedule } = state;
  if (!schedule) return left(unavailable('the coach has not published a schedule'));
  const start = parseLocal(command.slot, schedule.timezone);
  if (!start) return left(unavailable(`${command.slot} does not exist in ${schedule.timezone}`));
  const at = start.toMillis();
  if (at === Date.parse(hold.startsAt))
    return left({ code: 'invalid_transition', message: `the session is at ${command.slot} already` });
  const travel = hold.travelMinutes ?? 0;
  // The session keeps its place (group seats are shared there only) and its length.
  const rules = {
    ...slotRulesOf(command.service),
    minutesDuration: command.minutesDuration,
    place: hold.place ?? '-',
  };
  const margin = 3 * 86_400_000 + travel * 60_000;
  // Its own hold does not count against it: moving by half an hour into its own time is allowed.
  const others = holdsAround(state.reservations, state.holdsByDay, at - margin, at + margin).filter(
    (r) => r.sessionId !== hold.sessionId,
  );
  // The client holds one seat of a slot (a group session): as a booking says it.
  if (
    others.some(
      (r) => r.clientId === hold.clientId && r.serviceId === command.service.id && instantsOf(r).s === at,
    )
  )
    return left(unavailable(`you already hold ${command.slot}`));
  const date = start.toISODate()!;
  const free = freeSlots(
    schedule,
    others,
    rules,
    date,
    date,
    new Date(command.now),
    travel,
    command.slot.slice(0, 16),
  )[0];
  if (!free) return left(notFree(command.slot, at, new Date(command.now), schedule, rules, date, travel));
  const freeStart = Date.parse(free.startsAt);
  const pkg = state.packages.get(command.groupId);
  // A package's sessions take place by its expiration date, moved ones too.
  if (pkg && pkg.terms.numberOfSessions > 1 && freeStart > packageExpiresAt(pkg, pkg.timezone))
    return left({
      code: 'package_expired',
      message: `${command.slot} is after the package's expiration date`,
    });
  // An unpaid booking is canceled at its deadline (never cash): a session moved before it could take place
  // unpaid, so it starts no sooner than the booking's first session could (one hour after the deadline).
  if (pkg && command.paymentExpirable && !paidAtSession(pkg.terms.method)) {
    const from = Date.parse(pkg.terms.paymentExpiresAt) + PAID_BEFORE_START_MS;
    if (freeStart < from)
      return left(
        unavailable(
          `${command.slot} starts before the booking is paid: until it is, its sessions start from ${new Date(from).toISOString()}`,
        ),
      );
  }
  return right([
    {
      type: 'SlotMoved',
      data: {
        coachId: command.service.coachId,
        groupId: command.groupId,
        sessionId: command.sessionId,
        serviceId: hold.serviceId,
        clientId: hold.clientId,
        from: command.from,
        to: { startsAt: free.startsAt, endsAt: free.endsAt, slot: free.slot },
        by: command.by,
        moveId: command.moveId,
        movedAt: command.now,
      },
    },
  ]);
}
