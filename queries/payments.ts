import Router from '@koa/router';
import type { PaymentRecord } from '../commands/payments/decider';
import { PaymentIdPath } from '../commands/payments/codecs';
import type { AppDeps } from '../src/deps';
import { authenticated, currentPrincipal } from '../src/http/auth';
import { decode } from '../src/http/validation';
import { paymentNotFound, toPaymentOut } from '../src/resources/payment';

const iso = (v: unknown) => new Date(v as string | Date).toISOString();

interface PaymentRow {
  id: string;
  groupId: string;
  status: PaymentRecord['status'];
  price: number;
  currency: string;
  methodId: number;
  coachId: string;
  clientId: string;
  serviceId: string;
  clientSecret: string | null;
  checkout: Record<string, unknown> | null;
  expiresAt: Date | string;
}
interface HistoryRow {
  from: string;
  to: string;
  at: Date | string;
  reason: string;
  actor: { userId: string; role: string } | null;
}

export function paymentQueries(deps: AppDeps): Router {
  const router = new Router();
  // Owner's view: the client or coach of the payment, admins and auditors. Anyone else gets the same
  // 404 as for an unknown id, so ids cannot be probed.
  router.get('/api/v1/payment/:payment_id', authenticated(), async (ctx) => {
    const id = decode(PaymentIdPath, ctx.params, 'path').payment_id.toLowerCase();
    const res = await deps.db.query<PaymentRow>(
      `SELECT id, group_id AS "groupId", status, price, currency, method_id AS "methodId", coach_id AS "coachId",
         client_id AS "clientId", service_id AS "serviceId", client_secret AS "clientSecret", checkout,
         expires_at AS "expiresAt"
       FROM payments WHERE id = $1`,
      [id],
    );
    const row = res.rows[0];
    const me = currentPrincipal(ctx);
    const privileged = me.roles.some((r) => r === 'admin' || r === 'auditor');
    if (!row || !(privileged || me.userId === row.clientId || me.userId === row.coachId))
      throw paymentNotFound();
    const history = await deps.db.query<HistoryRow>(
      `SELECT from_status AS "from", to_status AS "to", at, reason, actor
       FROM payment_history WHERE payment_id = $1 ORDER BY revision`,
      [id],
    );
    // The provider's client secret and checkout data drive the payer's checkout: the payer's alone.
    const payer = me.userId === row.clientId;
    ctx.body = {
      id: row.id,
      groupId: row.groupId,
      ...toPaymentOut({
        ...row,
        price: Number(row.price),
        clientSecret: payer ? (row.clientSecret ?? undefined) : undefined,
        checkout: payer ? (row.checkout ?? undefined) : undefined,
      }),
      expiresAt: iso(row.expiresAt),
      history: history.rows.map((h) => ({ ...h, at: iso(h.at) })),
    };
  });
  return router;
}
