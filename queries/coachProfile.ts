import Router from '@koa/router';
import * as t from 'io-ts';
import type { Queryable } from '../src/db/database';
import type { AppDeps } from '../src/deps';
import { notFound } from '../src/http/errors';
import { Uuid, decode } from '../src/http/validation';
import { optionalPrincipal } from './caller';
import { greatCircleKm } from '../commands/calendar/travel';
import { coachRating } from './reviews';
import { findCoach } from '../src/readModels/users';
import type { PublicCoachProfileOut } from '../src/resources/coachProfile';
import type { ServiceOut } from '../src/resources/service';
import { coachServices } from './services';
import { listVideos } from './videos';
import { listProfileMedia } from './profileMedia';
import { galleryFileBase } from '../src/resources/fileBase';

async function defaultAddress(db: Queryable, userId: string): Promise<{ lat: number; lng: number } | null> {
  const res = await db.query<{ lat: number; lng: number }>(
    'SELECT lat, lng FROM addresses WHERE user_id = $1 AND is_default',
    [userId],
  );
  return res.rows[0] ?? null;
}

async function sessionCount(db: Queryable, coachId: string): Promise<number> {
  const res = await db.query<{ n: string }>(
    'SELECT count(*)::text AS n FROM completed_sessions WHERE coach_id = $1',
    [coachId],
  );
  return Number(res.rows[0]?.n ?? 0);
}

export function coachProfileQueries(deps: AppDeps): Router {
  const router = new Router();
  // 13. Public coach profile; a token is optional and only serves `distance`.
  router.get('/api/v1/coach/:coach_id/profile', async (ctx) => {
    const coachId = decode(t.type({ coach_id: Uuid }), ctx.params, 'path').coach_id.toLowerCase();
    const caller = optionalPrincipal(ctx);
    const coach = await findCoach(deps.db, coachId);
    if (!coach) throw notFound('coach_not_found', 'no such coach');
    const [services, rating, count, coachPlace, callerPlace, videos, gallery] = await Promise.all([
      coachServices(deps.db, coachId, false),
      coachRating(deps.db, coachId),
      sessionCount(deps.db, coachId),
      defaultAddress(deps.db, coachId),
      caller ? defaultAddress(deps.db, caller.userId) : Promise.resolve(null),
      listVideos(deps.db, coachId),
      listProfileMedia(deps.db, coachId),
    ]);
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
      distance:
        coachPlace && callerPlace ? Math.round(greatCircleKm(callerPlace, coachPlace) * 100) / 100 : null,
      experience: coach.experience,
      price: cheapest?.price ?? null,
      minPrice: prices.length ? Math.min(...prices) : null,
      maxPrice: prices.length ? Math.max(...prices) : null,
      priceCurrency: cheapest?.priceCurrency ?? null,
      sessionCount: count,
      verified: coach.verified,
    };
    ctx.body = body;
  });
  return router;
}
