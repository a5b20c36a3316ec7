import type { UserEvent } from '../commands/users/events';
import { assertNever } from '../src/decider';
import type { Projection } from './runner';
import { bumped, userScope } from '../src/readModels/readVersions';

/** Each change bumps the user's cached profile with it. */
const UPSERT = bumped(
  `INSERT INTO user_profiles (id, type, profile, updated_at) VALUES ($1, $2, $3::jsonb, $4)
   ON CONFLICT (id) DO UPDATE SET type = EXCLUDED.type, profile = EXCLUDED.profile, updated_at = EXCLUDED.updated_at`,
  'user_profiles',
);
const SET_MEDIA = bumped(
  `UPDATE user_profiles SET profile = profile || $2::jsonb, updated_at = $3 WHERE id = $1`,
  'user_profiles',
);

/** Read model `user_profiles`: the latest profile of each user, whole, as the event carries it. */
export const userProfilesProjection: Projection = {
  name: 'user_profiles',
  handles: ['UserProfileUpserted', 'ProfileMediaChanged'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as UserEvent;
    switch (event.type) {
      case 'UserProfileUpserted': {
        const { userId, profile, upsertedAt } = event.data;
        await tx.query(UPSERT, [
          userId,
          profile.type,
          JSON.stringify(profile),
          upsertedAt,
          [userScope(userId)],
        ]);
        return;
      }
      case 'ProfileMediaChanged': {
        // A profile created later carries the media itself (the decider merges it in).
        const { userId, mediaType, mediaUrl, mediaPreviewUrl, at } = event.data;
        await tx.query(SET_MEDIA, [
          userId,
          JSON.stringify({ mediaType, mediaUrl, mediaPreviewUrl }),
          at,
          [userScope(userId)],
        ]);
        return;
      }
      case 'ProfileMediaAdded':
      case 'ProfileMediaRemoved':
        return; // read model profile_media (projections/profileMedia.ts)
      case 'CalendarFeedIssued':
      case 'CalendarFeedRevoked':
        return; // read model calendar_feeds (projections/calendarFeeds.ts)
      default:
        assertNever(event);
    }
  },
};
