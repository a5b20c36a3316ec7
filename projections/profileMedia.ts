import type { UserEvent } from '../commands/users/events';
import type { Projection } from './runner';

/** Read model `profile_media`: the pictures and certificates on each user's profile, in upload order. */
export const profileMediaProjection: Projection = {
  name: 'profile_media',
  handles: ['ProfileMediaAdded', 'ProfileMediaRemoved'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as UserEvent;
    if (event.type === 'ProfileMediaAdded') {
      const { userId, item } = event.data;
      await tx.query(
        `INSERT INTO profile_media (id, user_id, kind, title, description, content_type, origin_filename, blob_key,
           preview_key, filesize, created_at, seq)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (id) DO NOTHING`,
        [
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
        ],
      );
    } else if (event.type === 'ProfileMediaRemoved') {
      await tx.query('DELETE FROM profile_media WHERE id = $1', [event.data.mediaId]);
    }
  },
};
