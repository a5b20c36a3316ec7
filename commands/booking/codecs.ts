import * as t from 'io-ts';
import {
  isCalendarDate,
  boundedString,
  finiteNumberIn,
  FreeJson,
  intIn,
  refine,
  strict,
  Uuid,
  requiredText,
  orNull,
} from '../../src/http/validation';
import { describeSchema, sharpenSchema } from '../../src/http/openapi/jsonSchema';

const LOCAL_DATE_TIME = /^\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d(:00(\.0+)?)?$/;
const LOCAL_DATE_TIME_MESSAGE = 'Input should be a local date-time without zone, e.g. 2026-12-01T10:00:00';
const LocalDateTime = sharpenSchema(
  refine(
    t.string,
    // A real calendar day and a wall time up to 23:59 (2026-02-30 or 24:00 is bad input, not a busy slot).
    (s) => LOCAL_DATE_TIME.test(s) && isCalendarDate(s.slice(0, 10)),
    'local_datetime',
    LOCAL_DATE_TIME_MESSAGE,
  ),
  // The form for /openapi.json (a reschedule's `slot`), as a booking's `slots` say it.
  { pattern: LOCAL_DATE_TIME.source },
);
const SLOTS_MESSAGE = 'slots should hold 1 to 100 distinct date-times';
const LatLng = strict(
  { lat: finiteNumberIn(-90, 90, 'latitude'), lng: finiteNumberIn(-180, 180, 'longitude') },
  {},
  'position',
);

/** Payment methods and the methodId the Payment record carries for each. */
export const METHOD_IDS = { card: 1, cash: 2, bank_transfer: 3 } as const;
const Method = t.keyof(METHOD_IDS, 'method');

/** POST /api/v1/service/{service_id}: the interface document's booking body. */
export const BookingBody = strict(
  {
    // The bounds and the slot's form as JSON Schema says them, for clients that check before they send.
    slots: describeSchema(
      refine(
        t.array(LocalDateTime),
        (a) => a.length >= 1 && a.length <= 100 && new Set(a.map((s) => s.slice(0, 16))).size === a.length,
        'slots',
        SLOTS_MESSAGE,
      ),
      {
        type: 'array',
        items: { type: 'string', pattern: LOCAL_DATE_TIME.source, description: LOCAL_DATE_TIME_MESSAGE },
        minItems: 1,
        maxItems: 100,
        uniqueItems: true,
        description: SLOTS_MESSAGE,
      },
    ),
  },
  // Each may come as null, read as not sent (docs/api.md, endpoint 8).
  {
    addressId: orNull(Uuid),
    position: orNull(LatLng),
    address: orNull(boundedString(500)),
    parking: orNull(t.union([boundedString(200), t.boolean])),
    parkingDescription: orNull(boundedString(1000)),
    orderDescription: orNull(boundedString(2000)),
    method: orNull(Method),
    /** Book these slots against an earlier booking's package: its `groupId`. */
    packageId: orNull(Uuid),
    // Card details belong to the payment provider: accepted for compatibility, never stored or logged.
    card: FreeJson,
  },
  'BookingIn',
);
export type BookingBody = t.TypeOf<typeof BookingBody>;

// Optional fields sent as `null` are read as not sent, as in the booking body.
export const ReasonBody = strict({}, { reason: orNull(boundedString(1000)) }, 'ReasonIn');
/** A reschedule: the new local date-time, by the rules of a booking's `slots` element. */
export const RescheduleBody = strict({ slot: LocalDateTime }, {}, 'RescheduleIn');
export const DisputeBody = strict({ reason: requiredText(2000) }, {}, 'DisputeIn');
export const ReviewBody = strict(
  { rating: intIn(1, 5, 'rating') },
  { comment: orNull(boundedString(2000)) },
  'ReviewIn',
);
