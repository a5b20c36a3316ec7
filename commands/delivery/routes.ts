import Router from '@koa/router';
import * as t from 'io-ts';
import type { AppDeps } from '../../src/deps';
import { currentPrincipal, requireRole } from '../../src/http/auth';
import { metadataOf } from '../../src/http/command';
import { conflict, notFound } from '../../src/http/errors';
import { idempotent } from '../../src/http/idempotency';
import { describeSchema } from '../../src/http/openapi/jsonSchema';
import { decode, refine } from '../../src/http/validation';
import { deliveries } from '../../src/mail/delivery';
import { emailDeliveryById } from '../../src/readModels/emailDeliveries';

/** A delivery's id is its ledger stream: `delivery-<causing event id>-<recipient>`. */
const DELIVERY_ID = /^delivery-[\w-]{1,200}$/;
export const DeliveryIdPath = t.type({
  delivery_id: describeSchema(
    refine(
      t.string,
      (s) => DELIVERY_ID.test(s),
      'delivery id',
      'Input should be a delivery id (delivery-<event id>-<recipient>)',
    ),
    {
      type: 'string',
      pattern: DELIVERY_ID.source,
      description: "the delivery's ledger stream, `delivery-<event id>-<recipient>` (not a uuid)",
    },
  ),
});

/**
 * The operator's "try again" for a failed e-mail (admin page): the ledger requeues it, and it is sent at
 * once through the same claim-and-send path as every retry (same Message-ID). Answers the delivery after.
 */
export function deliveryCommands(deps: AppDeps): Router {
  const router = new Router();
  // Idempotency-Key: a repeat after a lost answer replays it (not 409 for the e-mail the first one sent);
  // a run again after a crash finds its requeue in the ledger by the request's tag (src/commandHandler.ts).
  router.post(
    '/api/v1/admin/emails/:delivery_id/retry',
    requireRole('admin'),
    idempotent(deps),
    async (ctx) => {
      const { delivery_id: id } = decode(DeliveryIdPath, ctx.params, 'path');
      // Decided on the ledger stream; the read model only shapes the reply.
      if ((await deps.store.readStream(id)).revision === 'no_stream')
        throw notFound('email_delivery_not_found', 'no such e-mail');
      const ledger = deliveries({ ...deps, leaseMs: deps.config.mailLeaseMs });
      const metadata = metadataOf(ctx);
      if (!(await ledger.requeue(id, currentPrincipal(ctx).userId, metadata)))
        throw conflict('delivery_not_failed', 'only a failed e-mail can be retried');
      // The claim and its outcome are not the keyed request's command: without its tag, a claim would be
      // "found" in the requeue the request just stored and the e-mail sent unclaimed (handleCommand takes
      // a stream's events with the request's tag as that request's outcome).
      const sending = { ...metadata };
      delete sending.idempotencyTag;
      await ledger.retry(id, sending); // in a sending slot, like every other send
      await deps.runner.waitFor(await deps.store.headPosition(), deps.config.consistencyWaitMs, [
        'email-deliveries',
      ]);
      ctx.body = await emailDeliveryById(deps.db, id);
    },
  );
  return router;
}
