import Router from '@koa/router';
import type { Queryable } from '../src/db/database';
import type { AppDeps } from '../src/deps';
import { currentPrincipal, requireRole } from '../src/http/auth';
import { notFound } from '../src/http/errors';
import { toFileBase, type FileBase } from '../src/resources/fileBase';
import { FILES_PATH, byteRange, isBlobKey } from '../src/storage/types';

/** A user's videos in the user's order. */
export async function listVideos(db: Queryable, userId: string): Promise<FileBase[]> {
  const res = await db.query<{
    videoId: string;
    title: string;
    description: string;
    contentType: string;
    originFilename: string;
    key: string;
    previewKey: string | null;
    filesize: string | number;
    status: 'approved';
  }>(
    `SELECT id AS "videoId", title, description, content_type AS "contentType", origin_filename AS "originFilename",
       blob_key AS key, preview_key AS "previewKey", filesize, status
     FROM videos WHERE user_id = $1 ORDER BY position, created_at`,
    [userId],
  );
  return res.rows.map((r) => toFileBase({ ...r, filesize: Number(r.filesize) }));
}

export function videoQueries(deps: AppDeps): Router {
  const router = new Router();
  // 2. The caller's own videos, in the caller's order.
  router.get('/api/v1/storage/videos', requireRole('coach'), async (ctx) => {
    ctx.body = await listVideos(deps.db, currentPrincipal(ctx).userId);
  });

  // The stored files, for every adapter (S3 objects are streamed through the app; the bucket stays private).
  // Public: the URLs appear on public coach profiles; keys are random and unguessable.
  // One byte range on request (206): browsers play and seek videos by ranges, and Safari plays none without.
  router.get(`${FILES_PATH}/:key`, async (ctx) => {
    const key = ctx.params.key ?? '';
    const asked: { verdict: ReturnType<typeof byteRange> } = { verdict: 'whole' };
    const pick = (size: number) => {
      // If-Range (RFC 9110 13.1.5): a Range is honoured only while the validator sent matches the file's.
      // No ETag or Last-Modified is ever given for a file, so none matches: the whole file, not a part of
      // a file the client may take for another. Ranges are defined for GET only (14.2): HEAD answers the
      // whole file's head.
      asked.verdict =
        ctx.method !== 'GET' || ctx.get('if-range')
          ? 'whole'
          : byteRange(ctx.get('range') || undefined, size);
      return typeof asked.verdict === 'object' ? asked.verdict : null;
    };
    const blob = isBlobKey(key) ? await deps.blobs.get(key, pick) : null;
    if (!blob) throw notFound('file_not_found', 'no such file');
    ctx.set('Accept-Ranges', 'bytes');
    if (asked.verdict === 'unsatisfiable') {
      blob.stream.destroy();
      ctx.set('Content-Range', `bytes */${blob.size}`);
      ctx.status = 416;
      ctx.body = {
        error: 'range_not_satisfiable',
        message: `the file has ${blob.size} bytes`,
        code: 416,
      };
      return;
    }
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.set('X-Content-Type-Options', 'nosniff');
    // Uploaded content is never run as a page of ours (an SVG "image" may carry a script). Not a PDF (a
    // certificate): browsers show it in their own viewer, which a sandbox stops (Safari shows an empty page,
    // Chrome "blocked"); its type is exactly application/pdf and nosniff holds, so it is never read as a page.
    if (blob.contentType !== 'application/pdf')
      ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
    ctx.type = blob.contentType;
    if (blob.range) {
      ctx.status = 206;
      ctx.set('Content-Range', `bytes ${blob.range.start}-${blob.range.end}/${blob.size}`);
      ctx.length = blob.range.end - blob.range.start + 1;
    } else ctx.length = blob.size;
    ctx.body = blob.stream;
  });
  return router;
}
