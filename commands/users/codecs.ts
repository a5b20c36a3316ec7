import * as t from 'io-ts';
import { isLeft } from 'fp-ts/Either';
import { describeSchema } from '../../src/http/openapi/jsonSchema';
import {
  Uuid,
  boundedString,
  intIn,
  isCalendarDate,
  refine,
  strict,
  requiredText,
  linkText,
  orNull,
} from '../../src/http/validation';
import { isMailbox } from '../../src/mail/compose';
import { zoneName } from '../../src/zoneName';

const text = (max: number) => boundedString(max);

/** An IANA zone name the runtime knows (Intl throws a RangeError for the others). */
export const isIanaZone = (zone: string): boolean =>
  /^[A-Za-z][\w+/-]*$/.test(zone) && zoneName(zone) !== null;
const ZONE_MESSAGE = 'Input should be a valid IANA time zone name';
const ValidZone = refine(t.string, isIanaZone, 'timezone', ZONE_MESSAGE);
/** A valid zone, decoded to its current IANA name (so the profile stores "Europe/Berlin", not as sent). */
export const IanaTimezone = Object.assign(
  new t.Type<string, string, unknown>(
    'timezone',
    ValidZone.is,
    (u, c) => {
      const r = ValidZone.validate(u, c);
      return isLeft(r) ? r : t.success(zoneName(r.right)!);
    },
    t.identity,
  ),
  // Documented like the refinement it is (src/http/openapi/jsonSchema.ts).
  { refinementOf: t.string, refinementMessage: ZONE_MESSAGE },
);

/** YYYY-MM-DD that is a real calendar day (shared with the other codecs). */
export { isCalendarDate };
const BIRTH_DATE_MESSAGE = 'Input should be a valid date in the format YYYY-MM-DD';
const BirthDate = describeSchema(refine(t.string, isCalendarDate, 'date', BIRTH_DATE_MESSAGE), {
  type: 'string',
  format: 'date',
  description: BIRTH_DATE_MESSAGE,
});

/** One language (1 to 35 characters): no comma, since the User view (12) joins the list with commas. */
const Language = refine(
  requiredText(35),
  (s) => !s.includes(','),
  'language',
  'A language should have 1 to 35 characters and no comma',
);

/** How many languages a profile lists (the list is stored whole on every profile change). */
export const MAX_LANGUAGES = 50;
const Languages = describeSchema(
  refine(
    t.array(Language),
    (a) => a.length <= MAX_LANGUAGES,
    'languages',
    `languages should hold at most ${MAX_LANGUAGES} entries`,
  ),
  {
    type: 'array',
    items: {
      type: 'string',
      minLength: 1,
      maxLength: 35,
      // No comma, and not blanks only (white space or characters that show nothing).
      pattern: '^[^,]*[^,\\s\\p{Default_Ignorable_Code_Point}][^,]*$',
      description: 'A language should have 1 to 35 characters and no comma',
    },
    maxItems: MAX_LANGUAGES,
    description: `languages should hold at most ${MAX_LANGUAGES} entries`,
  },
);

const Email = describeSchema(
  refine(
    t.string,
    // One mailbox the mailer can send to (src/mail/compose.ts), with a dot in its domain.
    (s) => s.length <= 254 && isMailbox(s) && /@[^@]+\.[^@]+$/.test(s),
    'email',
    'Input should be a valid e-mail address',
  ),
  { type: 'string', maxLength: 254, description: 'Input should be a valid e-mail address' },
);
const PHONE_RE = /^(?:\+?[0-9 ()-]{4,30})?$/;
const Phone = describeSchema(
  refine(t.string, (s) => PHONE_RE.test(s), 'phone', 'Input should be a phone number'),
  { type: 'string', pattern: PHONE_RE.source, description: "Input should be a phone number (or '')" },
);

/**
 * PUT /api/v1/users/{user_id} body: the editable fields of User / UserProfileOut, all optional (only
 * the fields sent change); a new profile needs firstName, lastName, email and type (the decider says so).
 */
export const UpsertUserProfileBody = strict(
  {},
  {
    username: text(100),
    firstName: requiredText(100),
    lastName: requiredText(100),
    email: Email,
    phone: Phone,
    whatsapp: Phone,
    timezone: IanaTimezone,
    languages: Languages,
    gender: text(40),
    // null clears it; a value that is no date gets the date's error alone (a plain union added "Input should be null").
    birthDate: orNull(BirthDate),
    description: text(5000),
    type: t.keyof({ client: null, coach: null }, 'user type (client or coach)'),
    experience: intIn(0, 100, 'years of experience'),
    avatarUrl: linkText(2000),
    mediaType: text(100),
    mediaUrl: linkText(2000),
    mediaPreviewUrl: linkText(2000),
    verified: t.boolean,
    verifiedEmail: t.boolean,
    verifiedPhone: t.boolean,
    available: t.boolean,
    requiresParking: t.boolean,
  },
  'UserProfileIn',
);
export type UpsertUserProfileBody = t.TypeOf<typeof UpsertUserProfileBody>;

export const UserIdPath = t.type({ user_id: Uuid });
