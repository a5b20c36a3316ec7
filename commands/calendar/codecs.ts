import * as t from 'io-ts';
import { isLeft } from 'fp-ts/Either';
import { CalendarDate, refine, strict } from '../../src/http/validation';
import { zoneName } from '../../src/zoneName';
import { sharpenSchema, toJsonSchema } from '../../src/http/openapi/jsonSchema';
import { WEEKDAYS } from './events';

const HHMM_RE = /^(?:[01]\d|2[0-3]):[0-5]\d$|^24:00$/;
// The form is said in /openapi.json too, so a generated client checks it before sending.
const HHMM = sharpenSchema(
  refine(t.string, (s) => HHMM_RE.test(s), 'time', 'Input should be a time HH:mm'),
  { pattern: HHMM_RE.source },
);
const Interval = refine(
  strict({ start: HHMM, end: HHMM }, {}, 'interval'),
  (i) => i.start < i.end,
  'interval',
  'end should be after start',
);
// A day's hours that are not a list are told so (a refinement's own message is for a list that overlaps).
const IntervalList = refine(
  t.array(Interval),
  () => true,
  'intervals',
  'Input should be a list of intervals {start, end}',
);
const Intervals = refine(
  IntervalList,
  (list) =>
    [...list]
      .sort((a, b) => a.start.localeCompare(b.start))
      .every((x, i, s) => i === 0 || s[i - 1]!.end <= x.start),
  'intervals',
  'intervals of one day should not overlap',
);
const ZONE_MESSAGE = 'Input should be an IANA time zone such as Europe/Berlin';
/** The zone's current IANA name ("europe/berlin" is Europe/Berlin), or null when it is no IANA zone. */
const canonicalIana = (z: string): string | null => {
  const name = zoneName(z);
  return name !== null && (name.includes('/') || name === 'UTC') ? name : null;
};
const ValidZone = refine(t.string, (z) => canonicalIana(z) !== null, 'timezone', ZONE_MESSAGE);
/**
 * An IANA zone, decoded to its canonical name: Intl takes names in any case, and the schedule's zone is
 * echoed, shown by availability and recorded on every booking, so it is stored as "Europe/Berlin".
 */
export const IanaZone = Object.assign(
  new t.Type<string, string, unknown>(
    'timezone',
    ValidZone.is,
    (u, c) => {
      const r = ValidZone.validate(u, c);
      return isLeft(r) ? r : t.success(canonicalIana(r.right)!);
    },
    t.identity,
  ),
  // Documented like the refinement it is (src/http/openapi/jsonSchema.ts).
  { refinementOf: t.string, refinementMessage: ZONE_MESSAGE },
);
/** How many dates a schedule's overrides hold. */
const MAX_OVERRIDES = 400;
/** A real calendar day (the availability range and schedule overrides). */
const IsoDate = CalendarDate;

/** PUT /api/v1/coach/schedule */
export const ScheduleBody = strict(
  {
    timezone: IanaZone,
    weekly: strict(
      {},
      Object.fromEntries(WEEKDAYS.map((d) => [d, Intervals])) as Record<
        (typeof WEEKDAYS)[number],
        typeof Intervals
      >,
      'weekly',
    ),
  },
  {
    overrides: sharpenSchema(
      refine(
        refine(
          t.record(t.string, Intervals),
          () => true,
          'overrides',
          'Input should be an object of dates YYYY-MM-DD, each with a list of intervals',
        ),
        (r) => Object.keys(r).every((k) => IsoDate.is(k)) && Object.keys(r).length <= MAX_OVERRIDES,
        'overrides',
        `keys should be dates YYYY-MM-DD (at most ${MAX_OVERRIDES})`,
      ),
      { propertyNames: toJsonSchema(IsoDate), maxProperties: MAX_OVERRIDES },
    ),
  },
  'Schedule',
);
export type ScheduleBody = t.TypeOf<typeof ScheduleBody>;
export { IsoDate };
