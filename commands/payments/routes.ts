import Router from '@koa/router';
import type { Context } from 'koa';
import type { AppDeps } from '../../src/deps';
import { requireRole } from '../../src/http/auth';
import { runCommand } from '../../src/http/command';
import { busy, HttpError, notFound } from '../../src/http/errors';
import { idempotent } from '../../src/http/idempotency';
import { decode } from '../../src/http/validation';
import { paymentNotFound, toPaymentOut } from '../../src/resources/payment';
import { PaymentIdPath, PaymentUpdateBody, UserIdPath } from './codecs';
import { paymentDecider, type ExpectedPayment, type PaymentCommand } from './decider';
import { paymentStream } from './events';
import { newestOpenPayment } from './newestOpen';

/** The read models a payment command changes: a later GET (or endpoint 17) sees the write. */
const PAYMENT_READ_MODELS = ['payments', 'payment_history', 'payment_expiry'];

/** The `Payment` fields a body sent along with its status (the whole record a client read). */
const expectedOf = ({ price, currency, methodId, coachId, clientId, serviceId }: PaymentUpdateBody) =>
  Object.fromEntries(
    Object.entries({ price, currency, methodId, coachId, clientId, serviceId }).filter(
      ([, v]) => v !== undefined,
    ),
  ) as ExpectedPayment;

export function paymentCommands(deps: AppDeps): Router {
  const router = new Router();
  const service = requireRole('service');

  const run = async (ctx: Context, paymentId: string, command: PaymentCommand) => {
    const { state } = await runCommand(
      deps,
      ctx,
      paymentStream(paymentId),
      paymentDecider,
      command,
      PAYMENT_READ_MODELS,
    );
    // A duplicate or stale provider event decides nothing; the answer is then the unchanged payment.
    if (!state.payment) throw paymentNotFound();
    return toPaymentOut(state.payment);
  };

  const update = (ctx: Context, paymentId: string, body: PaymentUpdateBody) =>
    run(ctx, paymentId, {
      type: 'UpdatePayment',
      paymentId,
      to: body.status,
      ...(body.clientSecret !== undefined ? { clientSecret: body.clientSecret } : {}),
      ...(body.checkout !== undefined ? { checkout: body.checkout } : {}),
      ...(body.providerEventId !== undefined ? { providerEventId: body.providerEventId } : {}),
      expected: expectedOf(body),
      now: deps.clock().toISOString(),
    });

  // 15. The payment provider integration pushes a status.
  router.post(
    '/api/v1/payment/private/payment/:payment_id/update',
    service,
    idempotent(deps),
    async (ctx) => {
      const paymentId = decode(PaymentIdPath, ctx.params, 'path').payment_id.toLowerCase();
      const body = decode(PaymentUpdateBody, ctx.request.body, 'body');
      ctx.body = await update(ctx, paymentId, body);
    },
  );

  // 16. Cancel: moves the payment to canceled; the booking side frees its sessions' slots.
  router.post(
    '/api/v1/payment/private/payment/:payment_id/cancel',
    service,
    idempotent(deps),
    async (ctx) => {
      const paymentId = decode(PaymentIdPath, ctx.params, 'path').payment_id.toLowerCase();
      ctx.body = await run(ctx, paymentId, {
        type: 'CancelPayment',
        paymentId,
        now: deps.clock().toISOString(),
      });
    },
  );

  // 17. The same update, applied to the user's newest open payment (as its client).
  router.post('/api/v1/payment/private/user/:user_id/update', service, idempotent(deps), async (ctx) => {
    const userId = decode(UserIdPath, ctx.params, 'path').user_id.toLowerCase();
    const body = decode(PaymentUpdateBody, ctx.request.body, 'body');
    const tag = ctx.state.idempotencyTag as string | undefined;
    const origin = {
      ...(body.providerEventId !== undefined ? { providerEventId: body.providerEventId } : {}),
      ...(tag !== undefined ? { idempotencyTag: tag } : {}),
    };
    let refused: { paymentId: string; error: unknown } | null = null;
    for (let attempt = 0; ; attempt++) {
      const found = await newestOpenPayment(deps.store, userId, origin);
      // The payment the update was refused for is still the newest open one: that refusal is the answer.
      if (refused && typeof found !== 'string' && found.paymentId === refused.paymentId) throw refused.error;
      if (found === 'none') throw notFound('payment_not_found', 'the user has no open payment');
      if (found === 'pending') throw busy("the user's newest payment is still being created; retry shortly");
      try {
        ctx.body = await update(ctx, found.paymentId, body);
        return;
      } catch (err) {
        // Refused because another update closed the chosen payment after it was found (two provider events
        // for the user at once): the update goes to the newest open payment, as it would a moment later.
        // A repeat of an update applied before is not refused (it answers its payment), so it never moves on.
        if (!(err instanceof HttpError && err.error === 'invalid_transition') || attempt >= 4) throw err;
        refused = { paymentId: found.paymentId, error: err };
      }
    }
  });
  return router;
}
