import type { UserEvent } from '../commands/users/events';
import type { Projection } from './runner';

const ISSUE = `INSERT INTO calendar_feeds (user_id, token_sha256, issued_at) VALUES ($1, $2, $3)
  ON CONFLICT (user_id) DO UPDATE SET token_sha256 = EXCLUDED.token_sha256, issued_at = EXCLUDED.issued_at`;
const REVOKE = `DELETE FROM calendar_feeds WHERE user_id = $1`;

/** Read model `calendar_feeds`: the open calendar feed of each user, found by its token's SHA-256. */
export const calendarFeedsProjection: Projection = {
  name: 'calendar_feeds',
  handles: ['CalendarFeedIssued', 'CalendarFeedRevoked'],
  async apply(tx, recorded) {
    const event = { type: recorded.type, data: recorded.data } as UserEvent;
    if (event.type === 'CalendarFeedIssued')
      await tx.query(ISSUE, [event.data.userId, event.data.tokenSha256, event.data.issuedAt]);
    else if (event.type === 'CalendarFeedRevoked') await tx.query(REVOKE, [event.data.userId]);
  },
};
