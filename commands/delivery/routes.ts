import Router from '@koa/router';
import * as t from 'io-ts';
import type { AppDeps } from '../../src/deps';
import { currentPrincipal, requireRole } from '../../src/http/auth';
import { metadataOf } from '../../src/http/command';
import { conflict, notFound } from '../../src/http/errors';
import { decode, refine } from '../../src/http/validation';
import { deliveries } from '../../src/mail/delivery';
import { emailDeliveryById } from '../../src/readModels/emailDeliveries';

/** A delivery's id is its ledger stream: `delivery-<causing event id>-<recipient>`. */
export const DeliveryIdPath = t.type({
  delivery_id: refine(
    t.string,
    (s) => /^delivery-[\w-]{1,200}$/.test(s),
    'delivery id',
    'Input should be a delivery id (delivery-<event id>-<recipient>)',
  ),
});

/**
 * The operator's "try again" for a failed e-mail (admin page): the ledger requeues it, and it is sent at
 * once through the same claim-and-send path as every retry (same Message-ID). Answers the delivery after.
 */
export function deliveryCommands(deps: AppDeps): Router {
  const router = new Router();
  router.post('/api/v1/admin/emails/:delivery_id/retry', requireRole('admin'), async (ctx) => {
    const { delivery_id: id } = decode(DeliveryIdPath, ctx.params, 'path');
    // Decided on the ledger stream; the read model only shapes the reply.
    if ((await deps.store.readStream(id)).revision === 'no_stream')
      throw notFound('email_delivery_not_found', 'no such e-mail');
    const ledger = deliveries({ ...deps, leaseMs: deps.config.mailLeaseMs });
    const metadata = metadataOf(ctx);
    if (!(await ledger.requeue(id, currentPrincipal(ctx).userId, metadata)))
      throw conflict('delivery_not_failed', 'only a failed e-mail can be retried');
    await ledger.retry(id, metadata); // in a sending slot, like every other send
    await deps.runner.waitFor(await deps.store.headPosition(), deps.config.consistencyWaitMs, [
      'email-deliveries',
    ]);
    ctx.body = await emailDeliveryById(deps.db, id);
  });
  return router;
}
