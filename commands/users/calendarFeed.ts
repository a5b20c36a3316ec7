import { createHash, randomBytes } from 'node:crypto';
import Router from '@koa/router';
import type { AppDeps } from '../../src/deps';
import { authenticated, currentPrincipal } from '../../src/http/auth';
import { runCommand } from '../../src/http/command';
import { idempotent } from '../../src/http/idempotency';
import { userProfile } from './decider';
import { profileStream } from './events';

/** A feed token: 256 random bits, URL-safe (43 characters). */
export const CALENDAR_FEED_TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;

/** What the log and the read model keep of a token: its SHA-256, in hex. */
export const tokenSha256 = (token: string) => createHash('sha256').update(token).digest('hex');

/** The feed's address, relative to the base URL like every path the API hands out. */
export const calendarFeedPath = (token: string) => `/api/v1/calendar/feed/${token}.ics`;

/**
 * A private calendar feed of the caller's sessions, for calendar apps that subscribe to an address and send
 * no token. Asking again replaces the address (the old one stops working); deleting closes it.
 */
export function calendarFeedCommands(deps: AppDeps): Router {
  const router = new Router();

  router.post('/api/v1/calendar/feed', authenticated(), idempotent(deps), async (ctx) => {
    const { userId } = currentPrincipal(ctx);
    const token = randomBytes(32).toString('base64url');
    const now = deps.clock().toISOString();
    await runCommand(
      deps,
      ctx,
      profileStream(userId),
      userProfile,
      { type: 'IssueCalendarFeed', userId, tokenSha256: tokenSha256(token), now },
      ['calendar_feeds'],
    );
    // The token is shown here only: the service keeps its hash.
    ctx.body = { url: calendarFeedPath(token), token, issuedAt: now };
  });

  router.delete('/api/v1/calendar/feed', authenticated(), async (ctx) => {
    const { userId } = currentPrincipal(ctx);
    await runCommand(
      deps,
      ctx,
      profileStream(userId),
      userProfile,
      { type: 'RevokeCalendarFeed', userId, now: deps.clock().toISOString() },
      ['calendar_feeds'],
    );
    ctx.body = { open: false, issuedAt: null };
  });

  return router;
}
