import { DateTime } from 'luxon';
import { zoneOf } from './zones';
import { WEEKDAYS, type Interval, type Schedule } from './events';
import type { ServiceFields } from '../services/events';

/**
 * Slot arithmetic shared by the calendar decider (which decides) and the availability query (which shows):
 * one function, so what a client sees is exactly what it can book. Pure: `now` comes in.
 */

export interface Reservation {
  sessionId: string;
  serviceId: string;
  clientId: string;
  startsAt: string;
  endsAt: string;
  /** The coach's travel to and from it: blocked before the start and after the end (0 or absent: none). */
  travelMinutes?: number;
  /** Where it takes place (`placeKey`); absent on holds recorded before places were kept: any place. */
  place?: string | null;
  /**
   * Whether it was booked as a seat of a group session (`SlotsReserved.groupSession`): false for a
   * one-on-one session, whose time is never shared, also after its service became a group one. Absent
   * (read-model rows written before this was kept, until a rebuild): a seat, as then.
   */
  shared?: boolean | null;
}

/**
 * Where a session takes place, as a key: one of the coach's addresses (`a:<id>`), the client's position
 * (`c:<lat>,<lng>`), or neither (`-`). A group session is one meeting at one place: a seat is shared only
 * with holds at the same place; at another place the coach would have to be in two places at once.
 */
export const placeKey = (
  addressId: string | null | undefined,
  clientLocation: { lat: number; lng: number } | null | undefined,
): string =>
  addressId
    ? `a:${addressId.toLowerCase()}`
    : clientLocation
      ? `c:${clientLocation.lat},${clientLocation.lng}`
      : '-';

export interface SlotRules {
  serviceId: string;
  minutesDuration: number;
  groupSession: boolean;
  maxGroupSize: number;
  minimumNoticeHours: number;
  bookingWindowDays: number;
  /**
   * `Service.slots` read as start times: local minutes after midnight per ISO weekday (1 = Monday). Null
   * when the service has none: slots then step through each interval by the session length.
   */
  startTimes: Map<number, number[]> | null;
  /** Where the candidate session would take place (`placeKey`): group seats are shared at that place only. */
  place?: string;
  /**
   * Availability only: the service is sold as a package of this many days (`expiresInDays`, when
   * `numberOfSessions` > 1), whose sessions take place by its last day (today plus these days in the
   * coach's zone, as the booking's `package_expired` counts it), so later slots are not offered to buy it.
   * The calendar decider leaves it out: it answers such a slot `package_expired`, not `slot_unavailable`.
   */
  packageDays?: number;
  /**
   * Availability only, with `packageDays`: the caller holds an open package of the service whose sessions
   * may take place until this instant (epoch ms, the end of its own last day), later than a package bought
   * now would allow (the coach shortened `expiresInDays` since): its slots are offered up to it, as the
   * holder books them with its `packageId`.
   */
  packageUntil?: number;
}

/** A service's rules for its slots: availability shows and booking checks the very same ones. */
export const slotRulesOf = (
  s: { id: string } & Pick<
    ServiceFields,
    | 'sessionMinutesDuration'
    | 'groupSession'
    | 'maxGroupSize'
    | 'minimumNoticeHours'
    | 'bookingWindowDays'
    | 'slots'
  >,
): SlotRules => ({
  serviceId: s.id,
  minutesDuration: s.sessionMinutesDuration,
  groupSession: s.groupSession,
  maxGroupSize: s.maxGroupSize,
  minimumNoticeHours: s.minimumNoticeHours,
  bookingWindowDays: s.bookingWindowDays,
  startTimes: startTimesOf(s.slots ?? []),
});

/**
 * The rules availability (6, 11) shows a service's slots by, at a place: its slot rules, and a package's
 * sessions by the package's last day (see `packageDays`).
 */
export const offeredRulesOf = (
  s: Parameters<typeof slotRulesOf>[0] & Pick<ServiceFields, 'numberOfSessions' | 'expiresInDays'>,
  place: string,
): SlotRules => ({
  ...slotRulesOf(s),
  place,
  ...(s.numberOfSessions > 1 ? { packageDays: s.expiresInDays } : {}),
});

/** `HH:mm` (every day) or `<weekday> HH:mm` (e.g. `monday 09:30`): one element of `Service.slots`. */
export const SERVICE_SLOT_RE =
  /^(?:(monday|tuesday|wednesday|thursday|friday|saturday|sunday) )?([01]\d|2[0-3]):([0-5]\d)$/;

/**
 * Start times per weekday from `Service.slots`; null when it names none. Elements that do not parse (only
 * possible in services stored before the format was checked) are skipped.
 */
export function startTimesOf(slots: readonly string[]): Map<number, number[]> | null {
  const out = new Map<number, number[]>();
  for (const entry of slots) {
    const m = SERVICE_SLOT_RE.exec(entry.trim().toLowerCase());
    if (!m) continue;
    const minutes = Number(m[2]) * 60 + Number(m[3]);
    const days = m[1] ? [WEEKDAYS.indexOf(m[1] as (typeof WEEKDAYS)[number]) + 1] : [1, 2, 3, 4, 5, 6, 7];
    for (const d of days) out.set(d, [...(out.get(d) ?? []), minutes]);
  }
  if (out.size === 0) return null;
  for (const [d, list] of out)
    out.set(
      d,
      [...new Set(list)].sort((a, b) => a - b),
    );
  return out;
}

export interface FreeSlot {
  /** Local date-time in the coach's zone, no offset: "2026-12-01T10:00:00". */
  slot: string;
  startsAt: string;
  endsAt: string;
  remainingSeats: number;
}

const toMinutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/**
 * Hours of one local date: its override if any, else its weekday's, in time order (a schedule stores its
 * intervals as the coach sent them, and slots are listed in the order of the intervals).
 */
export function hoursOn(schedule: Schedule, date: DateTime): Interval[] {
  const key = date.toISODate()!;
  const hours =
    key in schedule.overrides
      ? schedule.overrides[key]!
      : (schedule.weekly[WEEKDAYS[date.weekday - 1]!] ?? []);
  return hours.every((x, i) => i === 0 || hours[i - 1]!.start <= x.start)
    ? hours
    : [...hours].sort((a, b) => (a.start < b.start ? -1 : 1));
}

/** Parses a local slot label in `zone`; null for a malformed label or a wall time skipped by DST. */
export function parseLocal(slot: string, zone: string): DateTime | null {
  const dt = DateTime.fromISO(slot, { zone: zoneOf(zone) });
  if (!dt.isValid) return null;
  // A time inside a spring-forward gap does not exist; luxon would move it, so it would not round-trip.
  if (dt.toFormat("yyyy-MM-dd'T'HH:mm") !== slot.slice(0, 16)) return null;
  // A time inside the autumn fold exists twice and luxon picks the later one; take the first occurrence,
  // as freeSlots documents (fixed after test/unit/slots.test.ts found the later one was offered).
  return dt.getPossibleOffsets().reduce((a, b) => (b.toMillis() < a.toMillis() ? b : a), dt);
}

/** The calendar date after `date` (YYYY-MM-DD). */
const nextDate = (date: string) => new Date(Date.parse(date) + 86_400_000).toISOString().slice(0, 10);

/**
 * The instant the wall clock of `zone` reaches `minutes` after the start of local `date` (past 1440 into the
 * next day). A wall time skipped by a spring change is never shown: it is reached when the clock jumps past it.
 * In an autumn fold this is its later occurrence (the wall-minute rule of `startsIn` holds a session to the
 * earlier one).
 */
function wallInstant(date: string, minutes: number, zone: string): number {
  let d = date;
  let m = minutes;
  for (; m >= 1440; m -= 1440) d = nextDate(d);
  const [year, month, day] = d.split('-').map(Number) as [number, number, number];
  const hour = Math.floor(m / 60);
  const dt = DateTime.fromObject({ year, month, day, hour, minute: m % 60 }, { zone: zoneOf(zone) });
  // Luxon moves a skipped wall time forward by the gap (read with the offset before the change).
  const shift = dt.toMillis() + dt.offset * 60_000 - Date.UTC(year, month - 1, day, hour, m % 60);
  if (shift <= 0) return dt.toMillis();
  // The change lies between the wall time read with the offset after it and with the one before: the first
  // minute with the later offset (changes fall on whole minutes).
  let lo = dt.toMillis() - shift;
  let hi = dt.toMillis();
  while (hi - lo > 60_000) {
    const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000;
    if (dt.zone.offset(mid) === dt.offset) hi = mid;
    else lo = mid;
  }
  return hi;
}

const overlaps = (aStart: number, aEnd: number, bStart: number, bEnd: number) =>
  aStart < bEnd && bStart < aEnd;

/** An interval of a day with `reach`: the end (local minutes of that day) of the unbroken hours it starts. */
interface Stretch {
  start: number;
  end: number;
  /** Past `end` when the next interval starts where this one ends, and past 1440 into the next day's. */
  reach: number;
}

/**
 * A day's intervals with how far each one's hours run on unbroken: intervals that touch (09:00-10:00 and
 * 10:00-11:00) are one stretch of time, and one ending at 24:00 runs on into the next day's starting at 00:00
 * (a night 22:00-24:00 then 00:00-02:00), so a session may span them. `next` are the next day's hours.
 */
export function stretchesOn(hours: Interval[], next: Interval[]): Stretch[] {
  const out: Stretch[] = hours.map((h) => ({ start: toMinutes(h.start), end: toMinutes(h.end), reach: 0 }));
  // The next day's first stretch from its midnight (that day's own touching intervals only: a session is
  // at most MAX_SESSION_MINUTES long, and a stretch reaching a second midnight already holds it).
  let nextReach = 0;
  for (const h of next) {
    if (toMinutes(h.start) !== nextReach) break;
    nextReach = toMinutes(h.end);
  }
  for (let i = out.length - 1; i >= 0; i--) {
    const x = out[i]!;
    const after = out[i + 1];
    x.reach =
      after && after.start === x.end
        ? after.reach
        : x.end === 1440 && nextReach > 0
          ? 1440 + nextReach
          : x.end;
  }
  return out;
}

/**
 * Start minutes of a slot inside one interval: the service's start times, or steps of the session length
 * from its start. A slot starts inside the interval and ends within its unbroken stretch (`reach`).
 */
function startsIn(interval: Stretch, rules: SlotRules, weekday: number): number[] {
  const { start, end, reach } = interval;
  const fits = (m: number) => m >= start && m < end && m + rules.minutesDuration <= reach;
  if (rules.startTimes) return (rules.startTimes.get(weekday) ?? []).filter(fits);
  const out: number[] = [];
  for (let m = start; fits(m); m += rules.minutesDuration) out.push(m);
  return out;
}

/**
 * Free slots of a service between two local dates (inclusive): at the service's start times
 * (`Service.slots`) inside the schedule's intervals, or else stepping by the session length from the start
 * of each interval. A slot is free when it starts after the minimum notice, inside the booking window, and
 * overlaps no active reservation, except seats of the same group slot while seats are left. Travel counts
 * as busy time: each reservation's `travelMinutes` before and after it, and `travelMinutes` (the coach's
 * travel to this booking's place) before and after the candidate slot. In the autumn DST fold the
 * repeated wall time is offered once (its first occurrence).
 */
export function freeSlots(
  schedule: Schedule,
  reservations: Iterable<Reservation>,
  rules: SlotRules,
  fromDate: string,
  toDate: string,
  now: Date,
  travelMinutes = 0,
  /** Only this slot label (its first 16 characters, to the minute) is considered: a booking's check. */
  only?: string,
  /** Stop once more than this many free slots are found (an answer's bound, see `freeSlotsUntil`). */
  limit: SlotLimit = Infinity,
): FreeSlot[] {
  return freeSlotsUntil(schedule, reservations, rules, fromDate, toDate, now, travelMinutes, only, limit)
    .slots;
}

/**
 * How many free slots a caller wants at most: a number, or per local date (YYYY-MM-DD) the most through that
 * date, never growing from one date to the next (an answer's bound less what its other services list).
 */
export type SlotLimit = number | ((date: string) => number);

/**
 * A reservation's start and end as epoch ms, parsed once per reservation object: a calendar's states share
 * their reservations, and a booking compares every one of them (parsing two ISO strings each time was a
 * tenth of a booking's CPU for a coach with a few hundred).
 */
const instants = new WeakMap<object, { s: number; e: number }>();
export function instantsOf(r: { startsAt: string; endsAt: string }): { s: number; e: number } {
  let i = instants.get(r);
  if (!i) instants.set(r, (i = { s: Date.parse(r.startsAt), e: Date.parse(r.endsAt) }));
  return i;
}

/**
 * `freeSlots`, and `until`: the first instant (epoch ms, exclusive) at which the passing of time alone would
 * change the answer. A shown slot leaves it once the minimum notice passes its start; a slot beyond the
 * booking window enters it when the window reaches its start (conservatively, even if a hold blocks it).
 * Slots already too close only stay out. Nothing else here depends on `now`.
 */
export function freeSlotsUntil(
  schedule: Schedule,
  reservations: Iterable<Reservation>,
  rules: SlotRules,
  fromDate: string,
  toDate: string,
  now: Date,
  travelMinutes = 0,
  only?: string,
  /**
   * Stop once `limit + 1` free slots are found (through the date of the last one, for a limit per date): a
   * caller bounding its answer learns it is over the bound without computing the rest (`until` then covers
   * only the slots seen, and `stoppedOn` is the date of the last one; the dates before it are whole).
   */
  limit: SlotLimit = Infinity,
): { slots: FreeSlot[]; until: number; stoppedOn?: string } {
  const zone = schedule.timezone;
  const noticeMs = rules.minimumNoticeHours * 3_600_000;
  const windowMs = rules.bookingWindowDays * 86_400_000;
  const earliest = now.getTime() + noticeMs;
  const latest = now.getTime() + windowMs;
  let until = Infinity;
  // A package bought now has its sessions by the end of its last local day; that day moves on at the next
  // local midnight (taken by its date: DST may skip a midnight).
  const packageEnd =
    rules.packageDays === undefined
      ? Infinity
      : Math.max(
          packageLastDay(now.toISOString(), rules.packageDays, zone).endOf('day').toMillis(),
          rules.packageUntil ?? -Infinity,
        );
  const packageMoves =
    rules.packageDays === undefined ? Infinity : startOfLocalDate(nextDate(localDate(now, zone)), zone);
  const ownTravel = travelMinutes * 60_000;
  const out: FreeSlot[] = [];
  const last = DateTime.fromISO(toDate, { zone: zoneOf(zone) });
  // Only reservations that can touch the asked days matter (a coach's calendar holds years of them): the
  // days' span, widened by a day each side for zone offsets and by this booking's own travel.
  const spanStart = DateTime.fromISO(fromDate, { zone: zoneOf(zone) }).toMillis() - 86_400_000 - ownTravel;
  const spanEnd = last.toMillis() + 2 * 86_400_000 + ownTravel;
  // What the slot loop needs of each (a copy of the whole reservation per booking was most of its garbage).
  const busy: {
    serviceId: string;
    place?: string | null;
    shared?: boolean | null;
    s: number;
    e: number;
    bs: number;
    be: number;
  }[] = [];
  for (const r of reservations) {
    const { s, e } = instantsOf(r);
    const travel = (r.travelMinutes ?? 0) * 60_000;
    if (e + travel <= spanStart || s - travel >= spanEnd) continue;
    busy.push({
      serviceId: r.serviceId,
      place: r.place,
      shared: r.shared,
      s,
      e,
      bs: s - travel,
      be: e + travel,
    });
  }
  // Sorted by the start of their busy time, so a candidate compares only the reservations whose busy time
  // can reach it: those starting before its end and less than the longest busy time before its start
  // (comparing every one made a long range of a busy coach quadratic: seconds for 62 days of 5-minute slots).
  busy.sort((a, b) => a.bs - b.bs);
  let longest = 0;
  for (const r of busy) longest = Math.max(longest, r.be - r.bs);
  /** The index of the first reservation whose busy time starts at or after `t`. */
  const firstFrom = (t: number) => {
    let lo = 0;
    let hi = busy.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (busy[mid]!.bs < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  // A booking's check (`only`): its date and minute of the day, so other slots are skipped unlabelled.
  const onlyParts = only === undefined ? null : /^(\d{4}-\d{2}-\d{2})T([01]\d|2[0-3]):([0-5]\d)$/.exec(only);
  if (only !== undefined && !onlyParts) return { slots: out, until };
  const onlyDate = onlyParts?.[1];
  const onlyMinute = onlyParts ? Number(onlyParts[2]) * 60 + Number(onlyParts[3]) : -1;
  const capacity = rules.groupSession ? rules.maxGroupSize : 1;
  // Days step by calendar date, each taken afresh at its local start: where a midnight is skipped by DST
  // (America/Santiago, Africa/Cairo, Asia/Beirut, America/Havana) that start is 01:00, and stepping from it
  // by a day would keep 01:00 and stop before the last date, whose midnight is before it.
  let next = DateTime.fromISO(fromDate, { zone: zoneOf(zone) });
  for (let date = fromDate, day = next; day.isValid && date <= toDate; date = nextDate(date), day = next) {
    next = DateTime.fromISO(nextDate(date), { zone: zoneOf(zone) });
    if (onlyDate !== undefined && date !== onlyDate) continue;
    // Zone arithmetic is the costly part. On a day that starts at midnight with the offset of the instant
    // before and of the next day's start (every day but DST change days) a wall time is plain arithmetic;
    // change days ask luxon per slot. So does a day whose midnight was skipped (its 00:xx do not exist) or
    // repeated (America/Havana in November: luxon's midnight is the second one, slots take the first).
    const steadyOffset =
      day.offset === next.offset &&
      day.hour === 0 &&
      day.minute === 0 &&
      day.zone.offset(day.toMillis() - 1) === day.offset
        ? day.offset
        : null;
    const midnightUtc = Date.UTC(day.year, day.month - 1, day.day);
    for (const interval of stretchesOn(hoursOn(schedule, day), hoursOn(schedule, next))) {
      // The instant the hours end: on a DST change day a session's wall-clock end is not its start plus its
      // length (01:00 plus 90 minutes is 03:30 when 02:00 becomes 03:00), so it is held to this instant too.
      const hoursEnd =
        steadyOffset !== null && interval.reach <= 1440
          ? midnightUtc + (interval.reach - steadyOffset) * 60_000
          : wallInstant(date, interval.reach, zone);
      for (const m of startsIn(interval, rules, day.weekday)) {
        if (onlyParts && m !== onlyMinute) continue;
        const label = `${date}T${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}:00`;
        let s: number;
        if (steadyOffset !== null) s = midnightUtc + (m - steadyOffset) * 60_000;
        else {
          const start = parseLocal(label, zone);
          if (!start) continue;
          s = start.toMillis();
        }
        const e = s + rules.minutesDuration * 60_000;
        if (e > hoursEnd) continue;
        if (s < earliest) continue;
        if (s > latest) {
          until = Math.min(until, s - windowMs);
          continue;
        }
        if (s > packageEnd) {
          until = Math.min(until, packageMoves);
          continue;
        }
        let seatsTaken = 0;
        let blocked = false;
        const reachEnd = e + ownTravel;
        for (let i = firstFrom(s - ownTravel - longest); i < busy.length && busy[i]!.bs < reachEnd; i++) {
          const r = busy[i]!;
          // A seat of the same group slot at the same place (a one-on-one session booked before the
          // service became a group one stays one-on-one: its client booked it so).
          if (
            rules.groupSession &&
            r.shared !== false &&
            r.serviceId === rules.serviceId &&
            r.s === s &&
            r.e === e &&
            (r.place == null || rules.place === undefined || r.place === rules.place)
          ) {
            seatsTaken++;
            continue;
          }
          // Both sides' travel is busy time: the coach needs it between two places.
          if (overlaps(s - ownTravel, e + ownTravel, r.bs, r.be)) blocked = true;
        }
        if (blocked || seatsTaken >= capacity) continue;
        until = Math.min(until, s - noticeMs + 1);
        out.push({
          slot: label,
          startsAt: new Date(s).toISOString(),
          endsAt: new Date(e).toISOString(),
          remainingSeats: capacity - seatsTaken,
        });
        if (out.length > (typeof limit === 'number' ? limit : limit(date)))
          return { slots: out, until, stoppedOn: date };
      }
    }
  }
  return { slots: out, until };
}

/**
 * The schedule without overrides of dates before yesterday in its zone: they can offer nothing (a session
 * starting yesterday is over or under way, and yesterday is kept for a night's hours running on past
 * midnight). Dropped when a schedule is set and when it is read, so a coach's app that reads the schedule,
 * adds a day off and sends it all back never fills the 400 overrides with days gone by.
 */
export function withoutPastOverrides(schedule: Schedule, now: Date | string): Schedule {
  const yesterday = DateTime.fromISO(localDate(now, schedule.timezone), { zone: 'utc' })
    .minus({ days: 1 })
    .toISODate()!;
  const overrides = Object.fromEntries(
    Object.entries(schedule.overrides).filter(([date]) => date >= yesterday),
  );
  return { ...schedule, overrides };
}

/**
 * The first instant of a local date in `zone` (epoch ms): 01:00 where DST skips its midnight, and the first
 * of two midnights where DST repeats it (America/Havana, 1 November 2026), where luxon reads the second.
 */
export function startOfLocalDate(date: string, zone: string): number {
  const dt = DateTime.fromISO(date, { zone: zoneOf(zone) });
  return Math.min(dt.toMillis(), ...dt.getPossibleOffsets().map((x) => x.toMillis()));
}

/** The local date of an instant in a zone. */
export const localDate = (instant: Date | string, zone: string) =>
  DateTime.fromJSDate(typeof instant === 'string' ? new Date(instant) : instant, {
    zone: zoneOf(zone),
  }).toISODate()!;

/**
 * The last day a package may be used, in `zone`: the local day it was booked plus `expiresInDays` calendar
 * days (not that many times 24 hours, which lands on the day before or after when a DST change lies between
 * and the booking was made within an hour of midnight).
 */
export const packageLastDay = (bookedAt: string, expiresInDays: number, zone: string): DateTime =>
  DateTime.fromMillis(Date.parse(bookedAt), { zone: zoneOf(zone) }).plus({ days: expiresInDays });

/** dd/mm/yyyy, the interface document's date text. */
export const dayMonthYear = (instant: Date | string, zone: string) =>
  DateTime.fromJSDate(typeof instant === 'string' ? new Date(instant) : instant, {
    zone: zoneOf(zone),
  }).toFormat('dd/MM/yyyy');
