import { zoneOf } from '../commands/calendar/zones';
import Router from '@koa/router';
import * as t from 'io-ts';
import { DateTime } from 'luxon';
import type { Schedule } from '../commands/calendar/events';
import { IsoDate } from '../commands/calendar/codecs';
import {
  freeSlotsUntil,
  localDate,
  offeredRulesOf,
  packageLastDay,
  placeKey,
  startOfLocalDate,
  type FreeSlot,
  type Reservation,
} from '../commands/calendar/slots';
import type { Queryable } from '../src/db/database';
import type { AppDeps } from '../src/deps';
import { notFound, ValidationError } from '../src/http/errors';
import { Uuid, decode, refine } from '../src/http/validation';
import { tooFarMessage, travelMinutes } from '../commands/calendar/travel';

import { optionalPrincipal } from './caller';
import { describeSchema } from '../src/http/openapi/jsonSchema';
import { isCoach } from '../src/readModels/users';
import { toServiceOut, type ServiceOut } from '../src/resources/service';
import type { ServiceFields, ServiceStatus } from '../commands/services/events';
import { MAX_SESSION_MINUTES } from '../commands/services/codecs';
import { coachServices } from './services';
import { clientPackagesUntil } from './packages';
import { ReadCache, fillHole, holedJson, type HoledJson } from '../src/readModels/readCache';
import { EVERYTHING, ensureScopes, readTokens, userScope } from '../src/readModels/readVersions';

/**
 * A coordinate in the query string (text), within bounds: a decimal number as JavaScript prints one, so any
 * `position` a booking takes is also taken here (52.52000659999999 from a map, 17 digits; 1e-7 near 0).
 */
const coordinate = (name: string, bound: number) =>
  refine(
    t.string,
    (s) =>
      s.length <= 40 &&
      /^-?\d{1,3}(\.\d+)?(e-\d{1,3})?$/i.test(s) &&
      Number.isFinite(Number(s)) &&
      Math.abs(Number(s)) <= bound,
    name,
    `Input should be a ${name} from -${bound} to ${bound}`,
  );
export const LatFromString = describeSchema(
  new t.Type<number, string, unknown>(
    'latitude',
    (u): u is number => typeof u === 'number',
    (u, c) => {
      const r = coordinate('latitude', 90).validate(u, c);
      return r._tag === 'Left' ? r : t.success(Number(r.right));
    },
    String,
  ),
  { type: 'number', minimum: -90, maximum: 90 },
);
export const LngFromString = describeSchema(
  new t.Type<number, string, unknown>(
    'longitude',
    (u): u is number => typeof u === 'number',
    (u, c) => {
      const r = coordinate('longitude', 180).validate(u, c);
      return r._tag === 'Left' ? r : t.success(Number(r.right));
    },
    String,
  ),
  { type: 'number', minimum: -180, maximum: 180 },
);

/** Longest range one availability request may cover, in days. */
export const MAX_RANGE_DAYS = 62;
const DEFAULT_RANGE_DAYS = 14;

export const RangeQuery = t.partial({
  from_date: IsoDate,
  to_date: IsoDate,
  address_id: Uuid,
  user: Uuid,
  lat: LatFromString,
  lng: LngFromString,
});

/**
 * The coach's travel a booking with these query parameters would need (the booking computes the same):
 * none at one of the coach's addresses (`address_id`), from the coach's default address to `lat`/`lng`
 * (the client's place, as the booking's `position`) otherwise; 0 without a place.
 */
async function candidateTravel(db: Queryable, coachId: string, query: unknown): Promise<number> {
  const q = decode(RangeQuery, query, 'query');
  if ((q.lat === undefined) !== (q.lng === undefined))
    throw new ValidationError([
      {
        loc: ['query', q.lat === undefined ? 'lat' : 'lng'],
        msg: 'lat and lng go together',
        type: 'missing',
      },
    ]);
  if (q.address_id) {
    const own = await db.query('SELECT 1 FROM addresses WHERE id = $1 AND user_id = $2', [
      q.address_id.toLowerCase(),
      coachId,
    ]);
    if (!own.rowCount)
      throw notFound(
        'address_not_found',
        "address_id is not one of the coach's addresses; for your own place, send lat and lng instead",
      );
    return 0;
  }
  if (q.lat === undefined || q.lng === undefined) return 0;
  const base = await db.query<{ lat: number; lng: number }>(
    'SELECT lat, lng FROM addresses WHERE user_id = $1 AND is_default',
    [coachId],
  );
  const travel = travelMinutes(base.rows[0] ?? null, { lat: q.lat, lng: q.lng });
  // As the booking refuses it: a place over a day of travel away offers nothing to book.
  const tooFar = tooFarMessage(travel);
  if (tooFar) throw new ValidationError([{ loc: ['query', 'lat'], msg: tooFar, type: 'value_error' }]);
  return travel;
}

/** Where the asked session would take place (`placeKey`, as the booking names it): group seats are per place. */
function candidatePlace(query: unknown): string {
  const q = decode(RangeQuery, query, 'query');
  return placeKey(
    q.address_id,
    q.lat !== undefined && q.lng !== undefined ? { lat: q.lat, lng: q.lng } : null,
  );
}

/** The requested local date range, defaulting to two weeks from today in the coach's zone. */
function range(query: unknown, zone: string, now: Date) {
  const q = decode(RangeQuery, query, 'query');
  const from = q.from_date ?? localDate(now, zone);
  // Dates read in UTC, where every day is 24 hours: in the server's own zone a day whose midnight DST
  // skips starts at 01:00, and 63 days from it counted as 61.96.
  const day = (date: string) => DateTime.fromISO(date, { zone: 'utc' });
  const to =
    q.to_date ??
    day(from)
      .plus({ days: DEFAULT_RANGE_DAYS - 1 })
      .toISODate()!;
  const days = day(to).diff(day(from), 'days').days;
  if (days < 0)
    throw new ValidationError([
      { loc: ['query', 'to_date'], msg: 'to_date should not be before from_date', type: 'value_error' },
    ]);
  if (days >= MAX_RANGE_DAYS)
    throw new ValidationError([
      {
        loc: ['query', 'to_date'],
        msg: `the range should cover at most ${MAX_RANGE_DAYS} days`,
        type: 'value_error',
      },
    ]);
  return { from, to };
}

/** The travel to the antipodes: no hold's travel is longer. */
const LONGEST_TRAVEL_MINUTES = travelMinutes({ lat: 0, lng: 0 }, { lat: 0, lng: 180 });
/**
 * The holds whose busy time (the session and the coach's travel either side, which can reach days away)
 * may touch the dates `lo`..`hi` ($2, $3), for a candidate travelling `own` minutes itself: days of margin
 * each side cover zones far from UTC, sessions crossing midnight and the candidate's own travel up to
 * COVERED_TRAVEL_MINUTES (without `own`).
 */
const holdsNearSql = (coach: string, own = '') => {
  const reach = `(h.travel_minutes${own ? ` + ${own}` : ''}) * interval '1 minute'`;
  // The same bounds without the row's travel and length (the longest there are instead) keep the scan to a
  // range of the index on (coach_id, starts_at), not the coach's whole history.
  const farthest = `(${LONGEST_TRAVEL_MINUTES}${own ? ` + ${own}` : ''}) * interval '1 minute'`;
  const longest = `${MAX_SESSION_MINUTES} * interval '1 minute'`;
  return `h.coach_id = ${coach} AND h.ends_at + ${reach} > ($2::date - 3)
    AND h.starts_at - ${reach} < ($3::date + 4) AND h.starts_at < ($3::date + 4) + ${farthest}
    AND h.starts_at > ($2::date - 3) - ${farthest} - ${longest}`;
};
/**
 * A candidate's own travel the margins of `holdsNearSql` cover without `own`: 3 days before and 4 after
 * less a day for the zone's offset and the session. Longer trips (a client over 550 km away) read the holds
 * again with their travel.
 */
const COVERED_TRAVEL_MINUTES = 24 * 60;

/**
 * Endpoint 6 in one statement: the service, its coach's schedule and the holds that may touch the dates
 * asked for (`lo`..`hi`, a superset of the range, since the range's default depends on the coach's zone).
 * One round trip instead of four: under load the statements, not the slot arithmetic, cost the most.
 */
const SERVICE_AVAILABILITY = `
SELECT s.id, s.coach_id, s.status, s.fields, c.schedule,
  (SELECT COALESCE(json_agg(json_build_object('sessionId', h.session_id, 'serviceId', h.service_id,
       'clientId', h.client_id, 'startsAt', h.starts_at, 'endsAt', h.ends_at,
       'travelMinutes', h.travel_minutes, 'place', h.place, 'shared', h.shared)), '[]'::json)
     FROM slot_holds h
    WHERE ${holdsNearSql('s.coach_id')}) AS holds
FROM services s LEFT JOIN coach_calendars c ON c.coach_id = s.coach_id
WHERE s.id = $1`;

const DAY_MS = 86_400_000;
const utcDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** Dates that surely cover the range `range()` will settle on in any zone; malformed input gets a default. */
function holdWindow(query: unknown, now: Date): { lo: string; hi: string } {
  const q = RangeQuery.decode(query);
  const given = q._tag === 'Right' ? q.right : {};
  const lo = given.from_date ?? utcDate(now.getTime() - DAY_MS);
  const hi = given.to_date ?? utcDate(Date.parse(lo) + (DEFAULT_RANGE_DAYS + 1) * DAY_MS);
  return lo <= hi ? { lo, hi } : { lo: hi, hi: lo };
}

/**
 * The first instant of the next local date in `zone` (epoch ms), found by its date: a day starting at
 * 01:00 (DST skipped its midnight) plus one day would be 01:00, an hour after the next midnight; and of a
 * midnight DST repeats, the first.
 */
const nextLocalMidnight = (now: Date, zone: string) => {
  const tomorrow = DateTime.fromJSDate(now, { zone: zoneOf(zone) })
    .plus({ days: 1 })
    .toISODate()!;
  return startOfLocalDate(tomorrow, zone);
};

async function calendarOf(db: Queryable, coachId: string, from: string, to: string, travel: number) {
  const cal = await db.query<{ schedule: Schedule }>(
    'SELECT schedule FROM coach_calendars WHERE coach_id = $1',
    [coachId],
  );
  const schedule = cal.rows[0]?.schedule ?? null;
  return { schedule, reservations: await holdsNear(db, coachId, from, to, travel) };
}

/** The holds that may touch the dates `from`..`to` for a candidate travelling `travel` minutes. */
async function holdsNear(
  db: Queryable,
  coachId: string,
  from: string,
  to: string,
  travel: number,
): Promise<Reservation[]> {
  const holds = await db.query<{
    sessionId: string;
    serviceId: string;
    clientId: string;
    startsAt: Date;
    endsAt: Date;
    travelMinutes: number;
    place: string | null;
    shared: boolean | null;
  }>(
    `SELECT session_id AS "sessionId", service_id AS "serviceId", client_id AS "clientId", starts_at AS "startsAt",
            ends_at AS "endsAt", travel_minutes AS "travelMinutes", place, shared
       FROM slot_holds h WHERE ${holdsNearSql('$1', '$4::int')}`,
    [coachId, from, to, travel],
  );
  return holds.rows.map((h) => ({
    ...h,
    startsAt: new Date(h.startsAt).toISOString(),
    endsAt: new Date(h.endsAt).toISOString(),
  }));
}

/**
 * The clients holding a seat in each offered slot (by its start, epoch ms): a group slot with seats left.
 * A client holds at most one seat of a slot (the calendar decider refuses a second, 409 `slot_unavailable`
 * "you already hold ..."), so such a slot is not offered to its holders (`withoutOwnSeats`). With `slots`
 * null: the holders of every reservation given, offered or not.
 */
function seatHolders(reservations: Iterable<Reservation>, slots: FreeSlot[] | null): Map<number, string[]> {
  const offered = slots && new Set(slots.map((x) => Date.parse(x.startsAt)));
  const holders = new Map<number, string[]>();
  for (const r of reservations) {
    const start = Date.parse(r.startsAt);
    if (offered && !offered.has(start)) continue;
    const ids = holders.get(start);
    if (ids) ids.push(r.clientId);
    else holders.set(start, [r.clientId]);
  }
  return holders;
}

/** The starts of the slots in which `clientId` holds a seat. */
const ownSeats = (holders: Map<number, string[]>, clientId: string): Set<number> =>
  new Set([...holders].filter(([, ids]) => ids.includes(clientId)).map(([start]) => start));

/** The slots without those starting at `own` (the caller's seats). */
const withoutOwnSeats = (slots: FreeSlot[], own: Set<number>): FreeSlot[] =>
  own.size ? slots.filter((x) => !own.has(Date.parse(x.startsAt))) : slots;

/**
 * The most free slots one answer of endpoint 6 or 11 (over all the coach's services) lists: on 11 a coach
 * open around the clock with many short services had 44 MB answers for 62 days, on 6 a service with a start
 * time every minute (stored before `Service.slots` held at most 500) 11 MB, each holding the process for a
 * second or more per request. A range asked for (`to_date`) holding more is refused; the default range is
 * shortened to its last whole day within the bound (`SlotBound`). Slots are computed only until the bound is
 * passed, so a refused or shortened answer costs what the bound does. On 11 each service's slots are computed
 * on a turn of their own, so other requests are served in between.
 */
export const MAX_SLOTS_PER_ANSWER = 20_000;

const tooManySlots = (who: string) =>
  new ValidationError([
    {
      loc: ['query', 'to_date'],
      msg: `${who} more than ${MAX_SLOTS_PER_ANSWER} free slots in this range: ask for fewer days`,
      type: 'value_error',
    },
  ]);

/** The local date of a slot (its label's). */
const dateOf = (x: FreeSlot) => x.slot.slice(0, 10);

/** The slots (in date order, as freeSlots lists them) of the dates up to `last`. */
const through = (slots: FreeSlot[], last: string): FreeSlot[] =>
  slots.length && dateOf(slots[slots.length - 1]!) > last ? slots.filter((x) => dateOf(x) <= last) : slots;

/**
 * One answer's bound (`MAX_SLOTS_PER_ANSWER`) over the local dates of its range: the slots listed through
 * each date by the services counted so far, and the last date all of them may be answered through.
 */
class SlotBound {
  readonly dates: string[] = [];
  private readonly index = new Map<string, number>();
  private readonly taken: number[];
  /** The index in `dates` of the last date answered; -1 when even the first holds more than the bound. */
  last: number;

  constructor(from: string, to: string) {
    for (let d = from; d <= to; d = utcDate(Date.parse(d) + DAY_MS)) {
      this.index.set(d, this.dates.length);
      this.dates.push(d);
    }
    this.taken = this.dates.map(() => 0);
    this.last = this.dates.length - 1;
  }

  /** Whether the whole range is answered. */
  get whole(): boolean {
    return this.last === this.dates.length - 1;
  }

  /** The last date answered. */
  get toDate(): string {
    return this.dates[Math.max(this.last, 0)]!;
  }

  /**
   * freeSlotsUntil's limit for one more service: the bound less what the services counted list through
   * each date, plus `slack`, the slots it may find that are not listed (the caller's own seats). So a
   * computation stopped on a date knows that date is over the bound, and spent no more than the bound.
   */
  limit(slack: number): (date: string) => number {
    let sum = 0;
    const room = this.taken.map((n) => MAX_SLOTS_PER_ANSWER - (sum += n));
    return (date) => (room[this.index.get(date) ?? 0] ?? 0) + slack;
  }

  /**
   * Counts one more service's listed slots, computed with `limit` through `toDate` and stopped on the date
   * `stoppedOn` if it was: the last date answered becomes the last through which all services counted list
   * at most the bound.
   */
  count(listed: FreeSlot[], stoppedOn?: string): void {
    const mine = this.dates.map(() => 0);
    for (const x of listed) {
      const i = this.index.get(dateOf(x));
      if (i !== undefined) mine[i]! += 1;
    }
    let total = 0;
    for (let i = 0; i <= this.last; i++) {
      total += this.taken[i]! + mine[i]!;
      if (total > MAX_SLOTS_PER_ANSWER || this.dates[i] === stoppedOn) {
        this.last = i - 1;
        break;
      }
    }
    mine.forEach((n, i) => (this.taken[i]! += n));
  }
}

/**
 * The rules availability offers a service's slots by; `packageUntil`: the end of the caller's open package
 * of it, whose sessions are offered up to then (see SlotRules.packageUntil).
 */
const offeredRules = (s: ServiceOut, place: string, packageUntil?: number) => ({
  ...offeredRulesOf(s, place),
  ...(packageUntil !== undefined ? { packageUntil } : {}),
});

const ServicePath = t.type({ service_id: Uuid });
const CoachPath = t.type({ coach_id: Uuid });

/** The query parameters of endpoint 6 that may change its answer, as one cache key. */
const RANGE_KEYS = ['from_date', 'to_date', 'address_id', 'lat', 'lng', 'user'] as const;
const queryKey = (query: Record<string, unknown>) => JSON.stringify(RANGE_KEYS.map((k) => query[k] ?? null));

/** What endpoint 6 caches per service and query: its answer as text, with a hole for the caller's packages. */
interface CachedAvailability {
  coachId: string;
  /** Null: the range asked for holds more slots than one answer lists (422). */
  answer: HoledJson | null;
  /** Whether the answer is within the bound without shortening the range (else shortened or refused). */
  whole: boolean;
  /** The last instant a package bought now may hold a session (Infinity for a single-session service). */
  packageEnd: number;
  /**
   * Who holds a seat in the group slots offered (`seatHolders`): not offered to them. When the bound
   * shortened or refused the answer, who holds any seat of the service: unlisted seats may make room for
   * more of its slots, so such a caller gets an answer of its own.
   */
  holders: Map<number, string[]>;
}

/**
 * Endpoint 6 answers from a per-process cache checked against `read_versions` (src/readModels/readVersions.ts)
 * with one indexed read per request. Everything the answer is computed from, and what keeps each fresh:
 * - the service row (status, fields, its coach): projections/services.ts bumps `user:<coach>`;
 * - the coach's schedule and holds (coach_calendars, slot_holds): projections/calendar.ts bumps `user:<coach>`
 *   (bookings, releases after a cancel, decline or payment expiry, schedule changes);
 * - the coach's addresses (`address_id` ownership, travel from the default address to `lat`/`lng`):
 *   projections/addresses.ts bumps `user:<coach>`;
 * - the caller's packages (sessions of the caller): projections/sessions.ts bumps `user:<caller>`;
 * - a rebuild that swaps read models in bumps `*`, which every answer depends on;
 * - the clock: minimum notice and booking window (`freeSlotsUntil`), the default range starting today in
 *   the coach's zone (until the next local midnight), packages expiring (`clientPackagesUntil`): each
 *   cached part carries the instant until which it stays true and is recomputed from then on;
 * - the query string (part of the key) and the caller (visibility of a service not approved: such answers
 *   are never cached; the packages are the caller's own, cached per caller).
 */
const AVAILABILITY_BOUNDS = { maxEntries: 2_000, maxBytes: 8 * 2 ** 20 };
const PACKAGES_BOUNDS = { maxEntries: 10_000, maxBytes: 2 * 2 ** 20 };

export function availabilityQueries(deps: AppDeps): Router {
  const router = new Router();
  const answers = new ReadCache<CachedAvailability>(AVAILABILITY_BOUNDS);
  /** The caller's open packages of a service as answered, and the latest end of them (`openUntil`). */
  const packagesOf = new ReadCache<{ text: string; openUntil: number | undefined }>(PACKAGES_BOUNDS);
  deps.metrics.watchReadCache('availability', () => answers.stats());
  deps.metrics.watchReadCache('availability_packages', () => packagesOf.stats());

  // 6. Free slots of one service, as local date-times in the coach's zone with the seats left.
  router.get('/api/v1/service/:service_id/availability', async (ctx) => {
    const serviceId = decode(ServicePath, ctx.params, 'path').service_id.toLowerCase();
    const now = deps.clock();
    const at = now.getTime();
    const caller = optionalPrincipal(ctx);
    const callerScope = caller ? userScope(caller.userId) : null;
    const key = `${serviceId}${queryKey(ctx.query)}`;
    // One indexed read: the versions of everything, of the service's coach and of the caller. A service's
    // coach never changes: once an answer is cached its coach is known, else the read finds it.
    const knownCoach = answers.peek(key)?.coachId;
    const scopes = [
      EVERYTHING,
      ...(knownCoach ? [userScope(knownCoach)] : []),
      ...(callerScope ? [callerScope] : []),
    ];
    const tokens = await readTokens(deps.db, scopes, knownCoach ? undefined : serviceId);
    const epoch = tokens.get(EVERYTHING);
    const tokenOf = (scope: string) => {
      const v = tokens.get(scope);
      return epoch === undefined || v === undefined ? undefined : `${epoch}|${v}`;
    };
    const packagesKey = caller ? `${caller.userId}/${serviceId}` : '';
    let packaged = callerScope
      ? packagesOf.get(packagesKey, tokenOf(callerScope), at)
      : { text: '[]', openUntil: undefined };
    if (packaged === undefined && caller && callerScope) {
      // The caller's own packages of this service with sessions left to book (`packageId` in booking).
      const { packages, until, openUntil } = await clientPackagesUntil(
        deps.db,
        caller.userId,
        { serviceId },
        now,
      );
      packaged = {
        text: JSON.stringify(packages.filter((p) => p.open)),
        openUntil: openUntil.get(serviceId),
      };
      const token = tokenOf(callerScope);
      if (token !== undefined)
        packagesOf.set(packagesKey, token, packaged, 2 * packaged.text.length, at, until);
      else await ensureScopes(deps.db, [callerScope]);
    }
    const hit = answers.get(key, (a) => tokenOf(userScope(a.coachId)), at);
    const common = hit ?? (await computeShared());
    // The holder of an open package is offered its slots up to the package's own last day, when a coach
    // who shortened expiresInDays put it after a new package's: an answer of its own, never cached.
    const holderUntil = packaged?.openUntil;
    const packageUntil =
      holderUntil !== undefined && holderUntil > common.packageEnd ? holderUntil : undefined;
    const shared = packageUntil !== undefined ? await computeShared(packageUntil) : common;
    // A group slot the caller holds a seat in is not offered to it (booking it again is refused).
    const own = caller ? ownSeats(shared.holders, caller.userId) : new Set<number>();
    // The bound counts the slots listed: when it shortened or refused the answer, the caller's own seats
    // (not listed to it) may leave room for more, so it gets an answer of its own, without them.
    const mine = own.size && !shared.whole ? await computeShared(packageUntil, own) : shared;
    if (!mine.answer) throw tooManySlots('the service has');
    ctx.type = 'application/json';
    const body = fillHole(mine.answer, packaged?.text ?? '[]');
    if (own.size && mine === shared) {
      const answer = JSON.parse(body.toString()) as { slots: FreeSlot[] };
      ctx.body = JSON.stringify({ ...answer, slots: withoutOwnSeats(answer.slots, own) });
    } else ctx.body = body;

    async function holdsOpenPackage(clientId: string, service: string): Promise<boolean> {
      const { packages } = await clientPackagesUntil(deps.db, clientId, { serviceId: service }, now);
      return packages.some((p) => p.open);
    }

    /**
     * The answer without the caller's packages, computed (and cached when it may be); with `own`, the
     * answer to a caller holding seats in these slots, without them.
     */
    async function computeShared(packageUntil?: number, own?: Set<number>): Promise<CachedAvailability> {
      const { lo, hi } = holdWindow(ctx.query, now);
      const res = await deps.db.query<{
        id: string;
        coach_id: string;
        status: ServiceStatus;
        fields: ServiceFields;
        schedule: Schedule | null;
        holds: Reservation[];
      }>(SERVICE_AVAILABILITY, [serviceId, lo, hi]);
      const row = res.rows[0];
      // A withdrawn service still shows to a client with an open package of it (its sessions are owed).
      if (
        !row ||
        (row.status !== 'approved' &&
          row.coach_id !== caller?.userId &&
          !(caller && (await holdsOpenPackage(caller.userId, serviceId))))
      )
        throw notFound('service_not_found', 'no such service');
      const service = toServiceOut({ ...row.fields, id: row.id, status: row.status });
      const zone = row.schedule?.timezone ?? 'UTC';
      const { from, to } = range(ctx.query, zone, now);
      const travel = await candidateTravel(deps.db, row.coach_id, ctx.query);
      const reservations =
        travel > COVERED_TRAVEL_MINUTES
          ? await holdsNear(deps.db, row.coach_id, lo, hi, travel)
          : row.holds.map((h) => ({
              ...h,
              startsAt: new Date(h.startsAt).toISOString(),
              endsAt: new Date(h.endsAt).toISOString(),
            }));
      const bound = new SlotBound(from, to);
      const found = row.schedule
        ? freeSlotsUntil(
            row.schedule,
            reservations,
            offeredRules(service, candidatePlace(ctx.query), packageUntil),
            from,
            to,
            now,
            travel,
            undefined,
            bound.limit(own?.size ?? 0),
          )
        : { slots: [], until: Infinity };
      const until = found.until;
      const listed = own ? withoutOwnSeats(found.slots, own) : found.slots;
      bound.count(listed, found.stoppedOn);
      // A range asked for is answered whole or refused; the default one (no to_date) is shortened to its
      // last whole day within the bound, which `toDate` says.
      const answered = bound.whole || (ctx.query.to_date === undefined && bound.last >= 0);
      const slots = through(listed, bound.toDate);
      const holed = answered
        ? holedJson(
            {
              serviceId,
              coachId: row.coach_id,
              timezone: zone,
              fromDate: from,
              toDate: bound.toDate,
              minutesDuration: service.sessionMinutesDuration,
              minutesTravel: travel,
              groupSession: service.groupSession,
              slots,
              packages: null,
            },
            'packages',
            '[]',
          )
        : null;
      const packageEnd =
        service.numberOfSessions > 1
          ? packageLastDay(now.toISOString(), service.expiresInDays, zone).endOf('day').toMillis()
          : Infinity;
      const holders = bound.whole
        ? seatHolders(reservations, slots)
        : seatHolders(
            reservations.filter((r) => r.serviceId === serviceId),
            null,
          );
      const answer = { coachId: row.coach_id, answer: holed, whole: bound.whole, packageEnd, holders };
      const coachScope = userScope(row.coach_id);
      const token = tokenOf(coachScope);
      // The default range starts today in the coach's zone: true until the next local midnight.
      const rangeUntil = ctx.query.from_date === undefined ? nextLocalMidnight(now, zone) : Infinity;
      // A service not approved shows only to its coach: never cached; nor one answered to a holder of a
      // package or of seats. A refusal is cached too: asked again, it costs one indexed read.
      if (row.status === 'approved' && token !== undefined && packageUntil === undefined && own === undefined)
        answers.set(
          key,
          token,
          answer,
          (holed?.bytes.length ?? 0) + 64 * holders.size,
          at,
          Math.min(until, rangeUntil),
        );
      else if (token === undefined)
        // A scope with no version row yet gets one, so that the next read can be served from the cache.
        await ensureScopes(
          deps.db,
          [EVERYTHING, coachScope].filter((x) => !tokens.has(x)),
        );
      return answer;
    }
  });

  // 11. Every approved service of a coach with its free slots (and the caller's owed package services).
  router.get('/api/v1/coach/:coach_id/availability', async (ctx) => {
    const coachId = decode(CoachPath, ctx.params, 'path').coach_id.toLowerCase();
    const caller = optionalPrincipal(ctx);
    if (!(await isCoach(deps.db, coachId))) throw notFound('coach_not_found', 'no such coach');
    const zoneRow = await deps.db.query<{ tz: string }>(
      "SELECT schedule->>'timezone' AS tz FROM coach_calendars WHERE coach_id = $1",
      [coachId],
    );
    const zone = zoneRow.rows[0]?.tz ?? 'UTC';
    const { from, to } = range(ctx.query, zone, deps.clock());
    const travel = await candidateTravel(deps.db, coachId, ctx.query);
    const place = candidatePlace(ctx.query);
    const { schedule, reservations } = await calendarOf(deps.db, coachId, from, to, travel);
    const held = caller
      ? await clientPackagesUntil(deps.db, caller.userId, { coachId }, deps.clock())
      : { packages: [], openUntil: new Map<string, number>() };
    const packages = held.packages.filter((p) => p.open);
    // The approved services, and any other (withdrawn, or back in review) of which the caller holds an open
    // package: its remaining sessions are owed and can be booked, as on endpoint 6.
    const owed = new Set(packages.map((p) => p.serviceId));
    const services = (await coachServices(deps.db, coachId, owed.size > 0)).filter(
      (s) => s.status === 'approved' || owed.has(s.id),
    );
    const now = deps.clock();
    // The caller's own seats: a group slot it holds one in is not offered to it (as on endpoint 6).
    const own = new Set(
      caller
        ? reservations.filter((r) => r.clientId === caller.userId).map((r) => Date.parse(r.startsAt))
        : [],
    );
    const answered = [];
    const bound = new SlotBound(from, to);
    for (const s of services) {
      if (answered.length > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      // Through the last date still answered; the caller's own seats are found but not listed nor counted.
      const { slots, stoppedOn } = schedule
        ? freeSlotsUntil(
            schedule,
            reservations,
            offeredRules(s, place, held.openUntil.get(s.id)),
            from,
            bound.toDate,
            now,
            travel,
            undefined,
            bound.limit(own.size),
          )
        : { slots: [] };
      const listed = withoutOwnSeats(slots, own);
      bound.count(listed, stoppedOn);
      // A range asked for is answered whole or refused; the default one (no to_date) is shortened to its
      // last whole day within the bound, which `toDate` says.
      if (!bound.whole && (ctx.query.to_date !== undefined || bound.last < 0))
        throw tooManySlots("the coach's services have");
      answered.push({
        service: s,
        slots: listed,
        packages: packages.filter((p) => p.serviceId === s.id),
      });
    }
    ctx.body = {
      coachId,
      timezone: zone,
      fromDate: from,
      toDate: bound.toDate,
      minutesTravel: travel,
      services: answered.map((a) => ({ ...a, slots: through(a.slots, bound.toDate) })),
    };
  });
  return router;
}
