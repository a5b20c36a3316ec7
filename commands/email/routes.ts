import Router from '@koa/router';
import * as t from 'io-ts';
import type { Context } from 'koa';
import type { AppDeps } from '../../src/deps';
import { requireRole } from '../../src/http/auth';
import { runCommand } from '../../src/http/command';
import { notFound } from '../../src/http/errors';
import { idempotent } from '../../src/http/idempotency';
import { Uuid, boundedString, decode, strict } from '../../src/http/validation';
import { findProfile } from '../../src/readModels/users';
// eslint-disable-next-line no-restricted-imports -- issue 9 point 1 moves this decision to the log
import { findSession, sessionsOfGroup } from '../../queries/sessions';
import type { SessionRecord } from '../../src/resources/session';
import { emailRequest } from './decider';
import { emailStream, type EmailFacts, type EmailRequested, type EmailTemplate } from './events';

const VerificationBody = strict(
  {},
  { code: boundedString(100, 1), link: boundedString(2000, 1) },
  'Verification',
);
/** Session e-mails take an optional reason (shown in cancel, decline and dispute e-mails). */
const SessionEmailBody = strict({}, { reason: boundedString(1000) }, 'SessionEmail');
const UserPath = t.type({ user_id: Uuid });
const GroupPath = t.type({ user_id: Uuid, group_id: Uuid });
const SessionPath = t.type({ user_id: Uuid, session_id: Uuid });

/** Private endpoints 18 to 23 (role `service`): each records an EmailRequested; the e-mail process sends it. */
export function emailCommands(deps: AppDeps): Router {
  const router = new Router();
  const guard = [requireRole('service'), idempotent(deps)];

  const recipient = async (userId: string) => {
    const profile = await findProfile(deps.db, userId);
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
    const body = decode(VerificationBody, ctx.request.body ?? {}, 'body');
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
        ...body,
      },
    );
  });

  const roleIn = (s: SessionRecord, userId: string) =>
    s.clientId === userId ? ('client' as const) : s.coachId === userId ? ('coach' as const) : null;

  // 19. Booking e-mail for a whole booking (group) to one of its parties.
  router.post(
    '/api/v1/notification/private/email/:user_id/session/:group_id/booking',
    ...guard,
    async (ctx) => {
      const p = decode(GroupPath, ctx.params, 'path');
      const userId = p.user_id.toLowerCase();
      decode(SessionEmailBody, ctx.request.body ?? {}, 'body');
      const profile = await recipient(userId);
      const sessions = await sessionsOfGroup(deps.db, p.group_id.toLowerCase());
      const role = sessions[0] ? roleIn(sessions[0], userId) : null;
      if (!sessions[0] || !role) throw notFound('session_not_found', 'no such booking of this user');
      await request(
        ctx,
        userId,
        profile.email,
        { groupId: sessions[0].groupId, sessionId: null },
        {
          template: 'booking',
          role,
          recipientName: profile.firstName,
          serviceName: sessions[0].terms.serviceName,
          slots: sessions.map((s) => s.slot),
          timezone: sessions[0].timezone,
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
        const { reason } = decode(SessionEmailBody, ctx.request.body ?? {}, 'body');
        const profile = await recipient(userId);
        const s = await findSession(deps.db, p.session_id.toLowerCase());
        const role = s ? roleIn(s, userId) : null;
        if (!s || !role) throw notFound('session_not_found', 'no such session of this user');
        await request(
          ctx,
          userId,
          profile.email,
          { groupId: s.groupId, sessionId: s.id },
          {
            template,
            role,
            recipientName: profile.firstName,
            serviceName: s.terms.serviceName,
            slots: [s.slot],
            timezone: s.timezone,
            ...(reason ? { reason } : {}),
          },
        );
      },
    );
  }
  return router;
}
