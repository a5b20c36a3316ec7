import * as t from 'io-ts';
import { CalendarDate, refine, strict } from '../../src/http/validation';
import { WEEKDAYS } from './events';

const HHMM = refine(
  t.string,
  (s) => /^([01]\d|2[0-3]):[0-5]\d$|^24:00$/.test(s),
  'time',
  'Input should be a time HH:mm',
);
const Interval = refine(
  strict({ start: HHMM, end: HHMM }, {}, 'interval'),
  (i) => i.start < i.end,
  'interval',
  'end should be after start',
);
const Intervals = refine(
  t.array(Interval),
  (list) =>
    [...list]
      .sort((a, b) => a.start.localeCompare(b.start))
      .every((x, i, s) => i === 0 || s[i - 1]!.end <= x.start),
  'intervals',
  'intervals of one day should not overlap',
);
export const IanaZone = refine(
  t.string,
  (z) => {
    try {
      new Intl.DateTimeFormat('en', { timeZone: z });
      return z.includes('/') || z === 'UTC';
    } catch {
      return false;
    }
  },
  'timezone',
  'Input should be an IANA time zone such as Europe/Berlin',
);
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
    overrides: refine(
      t.record(t.string, Intervals),
      (r) => Object.keys(r).every((k) => IsoDate.is(k)) && Object.keys(r).length <= 400,
      'overrides',
      'keys should be dates YYYY-MM-DD (at most 400)',
    ),
  },
  'Schedule',
);
export type ScheduleBody = t.TypeOf<typeof ScheduleBody>;
export { IsoDate };
