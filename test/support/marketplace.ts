import type { BookableService, ClientOrder } from '../../commands/calendar/decider';
import type { BookingTerms, SlotsReserved } from '../../commands/calendar/events';
import type { SlotRules } from '../../commands/calendar/slots';
import { randomUUID } from 'node:crypto';
import type { TestSystem } from './system';

/** Builders of a small marketplace through the public commands, for API tests. */
export function marketplace(t: TestSystem) {
  const service = () => t.token(randomUUID(), ['service']);
  const admin = () => t.token(randomUUID(), ['admin']);
  const ok = (res: { status: number; body: unknown }, what: string) => {
    if (res.status !== 200) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as any;
  };

  async function user(type: 'coach' | 'client', extra: Record<string, unknown> = {}) {
    const id = randomUUID();
    ok(
      await t.request('PUT', `/api/v1/users/${id}`, {
        token: service(),
        body: {
          firstName: type === 'coach' ? 'Coach' : 'Client',
          lastName: id.slice(0, 6),
          email: `${id.slice(0, 8)}@example.com`,
          type,
          ...extra,
        },
      }),
      `create ${type}`,
    );
    return { id, token: t.token(id, [type]) };
  }

  const api = {
    admin,
    service,
    client: (extra: Record<string, unknown> = {}) => user('client', extra),
    /** A coach with a published schedule (Europe/Berlin, weekdays 09:00-17:00 unless given). */
    async coach(schedule: Record<string, unknown> = {}) {
      const c = await user('coach', { timezone: 'Europe/Berlin' });
      const hours = [{ start: '09:00', end: '17:00' }];
      ok(
        await t.request('PUT', '/api/v1/coach/schedule', {
          token: c.token,
          body: {
            timezone: 'Europe/Berlin',
            weekly: { monday: hours, tuesday: hours, wednesday: hours, thursday: hours, friday: hours },
            ...schedule,
          },
        }),
        'set schedule',
      );
      return c;
    },
    /** An approved service of the coach. */
    async offering(coach: { token: string }, over: Record<string, unknown> = {}) {
      const created = ok(
        await t.request('POST', '/api/v1/coach/services', {
          token: coach.token,
          body: {
            name: 'Tennis basics',
            price: 40,
            priceCurrency: 'EUR',
            sessionMinutesDuration: 60,
            serviceTypes: ['tennis'],
            ...over,
          },
        }),
        'create service',
      );
      ok(
        await t.request('POST', `/api/v1/admin/services/${created.id}/approve`, { token: admin() }),
        'approve',
      );
      return created.id as string;
    },
    /**
     * One session booked by a new client of a new coach's service (cancellation window 24 hours unless `over`
     * says otherwise) at `slot`; the parties, the service and the answered session.
     */
    async sessionBooked(slot: string, over: Record<string, unknown> = {}) {
      const coach = await api.coach();
      const serviceId = await api.offering(coach, { sessionCancellationHours: 24, ...over });
      const client = await user('client');
      const booked = ok(
        await t.request('POST', `/api/v1/service/${serviceId}`, {
          token: client.token,
          body: { slots: [slot] },
        }),
        'book the session',
      );
      return {
        coach,
        client,
        serviceId,
        session: booked[0] as { id: string; paymentId: string; groupId: string; price: number },
      };
    },
    /** The free slots (local labels) of a service on one local date, as availability (6) lists them. */
    async freeSlotsOn(serviceId: string, date: string): Promise<string[]> {
      const res = await t.request(
        'GET',
        `/api/v1/service/${serviceId}/availability?from_date=${date}&to_date=${date}`,
      );
      return res.body.slots.map((s: { slot: string }) => s.slot);
    },
    /** A session as `token`'s holder reads it (GET /api/v1/session/{id}). */
    async sessionAs(token: string, id: string) {
      return (await t.request('GET', `/api/v1/session/${id}`, { token })).body;
    },
    /**
     * A client's package of three sessions (90 EUR, 30 days) from a new coach, its first session booked at
     * `slot`; the booking's first session (with its `groupId`, the package's id, and `paymentId`).
     */
    async packageBought(slot = '2026-12-02T10:00:00', over: Record<string, unknown> = {}) {
      const coach = await api.coach();
      const serviceId = await api.offering(coach, {
        numberOfSessions: 3,
        price: 90,
        expiresInDays: 30,
        ...over,
      });
      const client = await user('client');
      const booked = ok(
        await t.request('POST', `/api/v1/service/${serviceId}`, {
          token: client.token,
          body: { slots: [slot] },
        }),
        'book the package',
      );
      const first = booked[0] as {
        id: string;
        groupId: string;
        paymentId: string;
        expirationDate: string;
      };
      return { coach, client, serviceId, first };
    },
  };
  return api;
}

/**
 * A hold of one one-on-one session (10:00-11:00 in Berlin on 2 December 2026, 09:00-10:00 UTC), as the booking
 * route appends it first: for tests of what follows a hold whose request died.
 */
export function holdData(ids: {
  coachId: string;
  clientId: string;
  groupId?: string;
  serviceId?: string;
  sessionId?: string;
  terms?: BookingTerms;
  reservedAt: string;
}): SlotsReserved['data'] {
  return {
    coachId: ids.coachId,
    groupId: ids.groupId ?? randomUUID(),
    serviceId: ids.serviceId ?? randomUUID(),
    clientId: ids.clientId,
    groupSession: false,
    maxGroupSize: 1,
    timezone: 'Europe/Berlin',
    sessions: [
      {
        sessionId: ids.sessionId ?? randomUUID(),
        startsAt: '2026-12-02T09:00:00.000Z',
        endsAt: '2026-12-02T10:00:00.000Z',
        slot: '2026-12-02T10:00:00',
      },
    ],
    terms: ids.terms ?? bookingTerms({ paymentExpiresAt: '2026-12-02T08:00:00.000Z' }),
    reservedAt: ids.reservedAt,
  };
}

/** A complete SessionsBooked event's data, as the booking route writes it, for read-model tests. */
export function sessionsBookedData(ids: {
  groupId: string;
  coachId: string;
  clientId: string;
  serviceId: string;
}) {
  const sessionId = randomUUID();
  return {
    ...ids,
    timezone: 'Europe/Berlin',
    bookedAt: '2030-01-01T08:00:00.000Z',
    sessions: [
      {
        sessionId,
        startsAt: '2030-01-02T09:00:00.000Z',
        endsAt: '2030-01-02T10:00:00.000Z',
        slot: '2030-01-02T10:00:00',
      },
    ],
    terms: bookingTerms({ paymentExpiresAt: '2030-01-02T08:00:00.000Z' }),
  };
}

/** The terms a booking carries (a one-session, 40 EUR, 60-minute service paid by card). */
export function bookingTerms(over: Partial<BookingTerms> = {}): BookingTerms {
  return {
    paymentId: randomUUID(),
    serviceName: 'Tennis basics',
    price: 40,
    currency: 'EUR',
    promo: false,
    minutesDuration: 60,
    cancellationHours: 24,
    numberOfSessions: 1,
    expiresInDays: 30,
    method: 'card',
    methodId: 1,
    addressId: null,
    clientAddress: '',
    clientLocation: null,
    parking: '',
    parkingDescription: '',
    orderDescription: '',
    paymentExpiresAt: '2030-01-02T08:00:00.000Z',
    ...over,
  };
}

/** Slot rules of a 60-minute service with one seat, no notice and a year's booking window. */
export const slotRules = (over: Partial<SlotRules> = {}): SlotRules => ({
  serviceId: 'tennis',
  minutesDuration: 60,
  groupSession: false,
  maxGroupSize: 1,
  minimumNoticeHours: 0,
  bookingWindowDays: 365,
  startTimes: null,
  ...over,
});

/** An approved service with these slot rules, as the calendar decider gets it from the service's stream. */
export function bookableService(rules: SlotRules, coachId: string, numberOfSessions = 1): BookableService {
  return {
    id: rules.serviceId,
    coachId,
    status: 'approved',
    createdAt: '2026-11-01T00:00:00.000Z',
    name: 'Tennis basics',
    description: '',
    promo: false,
    price: 40,
    priceCurrency: 'EUR',
    serviceOtherType: '',
    sessionMinutesDuration: rules.minutesDuration,
    sessionCancellationHours: 24,
    serviceTypes: [],
    numberOfSessions,
    expiresInDays: 3,
    groupSession: rules.groupSession,
    maxGroupSize: rules.maxGroupSize,
    slots: [],
    minimumNoticeHours: rules.minimumNoticeHours,
    bookingWindowDays: rules.bookingWindowDays,
  };
}

/** The client's part of a booking (payment, place, notes) from a booking's terms. */
export function clientOrderOf(terms: Omit<BookingTerms, 'paymentExpiresAt'>): ClientOrder {
  return {
    paymentId: terms.paymentId,
    method: terms.method,
    methodId: terms.methodId,
    addressId: terms.addressId,
    clientAddress: terms.clientAddress,
    clientLocation: terms.clientLocation,
    parking: terms.parking,
    parkingDescription: terms.parkingDescription,
    orderDescription: terms.orderDescription,
  };
}

/** Polls `read` until `done` holds (projections and process managers run asynchronously), or gives up. */
export async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 50));
    value = await read();
  }
  return value;
}
