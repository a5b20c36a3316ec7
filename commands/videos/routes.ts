import fs from 'node:fs';
import Router from '@koa/router';
import * as t from 'io-ts';
import type { Context } from 'koa';
import type { AppDeps } from '../../src/deps';
import { currentPrincipal, requireRole } from '../../src/http/auth';
import { runCommand } from '../../src/http/command';
import { HttpError, ValidationError } from '../../src/http/errors';
import {
  idempotentUpload,
  multipartRoute,
  readMultipart,
  uploadTmpDir,
  type UploadedFile,
} from '../../src/http/multipart';
import { Uuid, boundedString, decode, refine, strict } from '../../src/http/validation';
import { describeSchema } from '../../src/http/openapi/jsonSchema';
import { newBlobKey } from '../../src/storage/types';
import { toFileBase } from '../../src/resources/fileBase';
import { videoLibrary, type VideoCommand, type VideoLibrary } from './decider';
import { videoStream, type VideoEvent } from './events';

/** Longest title, as `VideoFields` and the profile media's fields take it (characters: code points). */
const MAX_TITLE = 200;

export const VideoFields = strict(
  {},
  { title: boundedString(MAX_TITLE), description: boundedString(5000) },
  'VideoFields',
);
const VideoIdPath = t.type({ video_id: Uuid });

/**
 * The title a file gets when none is sent: its name, cut to a title's length (a longer default could not
 * be sent back unchanged in a replace) without splitting a character.
 */
/**
 * The title of a new file: the one sent, else its name (`defaultTitle`). A title of only blanks is none: an
 * HTML form sends its empty title box as `title=`, and its user meant no title, not an empty one.
 */
export const titleOrDefault = (title: string | undefined, filename: string) =>
  title !== undefined && title.trim() !== '' ? title : defaultTitle(filename);

export function defaultTitle(filename: string): string {
  // Characters as `boundedString` counts them (code points): a name of 150 emoji is kept whole.
  let title = '';
  let count = 0;
  for (const ch of filename) {
    if (++count > MAX_TITLE) break;
    title += ch;
  }
  return title;
}

export const ReorderBody = strict(
  {
    order: describeSchema(
      refine(
        t.array(t.string),
        (a) => a.length <= 1000,
        'order',
        'Input should be a list of your video ids, at most 1000',
      ),
      {
        type: 'array',
        items: { type: 'string', format: 'uuid' },
        maxItems: 1000,
        description: "The coach's video ids in the new order: each of them once",
      },
    ),
  },
  {},
  'VideosOrder',
);

const VIDEO = ['video/'];
const IMAGE = ['image/'];

/** A file stored as a blob: its key and what the record says about it. */
export interface StoredBlob {
  key: string;
  file: UploadedFile;
}

/**
 * Refusals answer 4xx before anything is appended (a domain refusal, a conflict after the retries); any
 * other failure of a command may come after its events were stored (an append whose answer was lost).
 */
const refused = (err: unknown) =>
  err instanceof ValidationError || (err instanceof HttpError && err.status < 500);

/**
 * Blobs first, then the event: every new blob is stored before the command is decided, and deleted again
 * when storing them fails or the command is refused, so no blob stays behind that no event names. When
 * the command's outcome is unknown (the event store did not answer), they are kept: the event may name
 * them, and a URL that answers 404 is worse than a file nobody names.
 * `live`, given the command's result, names the blob keys its state still holds: a new blob it does not
 * hold is deleted again. That is a keyed request run again after a crash (its ids, so its keys, are the
 * first run's) whose upload was deleted or replaced since: the file its owner removed must not come back.
 */
export async function withStoredBlobs<T>(
  deps: AppDeps,
  blobs: StoredBlob[],
  command: () => Promise<T>,
  live?: (result: T) => Iterable<string | null>,
): Promise<T> {
  const stored: string[] = [];
  const removeStored = () =>
    Promise.all(
      stored.map((k) =>
        deps.blobs
          .delete(k)
          .catch((err: unknown) =>
            deps.log.error('could not delete an unused blob', { key: k, err: String(err) }),
          ),
      ),
    );
  try {
    for (const b of blobs) {
      await deps.blobs.put(b.key, fs.createReadStream(b.file.path), b.file.mimetype, b.file.size);
      stored.push(b.key);
    }
  } catch (err) {
    await removeStored();
    throw err;
  }
  let result: T;
  try {
    result = await command();
  } catch (err) {
    if (refused(err)) await removeStored();
    else if (stored.length)
      deps.log.warn('kept the blobs of a command whose outcome is unknown', {
        keys: stored,
        err: String(err),
      });
    throw err;
  }
  if (live) {
    const held = new Set(live(result));
    await deleteBlobs(
      deps,
      stored.filter((k) => !held.has(k)),
    );
  }
  return result;
}

/** After the event is stored: the blobs it made unreferenced. A failure here only leaks a file (logged). */
export async function deleteBlobs(deps: AppDeps, keys: string[]): Promise<void> {
  await Promise.all(
    keys.map((key) =>
      deps.blobs
        .delete(key)
        .catch((err: unknown) =>
          deps.log.error('could not delete a replaced blob; it is left behind', { key, err: String(err) }),
        ),
    ),
  );
}

/**
 * Every blob key a deleted video ever had (its upload's and each replace's), or none while it is not
 * deleted. Once the video is gone none of them is anyone's, yet some may still be stored: a delete whose
 * answer was lost (503, a crash) before its files were removed, or a replace's old files likewise. Read
 * from the log on a delete and on its repeat, which then remove them; a failing read only leaves them.
 */
async function keysOfDeletedVideo(deps: AppDeps, userId: string, videoId: string): Promise<string[]> {
  let recorded;
  try {
    ({ events: recorded } = await deps.store.readStream(videoStream(userId)));
  } catch (err) {
    deps.log.warn('could not read the files of a deleted video', { videoId, err: String(err) });
    return [];
  }
  const keys = new Set<string>();
  let deleted = false;
  for (const r of recorded) {
    const e = { type: r.type, data: r.data } as VideoEvent;
    if (e.type === 'VideosReordered' || e.data.videoId !== videoId) continue;
    if (e.type === 'VideoDeleted') deleted = true;
    if (e.type === 'VideoReplaced') e.data.replacedKeys.forEach((k) => keys.add(k));
    keys.add(e.data.key);
    if (e.data.previewKey) keys.add(e.data.previewKey);
  }
  return deleted ? [...keys] : [];
}

export function videoCommands(deps: AppDeps): Router {
  const router = new Router();
  const tmpDir = uploadTmpDir(deps.config.dataDir);
  const maxBytes = deps.config.maxUploadBytes;
  const now = () => deps.clock().toISOString();
  const run = (ctx: Context, userId: string, command: VideoCommand) =>
    runCommand(deps, ctx, videoStream(userId), videoLibrary, command, ['videos']);
  const answer = (state: VideoLibrary, videoId: string) => {
    const v = state.videos.find((x) => x.videoId === videoId);
    if (!v) throw new Error(`video ${videoId} missing from the state just written`);
    return toFileBase(v);
  };
  const replacedBy = (events: VideoEvent[]) =>
    events.flatMap((e) =>
      e.type === 'VideoReplaced'
        ? e.data.replacedKeys
        : e.type === 'VideoDeleted'
          ? [e.data.key, ...(e.data.previewKey ? [e.data.previewKey] : [])]
          : [],
    );

  // 1. Upload a video (and its preview image): answers the FileBase.
  router.post('/api/v1/storage/video', requireRole('coach'), multipartRoute({ keyed: true }), async (ctx) => {
    const { userId } = currentPrincipal(ctx);
    const form = await readMultipart(ctx, {
      tmpDir,
      maxBytes,
      files: [
        { name: 'file', accept: VIDEO, required: true },
        { name: 'preview', accept: IMAGE },
      ],
    });
    try {
      await idempotentUpload(deps, ctx, form, async () => {
        const fields = decode(VideoFields, form.fields, 'body');
        const file = form.files.file!;
        const preview = form.files.preview;
        const videoId = deps.newId();
        const key = newBlobKey('video', deps.newId(), file.originalname);
        const previewKey = preview ? newBlobKey('preview', deps.newId(), preview.originalname) : null;
        const blobs = [{ key, file }, ...(preview && previewKey ? [{ key: previewKey, file: preview }] : [])];
        const { state, events } = await withStoredBlobs(
          deps,
          blobs,
          () =>
            run(ctx, userId, {
              type: 'UploadVideo',
              userId,
              video: {
                videoId,
                title: titleOrDefault(fields.title, file.originalname),
                description: fields.description ?? '',
                contentType: file.mimetype,
                originFilename: file.originalname,
                key,
                previewKey,
                filesize: file.size,
              },
              now: now(),
            }),
          (done) => done.state.videos.flatMap((v) => [v.key, v.previewKey]),
        );
        // A keyed request run again after a crash finds its upload in the log, maybe deleted since: it
        // answers the video as uploaded (the blobs it stored again were nobody's: deleted above).
        const uploaded = events.find((e) => e.type === 'VideoUploaded');
        if (uploaded && !state.videos.some((v) => v.videoId === videoId)) {
          const { userId: _u, at: _a, ...video } = uploaded.data;
          ctx.body = toFileBase(video);
        } else ctx.body = answer(state, videoId);
      });
    } finally {
      await form.cleanup();
    }
  });

  // 3. Reorder: the body must list each of the caller's videos exactly once; answers the new list.
  router.put('/api/v1/storage/videos/order', requireRole('coach'), async (ctx) => {
    const { userId } = currentPrincipal(ctx);
    const { order } = decode(ReorderBody, ctx.request.body, 'body');
    const normalised = order.map((id) => id.toLowerCase());
    const { state } = await run(ctx, userId, {
      type: 'ReorderVideos',
      userId,
      order: normalised,
      now: now(),
    });
    ctx.body = state.videos.map(toFileBase);
  });

  // 4. Replace the file, the preview, the title or the description (all optional): answers the FileBase.
  router.put('/api/v1/storage/video/:video_id', requireRole('coach'), multipartRoute(), async (ctx) => {
    const { userId } = currentPrincipal(ctx);
    const videoId = decode(VideoIdPath, ctx.params, 'path').video_id.toLowerCase();
    const form = await readMultipart(ctx, {
      tmpDir,
      maxBytes,
      files: [
        { name: 'file', accept: VIDEO },
        { name: 'preview', accept: IMAGE },
      ],
    });
    try {
      const { title, ...fields } = decode(VideoFields, form.fields, 'body');
      const { file, preview } = form.files;
      const key = file ? newBlobKey('video', deps.newId(), file.originalname) : null;
      const previewKey = preview ? newBlobKey('preview', deps.newId(), preview.originalname) : null;
      const blobs = [
        ...(file && key ? [{ key, file }] : []),
        ...(preview && previewKey ? [{ key: previewKey, file: preview }] : []),
      ];
      const { state, events } = await withStoredBlobs(deps, blobs, () =>
        run(ctx, userId, {
          type: 'ReplaceVideo',
          userId,
          videoId,
          changes: {
            ...fields,
            // A title of only blanks (an HTML form's empty box) changes nothing, as on upload it is no title.
            ...(title !== undefined && title.trim() !== '' ? { title } : {}),
            ...(file && key
              ? {
                  file: {
                    key,
                    contentType: file.mimetype,
                    originFilename: file.originalname,
                    filesize: file.size,
                  },
                }
              : {}),
            ...(previewKey ? { previewKey } : {}),
          },
          now: now(),
        }),
      );
      // Old blobs go only after the new ones are stored and the event names them.
      await deleteBlobs(deps, replacedBy(events));
      ctx.body = answer(state, videoId);
    } finally {
      await form.cleanup();
    }
  });

  // 5. Delete: answers {id, status: 'deleted'}; the blobs are removed after the event is stored. A repeat
  // (the first answered 503 or not at all) is 404 like any video the caller does not have, and removes
  // the files the first may have left.
  router.delete('/api/v1/storage/video/:video_id', requireRole('coach'), async (ctx) => {
    const { userId } = currentPrincipal(ctx);
    const videoId = decode(VideoIdPath, ctx.params, 'path').video_id.toLowerCase();
    let events: VideoEvent[];
    try {
      ({ events } = await run(ctx, userId, { type: 'DeleteVideo', userId, videoId, now: now() }));
    } catch (err) {
      if (err instanceof HttpError && err.error === 'video_not_found')
        await deleteBlobs(deps, await keysOfDeletedVideo(deps, userId, videoId));
      throw err;
    }
    const keys = new Set([...replacedBy(events), ...(await keysOfDeletedVideo(deps, userId, videoId))]);
    await deleteBlobs(deps, [...keys]);
    ctx.body = { id: videoId, status: 'deleted' };
  });
  return router;
}
