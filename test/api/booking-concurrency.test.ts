import { createEsdbEventStore } from '../../src/eventstore/esdb';
import type { EventStore } from '../../src/eventstore/types';
import { eventStoreDbPlan, startEventStoreDbContainer } from '../support/eventstoredb';
import { marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * No double booking, proven over HTTP: bursts of concurrent requests for one slot. Runs on the SQL event
 * store of this run (PostgreSQL with DATABASE_URL, PGlite without), and on EventStoreDB when reachable.
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

noDoubleBooking(process.env.DATABASE_URL ? 'PostgreSQL event store' : 'PGlite event store');

const esdb = eventStoreDbPlan();
if (esdb.skipReason) console.warn(`booking concurrency on EventStoreDB ${esdb.skipReason}`);
// Unreachable, the same cases are listed as skipped under a title that says why.
noDoubleBooking(
  esdb.skipReason ? `EventStoreDB event store; ${esdb.skipReason}` : 'EventStoreDB event store',
  async () => {
    if (esdb.url) return { store: createEsdbEventStore(esdb.url) };
    const c = await startEventStoreDbContainer();
    return { store: createEsdbEventStore(c.url), stop: c.stop };
  },
  esdb.skipReason ? describe.skip : describe,
);
