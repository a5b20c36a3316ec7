import Router from '@koa/router';
import type { AppDeps } from '../../src/deps';
import { authenticated, currentPrincipal, requireRole } from '../../src/http/auth';
import { runCommand } from '../../src/http/command';
import { HttpError, ValidationError } from '../../src/http/errors';
import { idempotent, type KeptAnswer } from '../../src/http/idempotency';
import { decode } from '../../src/http/validation';
import { toNotificationOut } from '../../src/resources/notification';
import {
  ChannelBody,
  ChannelIdPath,
  MarkReadBody,
  NotificationEventBody,
  channelAddressProblem,
} from './codecs';
import { channelSecret } from '../../src/webhooks/signing';
import { channelAddressKey, findChannel, inbox } from './decider';
import { notificationStream } from './events';

/** Stands for a webhook's secret in the answer an Idempotency-Key keeps (the secret is not stored). */
const SECRET_MARK = '$secretDerived';
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function notificationCommands(deps: AppDeps): Router {
  const router = new Router();
  const now = () => deps.clock().toISOString();

  // 25. Marks the caller's notifications read; any id that is not one of the caller's is 404, none marked.
  router.put('/api/v1/notifications', authenticated(), async (ctx) => {
    const { notifications } = decode(MarkReadBody, ctx.request.body, 'body');
    const { userId } = currentPrincipal(ctx);
    const { state } = await runCommand(
      deps,
      ctx,
      notificationStream(userId),
      inbox,
      { type: 'MarkRead', userId, notificationIds: notifications, now: now() },
      ['notifications'],
    );
    // From the write model: exact even if the read model lags.
    ctx.body = [...new Set(notifications.map((id) => id.toLowerCase()))].map((id) =>
      toNotificationOut(state.notifications.get(id)!),
    );
  });

  // 26. The caller's app reports these notifications delivered (displayed); the first report is recorded.
  router.post('/api/v1/notification/event', authenticated(), idempotent(deps), async (ctx) => {
    const { notificationIds } = decode(NotificationEventBody, ctx.request.body, 'body');
    const { userId } = currentPrincipal(ctx);
    const { state } = await runCommand(
      deps,
      ctx,
      notificationStream(userId),
      inbox,
      { type: 'RecordDelivered', userId, notificationIds, now: now() },
      ['notifications'],
    );
    ctx.body = [...new Set(notificationIds.map((id) => id.toLowerCase()))].map((id) => ({
      id,
      status: 'delivered',
      deliveredAt: state.notifications.get(id)!.deliveredAt,
    }));
  });

  // An Idempotency-Key keeps the answer without the secret, marked; its replay derives the secret again.
  const keptWithoutSecret: KeptAnswer = {
    store: (body) => {
      if (!isObject(body) || typeof body.secret !== 'string') return body;
      const { secret: _secret, ...rest } = body;
      return { ...rest, [SECRET_MARK]: true };
    },
    replay: (stored) => {
      if (!isObject(stored) || stored[SECRET_MARK] !== true) return stored;
      const { [SECRET_MARK]: _mark, ...rest } = stored;
      const signingKey = deps.config.webhooks.signingKey;
      return typeof rest.id === 'string' && signingKey !== null
        ? { ...rest, secret: channelSecret(signingKey, rest.id) }
        : rest;
    },
  };
  // 27. The caller registers a delivery channel; the same type and address again answers the same channel.
  const keyedChannel = idempotent(deps, keptWithoutSecret);
  router.post('/api/v1/notification/channel', authenticated(), keyedChannel, async (ctx) => {
    const body = decode(ChannelBody, ctx.request.body, 'body');
    // Stored in the form addresses are compared in (an e-mail lower-case, a URL in its normal form).
    const address = channelAddressKey(body.type, body.address.trim());
    const problem = channelAddressProblem(body.type, address, deps.config.webhooks.allowLoopback);
    if (problem) throw new ValidationError([{ loc: ['body', 'address'], msg: problem, type: 'value_error' }]);
    const signingKey = deps.config.webhooks.signingKey;
    if (body.type === 'webhook' && signingKey === null)
      throw new HttpError(
        503,
        'webhooks_not_configured',
        'webhooks need WEBHOOK_SIGNING_KEY (or JWT_SECRET) on the server',
      );
    const { userId } = currentPrincipal(ctx);
    const { state, events } = await runCommand(
      deps,
      ctx,
      notificationStream(userId),
      inbox,
      {
        type: 'RegisterChannel',
        userId,
        channelId: deps.newId(),
        channelType: body.type,
        address,
        now: now(),
      },
      ['notification_channels'],
    );
    // The channel this request registered: from its event, as a keyed request run again after a crash finds
    // it in the log even when the channel has been removed since; else the one already registered.
    const registered = events.find((e) => e.type === 'NotificationChannelRegistered');
    const channel = registered
      ? {
          id: registered.data.channelId,
          type: registered.data.type,
          address: registered.data.address,
          createdAt: registered.data.at,
        }
      : findChannel(state, body.type, address)!;
    // A new webhook's signing secret is shown here, once; registering the same URL again does not repeat it.
    const secret =
      channel.type === 'webhook' && events.length && signingKey !== null
        ? { secret: channelSecret(signingKey, channel.id) }
        : {};
    ctx.body = {
      id: channel.id,
      type: channel.type,
      address: channel.address,
      createdAt: channel.createdAt,
      ...secret,
    };
  });

  // Added: the caller removes one of its channels; nothing more is sent to it (queued webhook deliveries
  // included), and its place among the 20 is free again.
  router.delete(
    '/api/v1/notification/channel/:channel_id',
    authenticated(),
    idempotent(deps),
    async (ctx) => {
      const channelId = decode(ChannelIdPath, ctx.params, 'path').channel_id.toLowerCase();
      const { userId } = currentPrincipal(ctx);
      await runCommand(
        deps,
        ctx,
        notificationStream(userId),
        inbox,
        { type: 'RemoveChannel', userId, channelId, now: now() },
        ['notification_channels'],
      );
      ctx.body = { id: channelId, status: 'removed' };
    },
  );

  // 28. Checks the mail transport: SMTP connects and authenticates, or the outbox directory is writable.
  router.post(
    '/api/v1/notification/channel/mailprovider-init',
    requireRole('admin', 'service'),
    async (ctx) => {
      const check = await deps.mailer.verify();
      if (check.status === 'error') deps.log.warn('mail provider check failed', { ...check });
      ctx.body = check;
    },
  );
  return router;
}
