import { DateTime } from 'luxon';
import type { EventMetadata, EventStore, NewEvent, StreamAppend } from '../../src/eventstore/types';
import { WrongExpectedRevisionError } from '../../src/eventstore/types';
import { readState } from '../../src/commandHandler';
import { loadState } from '../../src/foldedStates';
import type { DomainEvent } from '../../src/decider';
import type { SlotsReserved } from '../calendar/events';
import { calendarStream } from '../calendar/events';
import { zoneOf } from '../calendar/zones';
import { calendar } from '../calendar/decider';
import {
  bookingStream,
  clientBookingsStream,
  type BookingListed,
  type SessionRescheduled,
  type SessionsBooked,
} from './events';

/**
 * Lookups the write side answers from streams alone, never from a read model: a client's bookings (its
 * list `bookings-of-<clientId>`), the booking a session belongs to, and a booking as booked.
 */

/** An instant as a local date-time label of `zone` (`2026-12-02T10:00:00`). */
const labelIn = (instant: string, zone: string) =>
  DateTime.fromISO(instant, { zone: zoneOf(zone) }).toFormat("yyyy-MM-dd'T'HH:mm:ss");

/** Every SessionsBooked of a booking stream (a package booked in steps has several), in order. */
const bookedParts = {
  initialState: (): SessionsBooked['data'][] => [],
  evolve: (parts: SessionsBooked['data'][], e: DomainEvent) => {
    if (e.type === 'SessionsBooked') return [...parts, e.data as SessionsBooked['data']];
    if (e.type !== 'SessionRescheduled') return parts;
    // A moved session is named at its new time (the e-mails about it after the move), labelled in its part's
    // zone: `to.slot` is a wall time of the schedule's zone when moved, which the coach may have changed since
    // the booking (10:00 in New York would read as 10:00 in the booking's Berlin).
    const d = e.data as SessionRescheduled['data'];
    return parts.map((p) =>
      p.sessions.some((s) => s.sessionId === d.sessionId)
        ? {
            ...p,
            sessions: p.sessions.map((s) =>
              s.sessionId === d.sessionId ? { ...s, ...d.to, slot: labelIn(d.to.startsAt, p.timezone) } : s,
            ),
          }
        : p,
    );
  },
};

/** A booking as booked (its SessionsBooked), from its own stream: exact while read models catch up. */
export async function loadBooking(
  store: EventStore,
  groupId: string,
): Promise<SessionsBooked['data'] | null> {
  const all = await readState(store, bookingStream(groupId), bookedParts);
  if (!all[0]) return null;
  // Sessions of a package booked later come as further SessionsBooked: one booking, all its sessions. Those
  // booked after the coach changed the schedule's zone are labelled in that zone: they are labelled here in
  // the booking's, so that its one `timezone` (the e-mails' "10:00 (Europe/Berlin)") names them right.
  const zone = all[0].timezone;
  return {
    ...all[0],
    sessions: all.flatMap((b) =>
      b.timezone === zone
        ? b.sessions
        : b.sessions.map((s) => ({
            ...s,
            slot: labelIn(s.startsAt, zone),
          })),
    ),
  };
}

export const listingOf = (reserved: SlotsReserved['data']): BookingListed => ({
  type: 'BookingListed',
  data: {
    groupId: reserved.groupId,
    clientId: reserved.clientId,
    coachId: reserved.coachId,
    serviceId: reserved.serviceId,
    paymentId: reserved.terms.paymentId,
    sessionIds: reserved.sessions.map((s) => s.sessionId),
    // A package's later sessions are listed at the package's booking time, as they are booked: listed
    // before the package's own entry (whose listing was healed late), they must not make it look newer.
    bookedAt: reserved.packageTopUp?.bookedAt ?? reserved.reservedAt,
  },
});

/** The client's bookings, newest first, each once. */
export async function clientBookings(store: EventStore, clientId: string): Promise<BookingListed['data'][]> {
  const { events } = await store.readStream(clientBookingsStream(clientId));
  // By group, in listing order: a package's later sessions are listed again under its group, and make one
  // entry with all its sessions (a map, not a search per event: a client's list grows for years).
  const listed = new Map<string, BookingListed['data']>();
  for (const e of events) {
    const d = (e as unknown as BookingListed).data;
    if (e.type !== 'BookingListed') continue;
    const first = listed.get(d.groupId);
    if (first) first.sessionIds = [...new Set([...first.sessionIds, ...d.sessionIds])];
    else listed.set(d.groupId, { ...d });
  }
  // Appended in booking order except after a crash healed later: the booking time decides.
  return [...listed.values()].reverse().sort((a, b) => Date.parse(b.bookedAt) - Date.parse(a.bookedAt));
}

/** The booking route lists a booking without reading the list first (a rare duplicate is harmless). */
export const listingAppend = (reserved: SlotsReserved['data'], metadata: EventMetadata): StreamAppend => ({
  streamName: clientBookingsStream(reserved.clientId),
  events: [{ ...listingOf(reserved), metadata }],
  expectedRevision: 'any',
});

export const listBooking = (store: EventStore, reserved: SlotsReserved['data'], metadata: EventMetadata) => {
  const { streamName, events, expectedRevision } = listingAppend(reserved, metadata);
  return store.append(streamName, events, { expectedRevision });
};

/** Lists a booking unless it is listed already: the process manager heals (and backfills) with this. */
export async function ensureListed(
  store: EventStore,
  reserved: SlotsReserved['data'],
  metadata: EventMetadata,
): Promise<void> {
  const stream = clientBookingsStream(reserved.clientId);
  for (;;) {
    const { events, revision } = await store.readStream(stream);
    const listedIds = new Set(
      events.flatMap((e) =>
        (e.data as { groupId?: string }).groupId === reserved.groupId
          ? (e.data as BookingListed['data']).sessionIds
          : [],
      ),
    );
    if (reserved.sessions.every((s) => listedIds.has(s.sessionId))) return;
    const entry: NewEvent = { ...listingOf(reserved), metadata };
    try {
      await store.append(stream, [entry], {
        expectedRevision: revision,
      });
      return;
    } catch (err) {
      if (!(err instanceof WrongExpectedRevisionError)) throw err; // another booking listed: look again
    }
  }
}

/**
 * The booking (group id) a session belongs to, if `userId` is one of its parties: found in the user's own
 * list of bookings (as client) or on the user's calendar (as coach, where every hold is kept). Null when
 * the session does not exist or the user is neither party, which callers answer alike.
 */
export async function bookingOfSession(
  store: EventStore,
  userId: string,
  sessionId: string,
): Promise<string | null> {
  return (await sessionParty(store, userId, sessionId))?.groupId ?? null;
}

/** `bookingOfSession`, with the user's part in it: its client, or its coach. */
export async function sessionParty(
  store: EventStore,
  userId: string,
  sessionId: string,
): Promise<{ groupId: string; as: 'client' | 'coach' } | null> {
  // The calendar as this process keeps it (only its tail read), not the whole stream: a busy coach's
  // calendar grows for years, and every approve, decline, cancel or complete of theirs comes here.
  const [asClient, held] = await Promise.all([
    clientBookings(store, userId),
    loadState(store, calendarStream(userId), calendar),
  ]);
  const listed = asClient.find((b) => b.sessionIds.includes(sessionId));
  if (listed) return { groupId: listed.groupId, as: 'client' };
  const hold = held.state.reservations.get(sessionId);
  if (hold) return { groupId: hold.groupId, as: 'coach' };
  if (held.revision === 'no_stream') return null;
  // Not held now (declined, canceled or expired: released), or no such session: the stream names it or not.
  const whole = await store.readStream(calendarStream(userId));
  for (const e of whole.events) {
    if (e.type !== 'SlotsReserved') continue;
    const d = e.data as SlotsReserved['data'];
    if (d.sessions.some((s) => s.sessionId === sessionId)) return { groupId: d.groupId, as: 'coach' };
  }
  return null;
}
