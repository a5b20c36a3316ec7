import Router from '@koa/router';
import * as t from 'io-ts';
import type { AppDeps } from '../src/deps';
import { ValidationError } from '../src/http/errors';
import { Paging, boundedString, decode, refine } from '../src/http/validation';
import { describeSchema } from '../src/http/openapi/jsonSchema';
import type { UserProfile } from '../commands/users/events';
import type { CoachCard } from '../src/resources/coachCard';
import { LatFromString, LngFromString } from './availability';
import { optionalPrincipal } from './caller';
import { AVERAGE_RATING, ratingOf } from './reviews';

type Place = { lat: number; lng: number };

/**
 * A decimal query parameter from 0 to `max`, as a number: spelled as a client prints one, as lat/lng are
 * (`25`, `12.5`, any number of decimals, `1e-7`; up to 40 characters), so any price a service has is a maxPrice.
 */
const decimalParam = (name: string, max: number) =>
  describeSchema(
    new t.Type<number, string, unknown>(
      name,
      (u): u is number => typeof u === 'number',
      (u, c) => {
        const r = refine(
          t.string,
          (s) => s.length <= 40 && /^\d+(\.\d+)?(e-\d{1,3})?$/i.test(s) && Number(s) <= max,
          name,
          `Input should be a number from 0 to ${max}`,
        ).validate(u, c);
        return r._tag === 'Left' ? r : t.success(Number(r.right));
      },
      String,
    ),
    { type: 'number', minimum: 0, maximum: max },
  );

export const CoachSearchQuery = t.intersection([
  Paging,
  t.partial({
    q: boundedString(100),
    serviceType: boundedString(100),
    lat: LatFromString,
    lng: LngFromString,
    radiusKm: decimalParam('radiusKm', 20_000),
    maxPrice: decimalParam('maxPrice', 1_000_000),
    sort: describeSchema(t.keyof({ rating: null, distance: null, price: null }), {
      type: 'string',
      enum: ['rating', 'distance', 'price'],
    }),
  }),
]);

/** `q` as an ILIKE pattern that takes its text literally (`%`, `_` and `\` are no wildcards). */
const containsPattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * The coach's approved services that match (as `sv`): with `q` ($1), those whose name holds it (all of them
 * when the coach's name does); with `serviceType` ($2), those that list it. Prices are over these. Text is
 * compared in NFC ($1 and $2 come so), so an accent typed as a combining mark matches one stored composed.
 */
const MATCHING = `services sv WHERE sv.coach_id = p.id AND sv.status = 'approved'
  AND ($1::text IS NULL OR normalize((p.profile->>'firstName') || ' ' || (p.profile->>'lastName'), NFC) ILIKE $1
       OR normalize(sv.fields->>'name', NFC) ILIKE $1)
  AND ($2::text IS NULL OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(sv.fields->'serviceTypes') st
       WHERE lower(normalize(st, NFC)) = lower($2)))`;
/** Great-circle km from ($5, $6) to the coach's default address, as `greatCircleKm` (commands/calendar/travel.ts) computes it. */
const KM = `2 * 6371.0088 * asin(least(1, sqrt(
  sin(radians(a.lat - $5::float8) / 2) ^ 2
  + cos(radians($5::float8)) * cos(radians(a.lat)) * sin(radians(a.lng - $6::float8) / 2) ^ 2)))`;
/** `KM` as `distance` shows it (2 decimals, as JavaScript's Math.round(km * 100) / 100): what `radiusKm` bounds. */
const SHOWN_KM = `floor(${KM} * 100 + 0.5) / 100`;
const ORDER = {
  // `rating` is text with 2 decimals from 1.00 to 5.00: its text order is its numeric order.
  rating: `rating DESC NULLS LAST, sessions DESC, p.id`,
  distance: `km ASC NULLS LAST, p.id`,
  price: `s.min_price ASC, p.id`,
} as const;

/**
 * Coaches with at least one matching approved service (`MATCHING`), filtered and ordered in one statement:
 * one of them at most `maxPrice` (the prices shown and sorted by are theirs), a default address within
 * `radiusKm` of the place. `serviceTypes` lists all the coach's approved services' types.
 */
const searchSql = (sort: keyof typeof ORDER) => `
SELECT p.id, p.profile, s.min_price, s.max_price, s.currency, s.types,
  (SELECT ${AVERAGE_RATING} FROM reviews WHERE coach_id = p.id) AS rating,
  (SELECT count(*)::int FROM completed_sessions WHERE coach_id = p.id) AS sessions,
  CASE WHEN $5::float8 IS NULL OR a.lat IS NULL THEN NULL ELSE ${KM} END AS km
FROM user_profiles p
CROSS JOIN LATERAL (
  SELECT count(*) AS n, min((sv.fields->>'price')::float8) AS min_price,
    max((sv.fields->>'price')::float8) AS max_price,
    (array_agg(sv.fields->>'priceCurrency' ORDER BY (sv.fields->>'price')::float8, sv.created_at DESC, sv.id))[1]
      AS currency,
    ARRAY(SELECT DISTINCT st FROM services sv, jsonb_array_elements_text(sv.fields->'serviceTypes') st
          WHERE sv.coach_id = p.id AND sv.status = 'approved' ORDER BY st)
      AS types
  FROM ${MATCHING}
) s
LEFT JOIN addresses a ON a.user_id = p.id AND a.is_default
WHERE p.type = 'coach' AND s.n > 0
  AND ($3::float8 IS NULL OR s.min_price <= $3)
  AND ($4::float8 IS NULL OR (a.lat IS NOT NULL AND ${SHOWN_KM} <= $4))
ORDER BY ${ORDER[sort]}
LIMIT $7 OFFSET $8`;

interface Row {
  id: string;
  profile: UserProfile;
  min_price: number;
  max_price: number;
  currency: string;
  types: string[];
  rating: string | null;
  sessions: number;
  km: number | null;
}

export function coachSearchQueries(deps: AppDeps): Router {
  const router = new Router();
  // Added: clients find coaches. Public; a token only gives the place distances are measured from.
  router.get('/api/v1/coaches', async (ctx) => {
    const query = decode(CoachSearchQuery, ctx.query, 'query');
    const { limit = 50, offset = 0, radiusKm, maxPrice, sort = 'rating' } = query;
    if ((query.lat === undefined) !== (query.lng === undefined))
      throw new ValidationError([
        {
          loc: ['query', query.lat === undefined ? 'lat' : 'lng'],
          msg: 'lat and lng go together',
          type: 'missing',
        },
      ]);
    const caller = optionalPrincipal(ctx);
    let place: Place | null =
      query.lat !== undefined && query.lng !== undefined ? { lat: query.lat, lng: query.lng } : null;
    if (!place && caller) {
      const own = await deps.db.query<Place>(
        'SELECT lat, lng FROM addresses WHERE user_id = $1 AND is_default',
        [caller.userId],
      );
      place = own.rows[0] ?? null;
    }
    if (!place && (radiusKm !== undefined || sort === 'distance'))
      throw new ValidationError([
        {
          loc: ['query', radiusKm !== undefined ? 'radiusKm' : 'sort'],
          msg: 'a distance needs a place: give lat and lng, or a token of a user with a default address',
          type: 'missing',
        },
      ]);
    const text = query.q?.trim() ? containsPattern(query.q.trim().normalize('NFC')) : null;
    const serviceType = query.serviceType?.trim().normalize('NFC') || null;
    const res = await deps.db.query<Row>(searchSql(sort), [
      text,
      serviceType,
      maxPrice ?? null,
      radiusKm ?? null,
      place?.lat ?? null,
      place?.lng ?? null,
      limit,
      offset,
    ]);
    ctx.body = res.rows.map((r): CoachCard => ({
      id: r.id,
      firstName: r.profile.firstName,
      lastName: r.profile.lastName,
      avatarUrl: r.profile.avatarUrl,
      languages: Object.fromEntries(r.profile.languages.map((l) => [l, true as const])),
      experience: r.profile.experience,
      verified: r.profile.verified,
      rating: ratingOf(r.rating),
      sessionCount: r.sessions,
      // Sorted as the profile (13) sorts them, not in the database's collation (which may order case apart).
      serviceTypes: [...r.types].sort(),
      minPrice: r.min_price,
      maxPrice: r.max_price,
      priceCurrency: r.currency,
      // As the profile (13) shows it: great-circle km to 2 decimals (`SHOWN_KM`, which the radius is held to).
      distance: r.km === null ? null : Math.round(r.km * 100) / 100,
    }));
  });
  return router;
}
