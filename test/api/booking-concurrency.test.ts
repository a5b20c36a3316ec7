import { createEsdbEventStore } from '../../src/eventstore/esdb';
import type { EventStore } from '../../src/eventstore/types';
import { eventStoreDbPlan, startEventStoreDb } from '../support/eventstoredb';
import { marketplace } from '../support/marketplace';
import { startTestSystem, testEventStoreLabel, type TestSystem } from '../support/system';

/**
 * No double booking, proven over HTTP: bursts of concurrent requests for one slot. Runs on the SQL event
 * store of this run (see test/support/system.ts), and on EventStoreDB (a server, a container or the double).
 */
const now = new Date('2026-12-01T08:00:00Z');
const BURST = 50;

function noDoubleBooking(
  label: string,
  storeFactory?: () => Promise<{ store: EventStore; stop?: () => Promise<void> }>,
  describeFn: jest.Describe = describe,
) {
  describeFn(`no double booking (${label})`, () => {
    let t: TestSystem;
    let m: ReturnType<typeof marketplace>;
    let stop: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      const external = storeFactory ? await storeFactory() : undefined;
      stop = external?.stop;
      t = await startTestSystem({ clock: () => now, ...(external ? { store: external.store } : {}) });
      m = marketplace(t);
    }, 120_000);
    afterAll(async () => {
      await t?.close();
      await stop?.();
    });

    const burst = async (serviceId: string, slot: string) => {
      const clients = await Promise.all(Array.from({ length: BURST }, () => m.client()));
      return Promise.all(
        clients.map((c) =>
          t.request('POST', `/api/v1/service/${serviceId}`, { token: c.token, body: { slots: [slot] } }),
        ),
      );
    };
    const summary = (results: { status: number; body: any }[]) => ({
      ok: results.filter((r) => r.status === 200).length,
      unavailable: results.filter((r) => r.status === 409 && r.body.error === 'slot_unavailable').length,
      other: results
        .filter((r) => r.status !== 200 && !(r.status === 409 && r.body.error === 'slot_unavailable'))
        .map((r) => [r.status, r.body]),
    });
    const sessionsAt = async (coachId: string, startsAt: string) =>
      Number(
        (
          await t.system.deps.db.query<{ n: string }>(
            "SELECT count(*)::text AS n FROM sessions WHERE coach_id = $1 AND starts_at = $2 AND state <> 'canceled'",
            [coachId, startsAt],
          )
        ).rows[0]!.n,
      );

    it(`${BURST} clients racing for one slot: exactly one booking, the rest 409 slot_unavailable`, async () => {
      const coach = await m.coach();
      const serviceId = await m.offering(coach);
      const s = summary(await burst(serviceId, '2026-12-02T10:00:00'));
      expect(s).toEqual({ ok: 1, unavailable: BURST - 1, other: [] });
      expect(await sessionsAt(coach.id, '2026-12-02T09:00:00Z')).toBe(1);
    }, 120_000);

    it(`${BURST} clients racing for a group slot of 5 seats: exactly 5 bookings`, async () => {
      const coach = await m.coach();
      const serviceId = await m.offering(coach, { groupSession: true, maxGroupSize: 5 });
      const s = summary(await burst(serviceId, '2026-12-02T10:00:00'));
      expect(s).toEqual({ ok: 5, unavailable: BURST - 5, other: [] });
      expect(await sessionsAt(coach.id, '2026-12-02T09:00:00Z')).toBe(5);
    }, 120_000);

    it('clients racing for overlapping slots of two services of one coach: exactly one booking', async () => {
      const coach = await m.coach();
      const hour = await m.offering(coach, { sessionMinutesDuration: 60 });
      const ninety = await m.offering(coach, { sessionMinutesDuration: 90 });
      const clients = await Promise.all(Array.from({ length: BURST }, () => m.client()));
      const results = await Promise.all(
        clients.map((c, i) =>
          t.request('POST', `/api/v1/service/${i % 2 ? hour : ninety}`, {
            token: c.token,
            // 10:00-11:00 and 09:00-10:30 overlap
            body: { slots: [i % 2 ? '2026-12-02T10:00:00' : '2026-12-02T09:00:00'] },
          }),
        ),
      );
      expect(summary(results)).toEqual({ ok: 1, unavailable: BURST - 1, other: [] });
      const live = await t.system.deps.db.query(
        "SELECT id FROM sessions WHERE coach_id = $1 AND state <> 'canceled'",
        [coach.id],
      );
      expect(live.rows).toHaveLength(1);
    }, 120_000);
  });
}

noDoubleBooking(`the test run's event store (${testEventStoreLabel()})`);

// Again on the EventStoreDB adapter (EVENTSTORE_URL, else a container, else the wire-level double).
const esdb = eventStoreDbPlan();
noDoubleBooking(`EventStoreDB event store: ${esdb.kind}`, async () => {
  const server = await startEventStoreDb();
  const store = createEsdbEventStore(server.url);
  return {
    store,
    stop: async () => {
      await store.close();
      await server.stop();
    },
  };
});
