import Router from '@koa/router';
import * as t from 'io-ts';
import { PaymentIdPath } from '../commands/payments/codecs';
import { paymentDecider } from '../commands/payments/decider';
import { paymentStream, type PaymentEvent } from '../commands/payments/events';
import type { AppDeps } from '../src/deps';
import type { RecordedEvent } from '../src/eventstore/types';
import { requireRole } from '../src/http/auth';
import { IsoInstant, decode } from '../src/http/validation';
import { paymentNotFound, toPaymentOut } from '../src/resources/payment';
import { eventOut } from './audit';
import { redacted } from './auditRedaction';

export const AuditQuery = t.partial({ at: IsoInstant });

/** When the event happened in the domain (the clock of the command that decided it). */
const domainTime = (e: RecordedEvent): number => {
  const d = e.data as { at?: string; createdAt?: string };
  return Date.parse(d.at ?? d.createdAt ?? e.createdAt.toISOString());
};

export function paymentAuditQueries(deps: AppDeps): Router {
  const router = new Router();
  // Auditor replay: the raw stream, and the payment folded from the events that had happened by `at`.
  router.get('/api/v1/audit/payments/:payment_id/events', requireRole('admin', 'auditor'), async (ctx) => {
    const id = decode(PaymentIdPath, ctx.params, 'path').payment_id.toLowerCase();
    const { at } = decode(AuditQuery, ctx.query, 'query');
    // Secrets redacted before folding too: `stateAt` shows that a client secret was set, not its value.
    const events = (await deps.store.readStream(paymentStream(id))).events.map(redacted);
    if (!events.length) throw paymentNotFound();
    const until = at ? Date.parse(at) : Infinity;
    // The longest prefix of the stream whose events had all happened by `at`. Not a filter: an event is
    // decided on everything before it, so one whose clock ran behind an earlier one's (instances' clocks
    // differ) did not happen before that earlier one, and folding it without it makes a state no revision had.
    const ahead = events.findIndex((e) => domainTime(e) > until);
    const upTo = ahead < 0 ? events : events.slice(0, ahead);
    const state = upTo
      .map((e) => ({ type: e.type, data: e.data }) as PaymentEvent)
      .reduce(paymentDecider.evolve, paymentDecider.initialState());
    const last = upTo[upTo.length - 1];
    ctx.body = {
      paymentId: id,
      at: at ? new Date(until).toISOString() : null,
      // As every audit shows an event (eventId for its correlation chain, its log position), plus `createdAt`.
      events: events.map((e) => ({ ...eventOut(e), createdAt: e.createdAt.toISOString() })),
      stateAt:
        state.payment && last
          ? {
              id: state.payment.id,
              groupId: state.payment.groupId,
              ...toPaymentOut(state.payment),
              // The deadline, as the owner's view shows it (the expiry's reason to cancel).
              expiresAt: new Date(state.payment.expiresAt).toISOString(),
              revision: Number(last.revision),
              lastChange: {
                eventId: last.id,
                type: last.type,
                at: new Date(domainTime(last)).toISOString(),
                reason: (last.data as { reason?: string }).reason ?? null,
                actor: last.metadata.actor ?? null,
              },
            }
          : null,
    };
  });
  return router;
}
