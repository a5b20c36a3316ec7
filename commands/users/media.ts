import Router from '@koa/router';
import type { AppDeps } from '../../src/deps';
import { authenticated, currentPrincipal } from '../../src/http/auth';
import { runCommand } from '../../src/http/command';
import { multipartRoute, readMultipart, uploadTmpDir } from '../../src/http/multipart';
import { decode, strict } from '../../src/http/validation';
import { newBlobKey } from '../../src/storage/types';
import { userSessionCount } from '../../src/readModels/users';
import { toUserProfileOut } from '../../src/resources/userProfile';
import { deleteBlobs, withStoredBlobs } from '../videos/routes';
import { userProfile } from './decider';
import { profileStream } from './events';

const NoFields = strict({}, {}, 'ProfileMediaFields');

export function profileMediaCommands(deps: AppDeps): Router {
  const router = new Router();
  // 14. Profile media (a picture or a video, and an optional preview image) of the caller: UserProfileOut.
  router.post('/api/v1/storage/profile/media', authenticated(), multipartRoute(), async (ctx) => {
    const { userId } = currentPrincipal(ctx);
    const form = await readMultipart(ctx, {
      tmpDir: uploadTmpDir(deps.config.dataDir),
      maxBytes: deps.config.maxUploadBytes,
      files: [
        { name: 'file', accept: ['image/', 'video/'], required: true },
        { name: 'preview', accept: ['image/'] },
      ],
    });
    try {
      decode(NoFields, form.fields, 'body');
      const file = form.files.file!;
      const preview = form.files.preview;
      const mediaKey = newBlobKey('media', deps.newId(), file.originalname);
      const previewKey = preview ? newBlobKey('mpreview', deps.newId(), preview.originalname) : null;
      const blobs = [
        { key: mediaKey, file },
        ...(preview && previewKey ? [{ key: previewKey, file: preview }] : []),
      ];
      const { state, events } = await withStoredBlobs(deps, blobs, () =>
        runCommand(
          deps,
          ctx,
          profileStream(userId),
          userProfile,
          {
            type: 'SetProfileMedia',
            userId,
            mediaType: file.mimetype.toLowerCase().startsWith('video/') ? 'video' : 'image',
            mediaKey,
            previewKey,
            now: deps.clock().toISOString(),
          },
          ['user_profiles'],
        ),
      );
      await deleteBlobs(
        deps,
        events.flatMap((e) => (e.type === 'ProfileMediaChanged' ? e.data.replacedKeys : [])),
      );
      ctx.body = toUserProfileOut(userId, state, await userSessionCount(deps.db, userId));
    } finally {
      await form.cleanup();
    }
  });
  return router;
}
