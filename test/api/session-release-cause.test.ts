import { randomUUID } from 'node:crypto';
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

  beforeAll(async () => {
    ({ t, m, inner, close } = await systemOnSteppedStore(NOW, (real) => ({
      append: async (name, events, opts) => {
        if (events.some((e) => e.type === 'SlotsReleased' && e.metadata?.actor?.role === 'system'))
          await held;
        return real.append(name, events, opts);
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
});
