import Router from '@koa/router';
import * as t from 'io-ts';
import type { GalleryItem, GalleryKind } from '../commands/users/events';
import type { Queryable } from '../src/db/database';
import type { AppDeps } from '../src/deps';
import { authenticated, currentPrincipal } from '../src/http/auth';
import { decode } from '../src/http/validation';
import { toProfileMediaOut } from '../src/resources/fileBase';

/** A user's profile images and certificates (one kind, or both), in upload order. */
export async function listProfileMedia(
  db: Queryable,
  userId: string,
  kind?: GalleryKind,
): Promise<GalleryItem[]> {
  const res = await db.query<Omit<GalleryItem, 'filesize' | 'addedAt'> & { filesize: string; addedAt: Date }>(
    `SELECT id AS "mediaId", kind, blob_key AS key, preview_key AS "previewKey", title, description,
       content_type AS "contentType", origin_filename AS "originFilename", filesize, created_at AS "addedAt"
     FROM profile_media WHERE user_id = $1 AND ($2::text IS NULL OR kind = $2) ORDER BY seq`,
    [userId, kind ?? null],
  );
  return res.rows.map((r) => ({
    ...r,
    filesize: Number(r.filesize),
    addedAt: new Date(r.addedAt).toISOString(),
  }));
}

export const KindQuery = t.partial({ kind: t.keyof({ image: null, certificate: null }) });

export function profileMediaQueries(deps: AppDeps): Router {
  const router = new Router();
  // Added: the caller's profile images and certificates (`kind` filters), in upload order.
  router.get('/api/v1/storage/profile/media', authenticated(), async (ctx) => {
    const { kind } = decode(KindQuery, { kind: ctx.query.kind }, 'query');
    const items = await listProfileMedia(deps.db, currentPrincipal(ctx).userId, kind);
    ctx.body = items.map(toProfileMediaOut);
  });
  return router;
}
