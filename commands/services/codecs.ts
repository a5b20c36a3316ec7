import * as t from 'io-ts';
import { SERVICE_SLOT_RE } from '../calendar/slots';
import { WEEKDAYS } from '../calendar/events';
import { describeSchema } from '../../src/http/openapi/jsonSchema';
import {
  Uuid,
  boundedString,
  finiteNumberIn,
  intIn,
  orNull,
  refine,
  strict,
  requiredText,
  VISIBLE_CHARACTER,
} from '../../src/http/validation';

/**
 * The ISO 4217 codes of currencies in use, as the runtime's ICU data lists them (EUR, USD, JPY, ...): a price
 * in "ZZZ" could be neither shown with its minor unit nor charged.
 */
const CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf('currency'));

const CURRENCY_MESSAGE = 'Input should be an ISO 4217 currency code in upper case, e.g. EUR';
const Currency = describeSchema(
  refine(t.string, (s) => CURRENCIES.has(s), 'currency', CURRENCY_MESSAGE),
  {
    type: 'string',
    pattern: '^[A-Z]{3}$',
    description: `${CURRENCY_MESSAGE} (a currency in use)`,
  },
);

/** The longest session a service may have (a hold never lasts longer). */
export const MAX_SESSION_MINUTES = 480;

/** A service's types all show on its coach's public profile (13): a short list. */
export const MAX_SERVICE_TYPES = 20;

/** How many start times a service lists (`Service.slots`). */
const MAX_SLOTS = 500;
const SLOT_MESSAGE = 'Input should be a start time HH:mm, or a weekday and a start time, e.g. "monday 09:30"';

/**
 * SERVICE_SLOT_RE as the route reads an entry (trimmed, in any letter case), for /openapi.json: JSON Schema
 * patterns take no flags, so each letter of a weekday is spelt in both cases.
 */
const SERVICE_SLOT_PATTERN = `^\\s*(?:(?:${WEEKDAYS.map((d) =>
  [...d].map((ch) => `[${ch.toUpperCase()}${ch}]`).join(''),
).join('|')}) )?(?:[01]\\d|2[0-3]):[0-5]\\d\\s*$`;

/** Every editable Service field with its rule; which are required differs between create and edit. */
const required = {
  name: requiredText(200),
  price: finiteNumberIn(0, 1_000_000, 'price'),
  priceCurrency: Currency,
  sessionMinutesDuration: intIn(5, MAX_SESSION_MINUTES, 'minutes'),
};
const optional = {
  description: boundedString(5000),
  promo: t.boolean,
  serviceOtherType: boundedString(200),
  sessionCancellationHours: intIn(0, 720, 'hours'),
  serviceTypes: describeSchema(
    refine(
      t.array(requiredText(100)),
      (a) => a.length <= MAX_SERVICE_TYPES,
      'service_types',
      `serviceTypes should hold at most ${MAX_SERVICE_TYPES} entries`,
    ),
    {
      type: 'array',
      items: { type: 'string', minLength: 1, maxLength: 100, pattern: VISIBLE_CHARACTER },
      maxItems: MAX_SERVICE_TYPES,
      description: `serviceTypes should hold at most ${MAX_SERVICE_TYPES} entries`,
    },
  ),
  numberOfSessions: intIn(1, 100, 'sessions'),
  expiresInDays: intIn(1, 3650, 'days'),
  groupSession: t.boolean,
  maxGroupSize: intIn(1, 500, 'group size'),
  slots: describeSchema(
    refine(
      t.array(
        refine(t.string, (x) => SERVICE_SLOT_RE.test(x.trim().toLowerCase()), 'service_slot', SLOT_MESSAGE),
      ),
      (a) => a.length <= MAX_SLOTS,
      'slots',
      `slots should hold at most ${MAX_SLOTS} start times`,
    ),
    {
      type: 'array',
      items: { type: 'string', pattern: SERVICE_SLOT_PATTERN, description: SLOT_MESSAGE },
      maxItems: MAX_SLOTS,
      description: `slots should hold at most ${MAX_SLOTS} start times`,
    },
  ),
  minimumNoticeHours: intIn(0, 720, 'hours'),
  bookingWindowDays: intIn(1, 3650, 'days'),
};

/** What a created service holds for each optional field its coach left out. */
export const SERVICE_DEFAULTS = {
  description: '',
  promo: false,
  serviceOtherType: '',
  sessionCancellationHours: 24,
  serviceTypes: [] as string[],
  numberOfSessions: 1,
  expiresInDays: 365,
  groupSession: false,
  maxGroupSize: 1,
  slots: [] as string[],
  minimumNoticeHours: 2,
  bookingWindowDays: 60,
};

/** POST /api/v1/coach/services: the interface document's Service without id and status (server-set). */
export const CreateServiceBody = strict(required, optional, 'ServiceIn');
export type CreateServiceBody = t.TypeOf<typeof CreateServiceBody>;

/** PUT /api/v1/coach/services/{service_id}: any editable field; the ones left out keep their value. */
export const UpdateServiceBody = strict({}, { ...required, ...optional }, 'ServiceUpdate');
export type UpdateServiceBody = t.TypeOf<typeof UpdateServiceBody>;

// `null` is read as not sent, as for every optional reason.
export const RejectServiceBody = strict({}, { reason: orNull(boundedString(1000)) }, 'ServiceRejection');

export const ServiceIdPath = t.type({ service_id: Uuid });
