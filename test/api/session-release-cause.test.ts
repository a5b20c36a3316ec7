import { randomUUID } from 'node:crypto';
import { booking } from '../../commands/booking/decider';
import { bookingStream } from '../../commands/booking/events';
import { SYSTEM_ACTOR } from '../../projections/bookingProcess';
import { handleCommand } from '../../src/commandHandler';
import type { EventStore } from '../../src/eventstore/types';
import { type marketplace } from '../support/marketplace';
import { systemOnSteppedStore } from '../support/storeRaces';
import { testEventStoreOnEsdb, type TestSystem } from '../support/system';

/**
 * A decline or cancel frees the session's slot itself when it gets there before the booking process (busy,
 * or running on another instance): that release is the session change's follow-up, and the correlation
 * chain shows it so (its `causationId`), as it does when the booking process frees the slot. Stepped here
 * by holding the booking process's releases back until the request has answered. SQL stores only.
 */
const describeSql = testEventStoreOnEsdb() ? describe.skip : describe;
if (testEventStoreOnEsdb())
  console.log(
    'session-release-cause: skipped on EventStoreDB, which writes no streams together (the race is stepped on the SQL stores)',
  );
const NOW = new Date('2026-12-01T08:00:00Z');

describeSql('a slot freed by the decline or cancel request itself', () => {
  let t: TestSystem;
  let m: ReturnType<typeof marketplace>;
  let inner: EventStore;
  let close: () => Promise<void>;
  /** The booking process's slot releases wait for this (the request's go through). */
  let held: Promise<void> = Promise.resolve();
  /** Run right after a payment's move to canceled is stored, before the request goes on. */
  let beforePaymentAnswer: ((moved: { id?: string; data: unknown }) => Promise<void>) | undefined;

  beforeAll(async () => {
    ({ t, m, inner, close } = await systemOnSteppedStore(NOW, (real) => ({
      append: async (name, events, opts) => {
        // The booking process's releases carry no request id; a request's own follow-ups do.
        if (events.some((e) => e.type === 'SlotsReleased' && !e.metadata?.requestId)) await held;
        const written = await real.append(name, events, opts);
        const canceled = events.find(
          (e) => e.type === 'PaymentStatusChanged' && (e.data as { to: string }).to === 'canceled',
        );
        if (canceled && beforePaymentAnswer) await beforePaymentAnswer(canceled);
        return written;
      },
    })));
  });
  afterAll(() => close?.());

  it('names the session change as its cause', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    let go = () => undefined as void;
    held = new Promise((r) => (go = r));
    try {
      const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
        token: client.token,
        body: { slots: ['2026-12-02T10:00:00'] },
      });
      const { id: sessionId, groupId } = booked.body[0] as { id: string; groupId: string };
      const declined = await t.request('POST', `/api/v1/session/${sessionId}/decline`, {
        token: coach.token,
      });
      expect(declined.status).toBe(200);
      const change = (await inner.readStream(`booking-${groupId}`)).events.find(
        (e) => e.type === 'SessionDeclined',
      )!;
      const released = (await inner.readStream(`calendar-${coach.id}`)).events.filter(
        (e) => e.type === 'SlotsReleased',
      );
      expect(released).toHaveLength(1);
      expect(released[0]!.metadata).toMatchObject({
        causationId: change.id,
        actor: { userId: coach.id, role: 'coach' },
      });
      const auditor = t.token(randomUUID(), ['auditor']);
      const chain = await t.request('GET', `/api/v1/audit/events/${change.id}/chain`, { token: auditor });
      expect(chain.body.effects.map((e: { eventId: string }) => e.eventId)).toContain(released[0]!.id);
      const back = await t.request('GET', `/api/v1/audit/events/${released[0]!.id}/chain`, {
        token: auditor,
      });
      expect(back.body.causes.map((e: { eventId: string }) => e.eventId)).toEqual([change.id]);
    } finally {
      go();
    }
  });

  it('a payment cancel whose sessions the booking process canceled first frees their slots in the name of those cancellations', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 2 });
    const client = await m.client();
    let go = () => undefined as void;
    held = new Promise((r) => (go = r));
    try {
      const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
        token: client.token,
        body: { slots: ['2026-12-03T10:00:00', '2026-12-03T12:00:00'] },
      });
      expect(booked.status).toBe(200);
      const { paymentId, groupId } = booked.body[0] as { paymentId: string; groupId: string };
      // The booking process (another instance, say) cancels the sessions as soon as the move is stored,
      // before the request gets to them; its slot releases are held back.
      beforePaymentAnswer = async (moved) => {
        beforePaymentAnswer = undefined;
        const outcome = await handleCommand(
          inner,
          bookingStream(groupId),
          booking,
          { type: 'CancelGroup', reason: 'payment_canceled', now: NOW.toISOString() },
          { causationId: moved.id!, correlationId: moved.id!, actor: SYSTEM_ACTOR },
        );
        expect(outcome.ok && outcome.events).toHaveLength(2);
      };
      const cancel = await t.request('POST', `/api/v1/payment/private/payment/${paymentId}/cancel`, {
        token: m.service(),
      });
      expect(cancel.status).toBe(200);
      const changes = (await inner.readStream(`booking-${groupId}`)).events.filter(
        (e) => e.type === 'SessionCanceled',
      );
      expect(changes).toHaveLength(2);
      const released = (await inner.readStream(`calendar-${coach.id}`)).events.filter(
        (e) => e.type === 'SlotsReleased',
      );
      expect(released).toHaveLength(2);
      // Each release caused by its session's cancellation, as when the booking process frees it.
      const causeOf = new Map(changes.map((c) => [(c.data as { sessionId: string }).sessionId, c.id]));
      for (const r of released) {
        const [sessionId] = (r.data as { sessionIds: string[] }).sessionIds;
        expect(r.metadata.causationId).toBe(causeOf.get(sessionId!));
      }
      const auditor = t.token(randomUUID(), ['auditor']);
      const back = await t.request('GET', `/api/v1/audit/events/${released[0]!.id}/chain`, {
        token: auditor,
      });
      expect(back.body.causes.map((e: { type: string }) => e.type)).toEqual([
        'PaymentStatusChanged',
        'SessionCanceled',
      ]);
    } finally {
      beforePaymentAnswer = undefined;
      go();
    }
  });
});
