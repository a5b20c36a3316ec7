import type { VideoEvent, VideoUploaded } from '../commands/videos/events';
import { assertNever } from '../src/decider';
import type { Projection } from './runner';
import { bumpOnly, bumped, userScope } from '../src/readModels/readVersions';

/** Each change bumps the user's cached profile (its videos) with it. */
const INSERT_VIDEO = bumped(
  `INSERT INTO videos (id, user_id, title, description, content_type, origin_filename, blob_key, preview_key,
     filesize, status, position, created_at, updated_at)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
     (SELECT coalesce(max(position) + 1, 0) FROM videos WHERE user_id = $2), $11, $11)`,
  'videos',
);
const REPLACE_VIDEO = bumped(
  `UPDATE videos SET title = $3, description = $4, content_type = $5, origin_filename = $6, blob_key = $7,
     preview_key = $8, filesize = $9, status = $10, updated_at = $11
   WHERE id = $1 AND user_id = $2`,
  'videos',
);
const DELETE_VIDEO = bumped('DELETE FROM videos WHERE id = $1 AND user_id = $2', 'videos');
const BUMP = bumpOnly('videos');

/** The parameters INSERT_VIDEO and REPLACE_VIDEO share: a video's fields and the user's cache scope. */
const videoRow = (v: VideoUploaded['data']) => [
  v.videoId,
  v.userId,
  v.title,
  v.description,
  v.contentType,
  v.originFilename,
  v.key,
  v.previewKey,
  v.filesize,
  v.status,
  v.at,
  [userScope(v.userId)],
];

/**
 * Read model `videos`: one row per video; `position` is its place in the user's list (gaps allowed after
 * deletes; only the order matters).
 */
export const videosProjection: Projection = {
  name: 'videos',
  handles: ['VideoUploaded', 'VideoReplaced', 'VideoDeleted', 'VideosReordered'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as VideoEvent;
    switch (event.type) {
      case 'VideoUploaded':
        await tx.query(INSERT_VIDEO, videoRow(event.data));
        return;
      case 'VideoReplaced':
        await tx.query(REPLACE_VIDEO, videoRow(event.data));
        return;
      case 'VideoDeleted':
        await tx.query(DELETE_VIDEO, [event.data.videoId, event.data.userId, [userScope(event.data.userId)]]);
        return;
      case 'VideosReordered': {
        const { userId, order, at } = event.data;
        await tx.query(BUMP, [[userScope(userId)]]);
        for (const [i, id] of order.entries())
          await tx.query('UPDATE videos SET position = $3, updated_at = $4 WHERE id = $1 AND user_id = $2', [
            id,
            userId,
            i,
            at,
          ]);
        return;
      }
      default:
        assertNever(event);
    }
  },
};
