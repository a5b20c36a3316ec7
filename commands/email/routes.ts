import Router from '@koa/router';
import * as t from 'io-ts';
import type { Context } from 'koa';
import type { AppDeps } from '../../src/deps';
import { requireRole } from '../../src/http/auth';
import { runCommand } from '../../src/http/command';
import { notFound } from '../../src/http/errors';
import { idempotent } from '../../src/http/idempotency';
import { describeSchema, sharpenSchema } from '../../src/http/openapi/jsonSchema';
import { Uuid, boundedString, decode, orNull, refine, strict } from '../../src/http/validation';
import { readState } from '../../src/commandHandler';
import { booking as bookingDecider } from '../booking/decider';
import { bookingStream, type SessionsBooked } from '../booking/events';
import { bookingOfSession, loadBooking } from '../booking/lookups';
import { loadProfile } from '../users/profile';
import { emailRequest } from './decider';
import { emailStream, type EmailFacts, type EmailRequested, type EmailTemplate } from './events';

// eslint-disable-next-line no-control-regex -- control characters are what it refuses
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
/** A verification code is one line the user reads and types: not blanks only, no line breaks. */
const VerificationCode = describeSchema(
  refine(
    boundedString(100, 1),
    (s) => /\S/.test(s) && !CONTROL.test(s),
    'string',
    'String should be one line of 1 to 100 characters, not blanks only',
  ),
  {
    type: 'string',
    minLength: 1,
    maxLength: 100,
    pattern: '^(?=.*\\S)[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]+$',
  },
);
/** A verification link is opened from the mail: an absolute http(s) URL, no blanks or control characters. */
const isWebUrl = (s: string) => {
  if (!/^https?:\/\/\S+$/i.test(s) || CONTROL.test(s)) return false;
  try {
    return new URL(s).host !== '';
  } catch {
    return false;
  }
};
const VerificationLink = describeSchema(
  refine(
    boundedString(2000, 1),
    isWebUrl,
    'link',
    'Input should be an http(s) URL of at most 2000 characters',
  ),
  { type: 'string', format: 'uri', maxLength: 2000, pattern: '^[Hh][Tt][Tt][Pp][Ss]?://\\S+$' },
);
/**
 * A verification e-mail must give the user something to verify with: a code, a link or both. One with
 * neither asked the user to confirm the address and gave no way to.
 */
export const VerificationBody = sharpenSchema(
  refine(
    strict({}, { code: orNull(VerificationCode), link: orNull(VerificationLink) }, 'Verification'),
    (b) => (b.code ?? null) !== null || (b.link ?? null) !== null,
    'Verification',
    'A verification e-mail needs a code or a link (or both)',
  ),
  // The same rule for /openapi.json: one of the two is present and not null.
  {
    anyOf: ['code', 'link'].map((field) => ({
      required: [field],
      properties: { [field]: { type: 'string' } },
    })),
  },
);
/**
 * Session e-mails take an optional reason (shown in cancel, decline and dispute e-mails), as long as the
 * longest a session action takes (a dispute's, 2000 characters: commands/booking/codecs.ts), so the
 * caller can pass on the reason the party gave.
 */
export const SessionEmailBody = strict({}, { reason: orNull(boundedString(2000)) }, 'SessionEmail');
const UserPath = t.type({ user_id: Uuid });
const GroupPath = t.type({ user_id: Uuid, group_id: Uuid });
const SessionPath = t.type({ user_id: Uuid, session_id: Uuid });

/** Private endpoints 18 to 23 (role `service`): each records an EmailRequested; the e-mail process sends it. */
export function emailCommands(deps: AppDeps): Router {
  const router = new Router();
  const guard = [requireRole('service'), idempotent(deps)];

  // The recipient and the booking come from their own streams, not from read models: an e-mail asked for
  // right after a booking or a profile change finds them.
  const recipient = async (userId: string) => {
    const profile = await loadProfile(deps.store, userId);
    if (!profile) throw notFound('user_not_found', 'no such user');
    if (!profile.email) throw notFound('user_not_found', 'the user has no e-mail address');
    return profile;
  };

  const request = async (
    ctx: Context,
    userId: string,
    to: string,
    refs: { groupId: string | null; sessionId: string | null },
    facts: EmailFacts,
  ) => {
    const data: EmailRequested['data'] = {
      emailId: deps.newId(),
      userId,
      to,
      ...refs,
      facts,
      requestedAt: deps.clock().toISOString(),
    };
    await runCommand(
      deps,
      ctx,
      emailStream(data.emailId),
      emailRequest,
      { type: 'RequestEmail', request: data },
      [],
    );
    ctx.body = { id: data.emailId, status: 'queued', to, template: facts.template };
  };

  // 18. Verification e-mail to the user's profile address, with the caller's code and/or link.
  router.post('/api/v1/notification/private/email/:user_id/verification', ...guard, async (ctx) => {
    const userId = decode(UserPath, ctx.params, 'path').user_id.toLowerCase();
    // `null` is not sent, as for every optional field of these bodies.
    const { code, link } = decode(VerificationBody, ctx.request.body, 'body');
    const profile = await recipient(userId);
    await request(
      ctx,
      userId,
      profile.email,
      { groupId: null, sessionId: null },
      {
        template: 'verification',
        role: 'user',
        recipientName: profile.firstName,
        ...(code ? { code } : {}),
        ...(link ? { link } : {}),
      },
    );
  });

  const roleIn = (b: SessionsBooked['data'], userId: string) =>
    b.clientId === userId ? ('client' as const) : b.coachId === userId ? ('coach' as const) : null;
  const byStart = (b: SessionsBooked['data']) =>
    [...b.sessions].sort((x, y) => Date.parse(x.startsAt) - Date.parse(y.startsAt));

  // 19. Booking e-mail for a whole booking (group) to one of its parties.
  router.post(
    '/api/v1/notification/private/email/:user_id/session/:group_id/booking',
    ...guard,
    async (ctx) => {
      const p = decode(GroupPath, ctx.params, 'path');
      const userId = p.user_id.toLowerCase();
      decode(SessionEmailBody, ctx.request.body, 'body');
      const profile = await recipient(userId);
      const booking = await loadBooking(deps.store, p.group_id.toLowerCase());
      const role = booking ? roleIn(booking, userId) : null;
      if (!booking || !role) throw notFound('session_not_found', 'no such booking of this user');
      // The sessions still booked: a declined or canceled one (a package's session moved to another time)
      // is no longer "received"; a booking with none left names them all, as booked.
      const states = (await readState(deps.store, bookingStream(booking.groupId), bookingDecider)).sessions;
      const sessions = byStart(booking);
      const open = sessions.filter((s) => {
        const state = states.get(s.sessionId)?.state;
        return state !== 'declined' && state !== 'canceled';
      });
      await request(
        ctx,
        userId,
        profile.email,
        { groupId: booking.groupId, sessionId: null },
        {
          template: 'booking',
          role,
          recipientName: profile.firstName,
          serviceName: booking.terms.serviceName,
          slots: (open.length ? open : sessions).map((s) => s.slot),
          timezone: booking.timezone,
        },
      );
    },
  );

  // 20 to 23. One session's approve, cancel, decline or dispute e-mail to one of its parties.
  for (const template of ['approve', 'cancel', 'decline', 'dispute'] as const satisfies EmailTemplate[]) {
    router.post(
      `/api/v1/notification/private/email/:user_id/session/:session_id/${template}`,
      ...guard,
      async (ctx) => {
        const p = decode(SessionPath, ctx.params, 'path');
        const userId = p.user_id.toLowerCase();
        const { reason } = decode(SessionEmailBody, ctx.request.body, 'body');
        const profile = await recipient(userId);
        const sessionId = p.session_id.toLowerCase();
        const groupId = await bookingOfSession(deps.store, userId, sessionId);
        const booking = groupId ? await loadBooking(deps.store, groupId) : null;
        const s = booking?.sessions.find((x) => x.sessionId === sessionId);
        const role = booking ? roleIn(booking, userId) : null;
        if (!booking || !s || !role) throw notFound('session_not_found', 'no such session of this user');
        await request(
          ctx,
          userId,
          profile.email,
          { groupId: booking.groupId, sessionId },
          {
            template,
            role,
            recipientName: profile.firstName,
            serviceName: booking.terms.serviceName,
            slots: [s.slot],
            timezone: booking.timezone,
            ...(reason ? { reason } : {}),
          },
        );
      },
    );
  }
  return router;
}
