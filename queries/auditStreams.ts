import { PersistentMap, PersistentSet } from '../src/persistentMap';
import { addressBook } from '../commands/addresses/decider';
import { booking } from '../commands/booking/decider';
import type { BookingListed } from '../commands/booking/events';
import { calendar } from '../commands/calendar/decider';
import { deliveryDecider } from '../commands/delivery/decider';
import { emailRequest } from '../commands/email/decider';
import { inbox } from '../commands/notifications/decider';
import { paymentDecider } from '../commands/payments/decider';
import { service } from '../commands/services/decider';
import { userProfile } from '../commands/users/decider';
import { videoLibrary } from '../commands/videos/decider';
import type { DomainEvent } from '../src/decider';

/** How a stream kind is folded: the aggregate's own `initialState` and `evolve`. */
interface Fold {
  initialState: () => unknown;
  evolve: (state: never, event: never) => unknown;
}

/**
 * Every stream kind the write side appends to, by name prefix, with the decider whose `evolve` folds it.
 * `bookings-of-<clientId>` has no decider (a list the booking appends to); its fold is the list as
 * commands/booking/lookups.ts reads it (one entry per group with all its sessions, in listing order).
 * A longer prefix wins (`bookings-of-` over `booking-`).
 */
export const STREAM_KINDS: { prefix: string; kind: string; fold: Fold }[] = [
  { prefix: 'service-', kind: 'service', fold: service },
  { prefix: 'calendar-', kind: 'calendar', fold: calendar },
  { prefix: 'booking-', kind: 'booking', fold: booking },
  {
    prefix: 'bookings-of-',
    kind: 'client-bookings',
    fold: {
      initialState: () => ({ bookings: [] as BookingListed['data'][] }),
      // One entry per group, the first listing's; a package's sessions booked later are listed again under
      // its group and join that entry (as `clientBookings` merges them), a repeat after a crash adds nothing.
      evolve: (s: { bookings: BookingListed['data'][] }, e: BookingListed) =>
        s.bookings.some((b) => b.groupId === e.data.groupId)
          ? {
              bookings: s.bookings.map((b) =>
                b.groupId === e.data.groupId
                  ? { ...b, sessionIds: [...new Set([...b.sessionIds, ...e.data.sessionIds])] }
                  : b,
              ),
            }
          : { bookings: [...s.bookings, e.data] },
    },
  },
  { prefix: 'payment-', kind: 'payment', fold: paymentDecider },
  { prefix: 'profile-', kind: 'profile', fold: userProfile },
  { prefix: 'videos-', kind: 'videos', fold: videoLibrary },
  { prefix: 'addresses-', kind: 'addresses', fold: addressBook },
  { prefix: 'notifications-', kind: 'notifications', fold: inbox },
  { prefix: 'email-', kind: 'email', fold: emailRequest },
  { prefix: 'delivery-', kind: 'email-delivery', fold: deliveryDecider },
];

export function streamKind(stream: string) {
  return STREAM_KINDS.filter((k) => stream.startsWith(k.prefix)).sort(
    (a, b) => b.prefix.length - a.prefix.length,
  )[0];
}

export function foldStream(fold: Fold, events: DomainEvent[]): unknown {
  const evolve = fold.evolve as (s: unknown, e: DomainEvent) => unknown;
  return events.reduce(evolve, fold.initialState());
}

/**
 * State as JSON: bigint as a decimal string, Map (and PersistentMap) as an object (string keys) or a list of [key, value],
 * Set (and PersistentSet) as a list, Date as an ISO instant; functions and undefined are dropped as JSON.stringify would.
 */
export function toJsonSafe(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Map || value instanceof PersistentMap) {
    const entries = [...value.entries()] as [unknown, unknown][];
    return entries.every(([k]) => typeof k === 'string')
      ? Object.fromEntries(entries.map(([k, v]) => [k, toJsonSafe(v)]))
      : entries.map(([k, v]) => [toJsonSafe(k), toJsonSafe(v)]);
  }
  if (value instanceof Set || value instanceof PersistentSet) return [...value].map(toJsonSafe);
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : toJsonSafe(v)));
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined && typeof v !== 'function')
        .map(([k, v]) => [k, toJsonSafe(v)]),
    );
  return value;
}
