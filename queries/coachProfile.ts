import Router from '@koa/router';
import * as t from 'io-ts';
import type { AppDeps } from '../src/deps';
import { notFound } from '../src/http/errors';
import { Uuid, decode } from '../src/http/validation';
import { optionalPrincipal } from './caller';
import { greatCircleKm } from '../commands/calendar/travel';
import { AVERAGE_RATING, ratingOf } from './reviews';
import type { PublicCoachProfileOut } from '../src/resources/coachProfile';
import { toServiceOut, type ServiceOut } from '../src/resources/service';
import { galleryFileBase, toFileBase } from '../src/resources/fileBase';
import type { GalleryItem, UserProfile } from '../commands/users/events';
import type { ServiceFields, ServiceStatus } from '../commands/services/events';
import type { VideoRecord } from '../commands/videos/events';
import { ReadCache, fillHole, holedJson, type HoledJson } from '../src/readModels/readCache';
import { EVERYTHING, ensureScopes, readTokens, userScope } from '../src/readModels/readVersions';

type Place = { lat: number; lng: number } | null;

const CoachPath = t.type({ coach_id: Uuid });

/**
 * Everything endpoint 13 shows, in one statement: the profile, its approved services (newest first), the
 * average rating, completed sessions, the coach's and the caller's default places, the videos in the coach's
 * order, and its profile images and certificates. One round trip instead of eight.
 */
const PROFILE = `
SELECT p.profile,
  (SELECT COALESCE(json_agg(json_build_object('id', s.id, 'status', s.status, 'fields', s.fields)
     ORDER BY s.created_at DESC, s.id), '[]'::json)
     FROM services s WHERE s.coach_id = p.id AND s.status = 'approved') AS services,
  (SELECT ${AVERAGE_RATING} FROM reviews WHERE coach_id = p.id) AS rating,
  (SELECT count(*)::int FROM completed_sessions WHERE coach_id = p.id) AS sessions,
  (SELECT json_build_object('lat', lat, 'lng', lng) FROM addresses
    WHERE user_id = p.id AND is_default LIMIT 1) AS coach_place,
  (SELECT json_build_object('lat', lat, 'lng', lng) FROM addresses
    WHERE user_id = $2::uuid AND is_default LIMIT 1) AS caller_place,
  (SELECT COALESCE(json_agg(json_build_object('videoId', v.id, 'title', v.title, 'description', v.description,
       'contentType', v.content_type, 'originFilename', v.origin_filename, 'key', v.blob_key,
       'previewKey', v.preview_key, 'filesize', v.filesize, 'status', v.status)
     ORDER BY v.position, v.created_at), '[]'::json)
     FROM videos v WHERE v.user_id = p.id) AS videos,
  (SELECT COALESCE(json_agg(json_build_object('mediaId', m.id, 'kind', m.kind, 'key', m.blob_key,
       'previewKey', m.preview_key, 'title', m.title, 'description', m.description,
       'contentType', m.content_type, 'originFilename', m.origin_filename, 'filesize', m.filesize,
       'addedAt', m.created_at) ORDER BY m.seq), '[]'::json)
     FROM profile_media m WHERE m.user_id = p.id) AS gallery
FROM user_profiles p WHERE p.id = $1`;

/** Great-circle km between the caller's and the coach's default places, to 2 decimals; null without both. */
const distanceOf = (coachPlace: Place, callerPlace: Place) =>
  coachPlace && callerPlace ? Math.round(greatCircleKm(callerPlace, coachPlace) * 100) / 100 : null;

interface ProfileRow {
  profile: UserProfile;
  services: { id: string; status: ServiceStatus; fields: ServiceFields }[];
  rating: string | null;
  sessions: number;
  coach_place: Place;
  caller_place: Place;
  videos: VideoRecord[];
  gallery: GalleryItem[];
}

/** What endpoint 13 caches per coach: the answer as text with a hole for `distance`, and the coach's place. */
interface CachedProfile {
  answer: HoledJson;
  coachPlace: Place;
}

/**
 * Endpoint 13 answers from a per-process cache checked against `read_versions` (src/readModels/readVersions.ts)
 * with one indexed read per request. Everything the answer is computed from, and what keeps each fresh
 * (every one bumps `user:<coach>` in the statement that changes it):
 * - the profile (user_profiles): projections/userProfiles.ts (profile changes, media URL, verified);
 * - approved services, their prices and types (services): projections/services.ts;
 * - the rating (reviews): projections/reviews.ts; sessionCount (completed_sessions): projections/completedSessions.ts;
 * - the coach's default place (addresses): projections/addresses.ts;
 * - videos: projections/videos.ts; images and certificates (profile_media): projections/profileMedia.ts;
 * - the caller's default place (`distance`): projections/addresses.ts bumps `user:<caller>`, cached per caller;
 * - a rebuild that swaps read models in bumps `*`. Nothing here depends on the clock.
 */
const PROFILE_BOUNDS = { maxEntries: 5_000, maxBytes: 8 * 2 ** 20 };
const PLACE_BOUNDS = { maxEntries: 10_000, maxBytes: 2 * 2 ** 20 };

export function coachProfileQueries(deps: AppDeps): Router {
  const router = new Router();
  const answers = new ReadCache<CachedProfile>(PROFILE_BOUNDS);
  const places = new ReadCache<Place>(PLACE_BOUNDS);
  deps.metrics.watchReadCache('coach_profile', () => answers.stats());
  deps.metrics.watchReadCache('coach_profile_places', () => places.stats());
  // 13. Public coach profile; a token is optional and only serves `distance`.
  router.get('/api/v1/coach/:coach_id/profile', async (ctx) => {
    const coachId = decode(CoachPath, ctx.params, 'path').coach_id.toLowerCase();
    const caller = optionalPrincipal(ctx);
    const coachScope = userScope(coachId);
    const callerScope = caller ? userScope(caller.userId) : null;
    // One indexed read: the versions of everything, of the coach and of the caller.
    const tokens = await readTokens(deps.db, [EVERYTHING, coachScope, ...(callerScope ? [callerScope] : [])]);
    const epoch = tokens.get(EVERYTHING);
    const tokenOf = (scope: string) => {
      const v = tokens.get(scope);
      return epoch === undefined || v === undefined ? undefined : `${epoch}|${v}`;
    };
    const now = Date.now(); // nothing shown depends on time: entries never expire by it
    const hit = answers.get(coachId, tokenOf(coachScope), now);
    const placeHit = caller && callerScope ? places.get(caller.userId, tokenOf(callerScope), now) : null;
    if (hit && placeHit !== undefined) {
      ctx.type = 'application/json';
      ctx.body = fillHole(hit.answer, JSON.stringify(distanceOf(hit.coachPlace, placeHit)));
      return;
    }
    const row = (await deps.db.query<ProfileRow>(PROFILE, [coachId, caller?.userId ?? null])).rows[0];
    const coach = row?.profile.type === 'coach' ? row.profile : null;
    if (!row || !coach) throw notFound('coach_not_found', 'no such coach');
    // Version rows for the scopes that have none, so the next read can be served from the cache: only once
    // the coach is known to exist, or anyone could add a row per made-up id (the table is never pruned).
    // This answer is not cached (a scope without a version has no token); the next one is.
    const unversioned = [EVERYTHING, coachScope, ...(callerScope ? [callerScope] : [])].filter(
      (s) => !tokens.has(s),
    );
    if (unversioned.length) await ensureScopes(deps.db, unversioned);
    const callerPlace = caller ? row.caller_place : null;
    if (caller && callerScope && placeHit === undefined) {
      const token = tokenOf(callerScope);
      if (token !== undefined) places.set(caller.userId, token, callerPlace, 40, now, Infinity);
    }
    if (hit) {
      ctx.type = 'application/json';
      ctx.body = fillHole(hit.answer, JSON.stringify(distanceOf(hit.coachPlace, callerPlace)));
      return;
    }
    const services = row.services.map((x) => toServiceOut({ ...x.fields, id: x.id, status: x.status }));
    const rating = ratingOf(row.rating);
    const count = row.sessions;
    const coachPlace = row.coach_place;
    const videos = row.videos.map((v) => toFileBase({ ...v, filesize: Number(v.filesize) }));
    const gallery = row.gallery.map((g) => ({
      ...g,
      filesize: Number(g.filesize),
      addedAt: new Date(g.addedAt).toISOString(),
    }));
    const cheapest = services.reduce<ServiceOut | null>((m, s) => (!m || s.price < m.price ? s : m), null);
    const prices = services.map((s) => s.price);
    const body: PublicCoachProfileOut = {
      firstName: coach.firstName,
      lastName: coach.lastName,
      phone: coach.phone,
      whatsapp: coach.whatsapp,
      gender: coach.gender,
      description: coach.description,
      // The interface document wants an object: each language code the coach speaks maps to true.
      languages: Object.fromEntries(coach.languages.map((l) => [l, true as const])),
      avatarUrl: coach.avatarUrl,
      mediaType: coach.mediaType,
      mediaUrl: coach.mediaUrl,
      mediaPreviewUrl: coach.mediaPreviewUrl,
      rating,
      serviceTypes: [...new Set(services.flatMap((s) => s.serviceTypes))].sort(),
      services,
      // Pictures and certificates the coach uploaded (endpoint 14 with kind image / certificate), as FileBase.
      images: gallery.filter((i) => i.kind === 'image').map(galleryFileBase),
      videos, // the coach's preview videos (FileBase), in the coach's order
      certificates: gallery.filter((i) => i.kind === 'certificate').map(galleryFileBase),
      distance: null, // the caller's: filled in below
      experience: coach.experience,
      price: cheapest?.price ?? null,
      minPrice: prices.length ? Math.min(...prices) : null,
      maxPrice: prices.length ? Math.max(...prices) : null,
      priceCurrency: cheapest?.priceCurrency ?? null,
      sessionCount: count,
      verified: coach.verified,
    };
    const answer = holedJson(body as unknown as Record<string, unknown>, 'distance', 'null');
    const token = tokenOf(coachScope);
    if (token !== undefined)
      answers.set(coachId, token, { answer, coachPlace }, answer.bytes.length, now, Infinity);
    ctx.type = 'application/json';
    ctx.body = fillHole(answer, JSON.stringify(distanceOf(coachPlace, callerPlace)));
  });
  return router;
}
