import * as t from 'io-ts';
import { isLeft } from 'fp-ts/Either';
import { ValidationError, type ValidationIssue } from './errors';
import { describeSchema } from './openapi/jsonSchema';
import { depthOf, inputIssues } from './hygiene';

export type Location = 'body' | 'path' | 'query' | 'header';

function issueOf(where: Location, err: t.ValidationError): ValidationIssue {
  const loc: (string | number)[] = [where];
  err.context.forEach((c, i) => {
    if (i === 0 || c.key === '') return;
    // Unions and intersections add their member's index to the path; it names no data, so drop it.
    const parent = err.context[i - 1]?.type as { _tag?: string } | undefined;
    if (parent?._tag === 'UnionType' || parent?._tag === 'IntersectionType') return;
    loc.push(/^\d+$/.test(c.key) ? Number(c.key) : c.key);
  });
  const leaf = err.context[err.context.length - 1];
  if (err.value === undefined) return { loc, msg: 'Field required', type: 'missing' };
  // `?limit=1&limit=2` reads as an array: the codec's own message ("Input should be an integer") misleads.
  if (where === 'query' && loc.length === 2 && Array.isArray(err.value))
    return {
      loc,
      msg: `${String(loc[1])} should be given once, not ${err.value.length} times`,
      // One type whatever the parameter's codec (an enum's name made `invalid__a_b_`).
      type: 'repeated',
    };
  if (err.message === 'extra_forbidden')
    return { loc, msg: 'Extra inputs are not permitted', type: 'extra_forbidden' };
  // A choice names its values, as FastAPI's enum error does: "Input should be 'card', 'cash' or 'bank_transfer'".
  const keys = leaf?.type instanceof t.KeyofType ? Object.keys(leaf.type.keys as object) : undefined;
  if (keys?.length && !err.message) {
    const quoted = keys.map((k) => `'${k}'`);
    const last = quoted.pop()!;
    return {
      loc,
      msg: `Input should be ${quoted.length ? `${quoted.join(', ')} or ${last}` : last}`,
      type: 'enum',
    };
  }
  const expected = leaf?.type.name ?? 'value';
  return {
    loc,
    msg: err.message ?? `Input should be ${expected}`,
    type: `invalid_${expected.replace(/\W+/g, '_')}`,
  };
}

/**
 * Most issues a 422 lists (the first ones found): 9,000 wrong items of an array were answered one issue
 * apiece, a 1 MB answer that took the event loop a second to make.
 */
export const MAX_ISSUES = 100;

/** Decodes `value` or throws a 422 naming the failing fields. Union members' repeats are collapsed. */
export function decode<A, O>(codec: t.Type<A, O, unknown>, value: unknown, where: Location): A {
  // Bodies and query strings were checked by the inputHygiene middleware; path parameters are checked here.
  const unsafe = inputIssues(value, where);
  if (unsafe.length) throw new ValidationError(unsafe);
  const result = codec.decode(value);
  if (!isLeft(result)) return result.right;
  const seen = new Set<string>();
  const detail: ValidationIssue[] = [];
  for (const e of result.left) {
    const issue = issueOf(where, e);
    const key = JSON.stringify(issue.loc) + issue.type;
    if (seen.has(key)) continue;
    seen.add(key);
    detail.push(issue);
    if (detail.length === MAX_ISSUES) break;
  }
  throw new ValidationError(detail);
}

/**
 * An object codec with required and optional properties that rejects properties it does not name
 * ("no additional properties"). Every problem is reported at once, with plain field paths.
 */
export function strict<P extends t.Props, O extends t.Props>(props: P, optional: O, name = 'object') {
  const required = t.type(props);
  const partial = t.partial(optional);
  type A = t.TypeOf<typeof required> & t.TypeOf<typeof partial>;
  const known = new Set([...Object.keys(props), ...Object.keys(optional)]);
  const codec = new t.Type<A, unknown, unknown>(
    name,
    (u): u is A => required.is(u) && partial.is(u),
    (u, c) => {
      if (typeof u !== 'object' || u === null || Array.isArray(u))
        return t.failure(u, c, 'Input should be an object');
      const a = required.validate(u, c);
      const b = partial.validate(u, c);
      const errors: t.Errors = [...(isLeft(a) ? a.left : []), ...(isLeft(b) ? b.left : [])];
      for (const k of Object.keys(u).filter((k) => !known.has(k)))
        errors.push({
          value: (u as Record<string, unknown>)[k],
          context: [...c, { key: k, type: t.unknown }],
          message: 'extra_forbidden',
        });
      if (errors.length || isLeft(a) || isLeft(b)) return t.failures(errors);
      // t.partial answers its input itself when none of its fields changed: spread whole, it would put the
      // required fields back as sent over what their codecs decoded them to (a zone's canonical name).
      const out: Record<string, unknown> = { ...a.right };
      for (const k of Object.keys(optional))
        if (k in b.right) out[k] = (b.right as Record<string, unknown>)[k];
      return t.success(out as A);
    },
    (a) => a,
  );
  // Read by the OpenAPI walker (src/http/openapi/jsonSchema.ts): an object without additional properties.
  return Object.assign(codec, { strictProps: { required: props, optional } });
}

/** A refinement with a readable failure message. */
export function refine<A, O>(
  codec: t.Type<A, O, unknown>,
  pred: (a: A) => boolean,
  name: string,
  msg: string,
) {
  const refined = new t.Type<A, O, unknown>(
    name,
    (u): u is A => codec.is(u) && pred(u),
    (u, c) => {
      const r = codec.validate(u, c);
      // A value of another type (a string for a rating, null for a zone) is told what is expected, not the
      // codec's name ("Input should be rating"); an element's own failure keeps its place and message.
      if (isLeft(r))
        return t.failures(
          r.left.map((e) =>
            e.context.length === c.length && e.message === undefined ? { ...e, message: msg } : e,
          ),
        );
      return pred(r.right) ? r : t.failure(u, c, msg);
    },
    codec.encode,
  );
  // The OpenAPI walker documents a refinement as its base codec, described by its failure message.
  return Object.assign(refined, { refinementOf: codec, refinementMessage: msg });
}

/**
 * An optional field that may also come as `null`, read as not sent: clients that write every field of their
 * model send `"addressId": null` for "none". A value that is sent gets the field's own errors (a plain union
 * would add "Input should be null" to each); the empty-key context names the field's codec for its message.
 */
export function orNull<C extends t.Mixed>(codec: C) {
  return new t.UnionType<[C, t.NullC], t.TypeOf<C> | null, t.OutputOf<C> | null, unknown>(
    codec.name,
    (u): u is t.TypeOf<C> | null => u === null || codec.is(u),
    (u, c) => (u === null ? t.success(null) : codec.validate(u, t.appendContext(c, '', codec, u))),
    (a) => (a === null ? null : (codec.encode(a) as t.OutputOf<C>)),
    [codec, t.null],
  );
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const Uuid = describeSchema(
  refine(t.string, (s) => UUID_RE.test(s), 'uuid', 'Input should be a valid UUID'),
  { type: 'string', format: 'uuid' },
);
/**
 * Characters as JSON Schema's minLength/maxLength (and a user) count them: code points, so an emoji is one
 * character, not the two UTF-16 units of `String.length`.
 */
export function codePointLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++, n++) {
    const unit = s.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
  }
  return n;
}

export const boundedString = (max: number, min = 0) =>
  describeSchema(
    refine(
      t.string,
      // A string of more than 2 * max units has more than max code points: not counted.
      (s) => s.length <= 2 * max && codePointLength(s) >= min && codePointLength(s) <= max,
      'string',
      `String should have ${min} to ${max} characters`,
    ),
    { type: 'string', ...(min > 0 ? { minLength: min } : {}), maxLength: max },
  );
/**
 * One character that shows: not white space, nor one Unicode says is drawn as nothing (zero-width space, bidi
 * controls, word joiner, variation selectors, the Hangul fillers: Default_Ignorable_Code_Point). The regular
 * expression and the pattern /openapi.json gives (ECMA-262 with `u`, as JSON Schema validators compile it).
 */
export const VISIBLE_CHARACTER = '[^\\s\\p{Default_Ignorable_Code_Point}]';
const VISIBLE = new RegExp(VISIBLE_CHARACTER, 'u');

/**
 * A name or other required text: 1 to `max` characters, not blanks only (`"   "`, or a zero-width space alone,
 * names nothing). Blanks around or inside it are kept as sent.
 */
export const requiredText = (max: number) =>
  describeSchema(
    refine(boundedString(max, 1), (s) => VISIBLE.test(s), 'string', 'String should not be blanks only'),
    { type: 'string', minLength: 1, maxLength: max, pattern: VISIBLE_CHARACTER },
  );
/**
 * A link shown to others (a profile's avatar, its media): '' , a path, or an http(s) URL. Any other scheme
 * (`javascript:`, `data:`, `file:`) is refused; browsers drop tabs, newlines and leading blanks from a URL
 * before they read its scheme (`java\tscript:`), so the check does too.
 */
const SCHEME = /^([a-z][a-z0-9+.-]*):/i;
export const linkText = (max: number) =>
  describeSchema(
    refine(
      t.string,
      (s) => {
        if (s.length > 2 * max || codePointLength(s) > max) return false;
        // The link without blanks and control characters, as a browser reads its scheme.
        const head = Array.from(s)
          .filter((c) => c > ' ')
          .join('');
        const scheme = SCHEME.exec(head)?.[1]?.toLowerCase();
        return scheme === undefined || scheme === 'http' || scheme === 'https';
      },
      'link',
      `Input should be a path or an http(s) URL of at most ${max} characters`,
    ),
    {
      type: 'string',
      maxLength: max,
      description: `Input should be a path or an http(s) URL of at most ${max} characters`,
    },
  );
export const finiteNumberIn = (min: number, max: number, name: string) =>
  describeSchema(
    refine(
      t.number,
      (n) => Number.isFinite(n) && n >= min && n <= max,
      name,
      `Input should be a number from ${min} to ${max}`,
    ),
    { type: 'number', minimum: min, maximum: max },
  );
export const intIn = (min: number, max: number, name = 'integer') =>
  describeSchema(
    refine(
      t.number,
      (n) => Number.isInteger(n) && n >= min && n <= max,
      name,
      `Input should be an integer from ${min} to ${max}`,
    ),
    { type: 'integer', minimum: min, maximum: max },
  );

/**
 * YYYY-MM-DD that is a real calendar day. `Date.parse` alone is not enough: it takes 2026-02-31 and rolls it
 * into March, and luxon then reads the same text as invalid (NaN days), which reached the slot computation
 * of the availability queries as a 500.
 */
export const isCalendarDate = (s: string): boolean => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const year = Number(s.slice(0, 4));
  // Years outside 1900-2200 are typing mistakes here, and year 0 is out of PostgreSQL's date range.
  if (year < MIN_YEAR || year > MAX_YEAR) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
};
/** Calendar dates (and the date part of every date-time) must fall within these years. */
export const MIN_YEAR = 1900;
export const MAX_YEAR = 2200;
export const CalendarDate = describeSchema(
  refine(
    t.string,
    isCalendarDate,
    'date',
    `Input should be a date YYYY-MM-DD in the years ${MIN_YEAR} to ${MAX_YEAR}`,
  ),
  { type: 'string', format: 'date' },
);

/**
 * A query string's '+' is a space once decoded (form encoding), so `?at=2026-03-03T15:00:00+01:00` typed as
 * is arrives with ' 01:00' for its offset: read that space back as the '+' it was.
 */
const plusOfOffset = new t.Type<string, string, unknown>(
  'string',
  t.string.is,
  (u, c) => {
    const r = t.string.validate(u, c);
    if (isLeft(r)) return r;
    return t.success(
      r.right.replace(/^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?) (\d{2}:?\d{2})$/, '$1+$2'),
    );
  },
  t.identity,
);
/**
 * Hours 00 to 23, minutes and seconds 00 to 59, as RFC 3339 (the document's `date-time`) has them:
 * `Date.parse` alone took hour 24 as the next midnight.
 */
const ISO_INSTANT =
  /^\d{4}-\d{2}-\d{2}T(?:[01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;
/**
 * An ISO 8601 instant with a zone, on a real calendar day: `at` of the audit queries. A day that does not
 * exist (2026-02-30) is refused rather than silently read as another day, and so is hour 24 (of 1 December,
 * the midnight that starts 2 December).
 */
export const IsoInstant = describeSchema(
  refine(
    plusOfOffset,
    (s) => ISO_INSTANT.test(s) && isCalendarDate(s.slice(0, 10)) && !Number.isNaN(Date.parse(s)),
    'iso_instant',
    `Input should be an ISO 8601 instant with a zone on a real calendar day in the years ${MIN_YEAR} to ${MAX_YEAR}, e.g. 2026-03-03T14:00:00Z`,
  ),
  { type: 'string', format: 'date-time' },
);

/** Query-string integers arrive as text. */
export const IntFromString = (min: number, max: number) =>
  describeSchema(
    new t.Type<number, string, unknown>(
      'integer',
      (u): u is number => typeof u === 'number' && Number.isInteger(u) && u >= min && u <= max,
      (u, c) => {
        const n = typeof u === 'string' && /^-?\d+$/.test(u) ? Number(u) : NaN;
        return Number.isInteger(n) && n >= min && n <= max
          ? t.success(n)
          : t.failure(u, c, `Input should be an integer from ${min} to ${max}`);
      },
      String,
    ),
    { type: 'integer', minimum: min, maximum: max },
  );

/** Standard list paging: `limit` (default 50, max 200) and `offset`. */
export const Paging = t.partial({ limit: IntFromString(1, 200), offset: IntFromString(0, 1_000_000) });
export const paging = (q: unknown) => {
  const p = decode(Paging, q, 'query');
  return { limit: p.limit ?? 50, offset: p.offset ?? 0 };
};

/** Limits of a free-form JSON field (`checkout`, `card`): nesting levels and UTF-8 size of its JSON text. */
export const FREE_JSON_MAX_DEPTH = 8;
export const FREE_JSON_MAX_BYTES = 16 * 1024;

/** Whether a JSON value holds a number that is not finite (1e400 parses as Infinity), without recursion. */
function hasNonFinite(value: unknown): boolean {
  const stack = [value];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'number' && !Number.isFinite(v)) return true;
    if (typeof v === 'object' && v !== null) stack.push(...(Array.isArray(v) ? v : Object.values(v)));
  }
  return false;
}

/**
 * Any JSON value within the free-form limits. Such fields are opaque to us (a provider's checkout session,
 * card details passed through), but they are stored or hashed, so they are kept small and shallow.
 */
export const FreeJson = describeSchema(
  new t.Type<unknown, unknown, unknown>(
    'json',
    (_u): _u is unknown => true,
    (u, c) => {
      if (depthOf(u, FREE_JSON_MAX_DEPTH) > FREE_JSON_MAX_DEPTH)
        return t.failure(u, c, `Input should be nested at most ${FREE_JSON_MAX_DEPTH} levels deep`);
      if (Buffer.byteLength(JSON.stringify(u) ?? '') > FREE_JSON_MAX_BYTES)
        return t.failure(u, c, `Input should be at most ${FREE_JSON_MAX_BYTES} bytes of JSON`);
      // A number past a double's range (1e400) parses as Infinity, which JSON.stringify writes as null: it
      // was stored (and answered) as null, silently.
      if (hasNonFinite(u))
        return t.failure(u, c, 'Input should hold only numbers a double can hold (not 1e400)');
      return t.success(u);
    },
    (a) => a,
  ),
  { description: `any JSON, at most ${FREE_JSON_MAX_DEPTH} levels deep and ${FREE_JSON_MAX_BYTES} bytes` },
);
/** A free-form JSON object within the free-form limits. */
export const FreeJsonObject = describeSchema(
  new t.Type<Record<string, unknown>, unknown, unknown>(
    'object',
    (u): u is Record<string, unknown> => t.UnknownRecord.is(u),
    (u, c) => {
      if (!t.UnknownRecord.is(u)) return t.failure(u, c, 'Input should be an object');
      const r = FreeJson.validate(u, c);
      return isLeft(r) ? r : t.success(u);
    },
    (a) => a,
  ),
  {
    type: 'object',
    additionalProperties: true,
    description: `any JSON object, at most ${FREE_JSON_MAX_DEPTH} levels deep and ${FREE_JSON_MAX_BYTES} bytes`,
  },
);
