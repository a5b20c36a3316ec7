import Router from '@koa/router';
import type { Context } from 'koa';
import type { AppDeps } from '../../src/deps';
import { handleCommand, readState } from '../../src/commandHandler';
import type { EventMetadata } from '../../src/eventstore/types';
import { requireRole } from '../../src/http/auth';
import { metadataOf, runCommand } from '../../src/http/command';
import { busy, HttpError, notFound } from '../../src/http/errors';
import { idempotent } from '../../src/http/idempotency';
import { decode } from '../../src/http/validation';
import { paymentNotFound, toPaymentOut } from '../../src/resources/payment';
import { PaymentIdPath, PaymentUpdateBody, UserIdPath } from './codecs';
import { paymentDecider, type ExpectedPayment, type PaymentCommand } from './decider';
import { paymentStream, type PaymentStatusChanged } from './events';
import { newestOpenPayment } from './newestOpen';
import { cancelsBooking } from './transitions';
import { booking } from '../booking/decider';
import { bookingStream, type SessionCanceled } from '../booking/events';
import { calendar } from '../calendar/decider';
import { calendarStream } from '../calendar/events';
import { SYSTEM_ACTOR } from '../../src/paymentExpirySweeper';

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

  /**
   * The booking side of a payment canceled (or deleted unpaid): its open sessions canceled and their slots
   * freed now, before the answer, as the booking process does a moment later (it then finds nothing left
   * to do), so the caller's next reads (the session, the lists, availability), on any instance, show it.
   * Recorded as the system's follow-up of the payment's move, as the booking process records it. A failure
   * is left to the booking process: the payment's move is stored already.
   */
  const cancelBooking = async (ctx: Context, moved: PaymentStatusChanged['data'], causationId?: string) => {
    const { requestId, correlationId } = metadataOf(ctx);
    const metadata = (cause?: string): EventMetadata => ({
      requestId,
      correlationId,
      ...(cause ? { causationId: cause } : {}),
      actor: SYSTEM_ACTOR,
    });
    const now = deps.clock().toISOString();
    try {
      const canceled = await handleCommand(
        deps.store,
        bookingStream(moved.groupId),
        booking,
        { type: 'CancelGroup', reason: `payment_${moved.to}`, now },
        metadata(causationId),
        50,
      );
      if (!canceled.ok) return; // a payment without a booking has nothing to cancel
      let position = canceled.position ?? canceled.observed;
      // Each canceled session's slot, as the booking process frees it, in the name of the session's
      // cancellation when this request wrote it. The booking process may have canceled the sessions first
      // (then this request decided nothing above) and not freed the slots yet: freed here all the same, and
      // a slot freed already decides nothing.
      const causeOf = new Map(
        canceled.events.map((e, i) => [(e as SessionCanceled).data.sessionId, canceled.eventIds[i]]),
      );
      // Sessions canceled by another writer first (the booking process, maybe on another instance): their
      // slots are freed in the name of those cancellations, as that writer frees them, so the audit chain
      // reads the same whoever frees a slot. Read only when it happened: the race is rare.
      const byOthers = [...canceled.state.sessions].some(
        ([sessionId, session]) => session.state === 'canceled' && !causeOf.has(sessionId),
      );
      if (byOthers)
        for (const e of (await deps.store.readStream(bookingStream(moved.groupId))).events)
          if (e.type === 'SessionCanceled') {
            const sessionId = (e.data as SessionCanceled['data']).sessionId;
            if (!causeOf.has(sessionId)) causeOf.set(sessionId, e.id);
          }
      for (const [sessionId, session] of canceled.state.sessions) {
        if (session.state !== 'canceled') continue;
        const released = await handleCommand(
          deps.store,
          calendarStream(canceled.state.coachId),
          calendar,
          {
            type: 'ReleaseSlots',
            coachId: canceled.state.coachId,
            groupId: moved.groupId,
            sessionIds: [sessionId],
            reason: 'canceled',
            now,
          },
          metadata(causeOf.get(sessionId) ?? causationId),
          50,
        );
        if (released.ok) position = released.position ?? released.observed ?? position;
      }
      if (position)
        await deps.runner.waitFor(position, deps.config.consistencyWaitMs, ['sessions', 'calendar']);
    } catch (err) {
      deps.log.warn('sessions of a canceled payment left to the booking process', {
        paymentId: moved.paymentId,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  };

  /**
   * The provider's outcome (`received`, `failed`) of a checkout left to it after its booking lost every
   * session: the payment is settled now (refunded, or canceled), before the answer, as the booking process
   * does a moment later (it then finds it settled), so the answer and the caller's next reads tell the
   * integration to pay the money back. Recorded as the system's follow-up of the provider's move, in the
   * request's correlation. A failure is left to the booking process: the provider's move is stored already.
   * Resolves to the payment's state after it (also when the booking process settled it first), or null.
   */
  const settleGoneBooking = async (
    ctx: Context,
    moved: PaymentStatusChanged['data'],
    causationId?: string,
  ) => {
    try {
      const gone = await readState(deps.store, bookingStream(moved.groupId), booking);
      if (
        !gone.groupId ||
        [...gone.sessions.values()].some((x) => x.state !== 'declined' && x.state !== 'canceled')
      )
        return null;
      const { requestId, correlationId } = metadataOf(ctx);
      const outcome = await handleCommand(
        deps.store,
        paymentStream(moved.paymentId),
        paymentDecider,
        { type: 'SettleCanceledBooking', paymentId: moved.paymentId, now: deps.clock().toISOString() },
        { requestId, correlationId, ...(causationId ? { causationId } : {}), actor: SYSTEM_ACTOR },
        50,
      );
      // Nothing decided when the booking process got there first: its move is answered then, read here.
      if (!outcome.ok) return null;
      const position = outcome.position ?? outcome.observed;
      if (position) await deps.runner.waitFor(position, deps.config.consistencyWaitMs, PAYMENT_READ_MODELS);
      return outcome.state.payment ?? null;
    } catch (err) {
      deps.log.warn('payment of a booking with no session left to the booking process', {
        paymentId: moved.paymentId,
        error: err instanceof Error ? err.message : String(err),
      });
      return null;
    }
  };

  const run = async (ctx: Context, paymentId: string, command: PaymentCommand) => {
    const { events, eventIds, state } = await runCommand(
      deps,
      ctx,
      paymentStream(paymentId),
      paymentDecider,
      command,
      PAYMENT_READ_MODELS,
    );
    // A duplicate or stale provider event decides nothing; the answer is then the unchanged payment.
    if (!state.payment) throw paymentNotFound();
    // The `Payment` record has no id: the header names the payment answered (17's choice), kept for replays.
    ctx.set('X-Payment-Id', paymentId);
    const at = events.findIndex(
      (e) =>
        e.type === 'PaymentStatusChanged' &&
        cancelsBooking((e as PaymentStatusChanged).data.from, (e as PaymentStatusChanged).data.to),
    );
    if (at >= 0) await cancelBooking(ctx, (events[at] as PaymentStatusChanged).data, eventIds[at]);
    const outcome = events.findIndex(
      (e) =>
        e.type === 'PaymentStatusChanged' &&
        ['received', 'failed'].includes((e as PaymentStatusChanged).data.to),
    );
    if (outcome >= 0) {
      const settled = await settleGoneBooking(
        ctx,
        (events[outcome] as PaymentStatusChanged).data,
        eventIds[outcome],
      );
      if (settled) return toPaymentOut(settled);
    }
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
