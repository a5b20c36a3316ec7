import type { UserEvent } from '../commands/users/events';
import type { Projection } from './runner';
import { bumped, userScope } from '../src/readModels/readVersions';

/** Each change bumps the user's cached profile (its gallery) with it. */
const INSERT_MEDIA = bumped(
  `INSERT INTO profile_media (id, user_id, kind, title, description, content_type, origin_filename, blob_key,
     preview_key, filesize, created_at, seq)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (id) DO NOTHING`,
  'profile_media',
);
const DELETE_MEDIA = bumped('DELETE FROM profile_media WHERE id = $1', 'profile_media');

/** Read model `profile_media`: the pictures and certificates on each user's profile, in upload order. */
export const profileMediaProjection: Projection = {
  name: 'profile_media',
  handles: ['ProfileMediaAdded', 'ProfileMediaRemoved'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as UserEvent;
    if (event.type === 'ProfileMediaAdded') {
      const { userId, item } = event.data;
      await tx.query(INSERT_MEDIA, [
        item.mediaId,
        userId,
        item.kind,
        item.title,
        item.description,
        item.contentType,
        item.originFilename,
        item.key,
        item.previewKey,
        item.filesize,
        item.addedAt,
        recorded.position.commit.toString(),
        [userScope(userId)],
      ]);
    } else if (event.type === 'ProfileMediaRemoved') {
      await tx.query(DELETE_MEDIA, [event.data.mediaId, [userScope(event.data.userId)]]);
    }
  },
};
