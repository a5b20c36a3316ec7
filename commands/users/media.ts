import Router from '@koa/router';
import * as t from 'io-ts';
import type { AppDeps } from '../../src/deps';
import { authenticated, currentPrincipal } from '../../src/http/auth';
import { runCommand } from '../../src/http/command';
import { HttpError, ValidationError } from '../../src/http/errors';
import {
  idempotentUpload,
  multipartRoute,
  readMultipart,
  uploadTmpDir,
  type UploadedFile,
} from '../../src/http/multipart';
import { Uuid, boundedString, decode, strict } from '../../src/http/validation';
import { newBlobKey } from '../../src/storage/types';
import { userPaymentTotal } from '../../src/readModels/payments';
import { userSessionCount } from '../../src/readModels/users';
import { toUserProfileOut } from '../../src/resources/userProfile';
import { deleteBlobs, titleOrDefault, withStoredBlobs } from '../videos/routes';
import { userProfile, type UserCommand } from './decider';
import { profileStream, type GalleryKind, type UserEvent } from './events';

export const MediaFields = strict(
  {},
  {
    kind: t.keyof({ media: null, image: null, certificate: null }),
    title: boundedString(200),
    description: boundedString(5000),
  },
  'ProfileMediaFields',
);
const MediaIdPath = t.type({ media_id: Uuid });

/** The types each kind takes (the part's declared type, as for videos). */
const ACCEPTS: Record<'media' | GalleryKind, string[]> = {
  media: ['image/', 'video/'],
  image: ['image/'],
  certificate: ['image/', 'application/pdf'],
};
const accepts = (accept: string[], type: string) =>
  accept.some((a) => (a.endsWith('/') ? type.startsWith(a) : type === a));

function checkKind(
  kind: 'media' | GalleryKind,
  file: UploadedFile,
  fields: { title?: string; description?: string },
) {
  if (kind === 'media') {
    const extra = (['title', 'description'] as const).filter((k) => fields[k] !== undefined);
    if (extra.length)
      throw new ValidationError(
        extra.map((k) => ({
          loc: ['body', k],
          msg: 'Only images and certificates (kind image or certificate) have a title and description',
          type: 'extra_forbidden',
        })),
      );
  }
  const type = file.mimetype.toLowerCase();
  if (!accepts(ACCEPTS[kind], type))
    throw new HttpError(
      415,
      'unsupported_media_type',
      `file of kind ${kind} must be ${ACCEPTS[kind].map((a) => (a.endsWith('/') ? `${a}*` : a)).join(' or ')}, got ${file.mimetype}`,
    );
}

/**
 * The blob keys of a picture or certificate the user removed, or none while it is not removed: a removal
 * whose answer was lost (503, a crash) may have left them stored, and its repeat removes them.
 */
async function keysOfRemovedItem(deps: AppDeps, userId: string, mediaId: string): Promise<string[]> {
  try {
    const { events } = await deps.store.readStream(profileStream(userId));
    return events.flatMap((r) => {
      const e = { type: r.type, data: r.data } as UserEvent;
      return e.type === 'ProfileMediaRemoved' && e.data.mediaId === mediaId ? e.data.removedKeys : [];
    });
  } catch (err) {
    deps.log.warn('could not read the files of a removed picture', { mediaId, err: String(err) });
    return [];
  }
}

export function profileMediaCommands(deps: AppDeps): Router {
  const router = new Router();

  /**
   * UserProfileOut after a change: the profile from the write model, figures from the read models. Safe:
   * nothing is decided on those figures (the change is stored already); a lagging read model only makes
   * the reply's totals a moment old, as they would be on a GET.
   */
  const profileOut = async (userId: string, state: Parameters<typeof toUserProfileOut>[1]) =>
    toUserProfileOut(userId, state, {
      sessionCount: await userSessionCount(deps.db, userId),
      ...(await userPaymentTotal(deps.db, userId)),
    });

  // 14. Profile media of the caller: `kind` media (default: the one picture or video of the profile, which
  // an upload replaces), image or certificate (added to the profile's pictures or certificates). Answers
  // UserProfileOut; a new image or certificate's id comes in the `X-Media-Id` header.
  router.post(
    '/api/v1/storage/profile/media',
    authenticated(),
    multipartRoute({ keyed: true }),
    async (ctx) => {
      const { userId } = currentPrincipal(ctx);
      const form = await readMultipart(ctx, {
        tmpDir: uploadTmpDir(deps.config.dataDir),
        maxBytes: deps.config.maxUploadBytes,
        files: [
          { name: 'file', accept: ['image/', 'video/', 'application/pdf'], required: true },
          { name: 'preview', accept: ['image/'] },
        ],
      });
      try {
        await idempotentUpload(deps, ctx, form, async () => {
          const fields = decode(MediaFields, form.fields, 'body');
          const kind = fields.kind ?? 'media';
          const file = form.files.file!;
          checkKind(kind, file, fields);
          const preview = form.files.preview;
          const id = deps.newId();
          const now = deps.clock().toISOString();
          const mediaKey = newBlobKey(kind === 'media' ? 'media' : kind, id, file.originalname);
          const previewKey = preview ? newBlobKey('mpreview', deps.newId(), preview.originalname) : null;
          const blobs = [
            { key: mediaKey, file },
            ...(preview && previewKey ? [{ key: previewKey, file: preview }] : []),
          ];
          const command: UserCommand =
            kind === 'media'
              ? {
                  type: 'SetProfileMedia',
                  userId,
                  mediaType: file.mimetype.toLowerCase().startsWith('video/') ? 'video' : 'image',
                  mediaKey,
                  previewKey,
                  now,
                }
              : {
                  type: 'AddProfileMedia',
                  userId,
                  item: {
                    mediaId: id,
                    kind,
                    key: mediaKey,
                    previewKey,
                    title: titleOrDefault(fields.title, file.originalname),
                    description: fields.description ?? '',
                    contentType: file.mimetype,
                    originFilename: file.originalname,
                    filesize: file.size,
                    addedAt: now,
                  },
                };
          // A keyed request run again after a crash answers what its first run did; a picture removed, or
          // media replaced, since then is not put back (the blobs it stored again are dropped).
          const { state, events } = await withStoredBlobs(
            deps,
            blobs,
            () =>
              runCommand(deps, ctx, profileStream(userId), userProfile, command, [
                kind === 'media' ? 'user_profiles' : 'profile_media',
              ]),
            (done) => [
              done.state.media?.mediaKey ?? null,
              done.state.media?.previewKey ?? null,
              ...done.state.gallery.flatMap((i) => [i.key, i.previewKey]),
            ],
          );
          await deleteBlobs(
            deps,
            events.flatMap((e) => (e.type === 'ProfileMediaChanged' ? e.data.replacedKeys : [])),
          );
          if (kind !== 'media') ctx.set('X-Media-Id', id);
          ctx.body = await profileOut(userId, state);
        });
      } finally {
        await form.cleanup();
      }
    },
  );

  // Added: removes one of the caller's profile images or certificates (another user's is 404).
  router.delete('/api/v1/storage/profile/media/:media_id', authenticated(), async (ctx) => {
    const { userId } = currentPrincipal(ctx);
    const mediaId = decode(MediaIdPath, ctx.params, 'path').media_id.toLowerCase();
    let events: UserEvent[];
    try {
      ({ events } = await runCommand(
        deps,
        ctx,
        profileStream(userId),
        userProfile,
        { type: 'RemoveProfileMedia', userId, mediaId, now: deps.clock().toISOString() },
        ['profile_media'],
      ));
    } catch (err) {
      // A repeat (the first answered 503 or not at all) is 404, and removes the files the first may have left.
      if (err instanceof HttpError && err.error === 'media_not_found')
        await deleteBlobs(deps, await keysOfRemovedItem(deps, userId, mediaId));
      throw err;
    }
    await deleteBlobs(
      deps,
      events.flatMap((e) => (e.type === 'ProfileMediaRemoved' ? e.data.removedKeys : [])),
    );
    ctx.body = { id: mediaId, status: 'deleted' };
  });
  return router;
}
