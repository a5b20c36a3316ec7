import { randomUUID } from 'node:crypto';
import { calendarStream } from '../../commands/calendar/events';
import { marketplace } from '../support/marketplace';
import { startTestSystem, testEventStoreLabel, type TestSystem } from '../support/system';

/**
 * No double booking under sustained races: 1,000 booking attempts over HTTP, 100 in flight at a time, on
 * overlapping slots of a 60- and a 90-minute service of one coach. Each attempt is either a booking or a
 * 409; no two holds on the coach's calendar (the log, which decides) overlap, and the sessions read model
 * shows exactly the accepted bookings. Runs on the SQL event store of this run (group commit and the
 * hold's multi-stream append are what it exercises).
 */
const now = new Date('2026-12-01T08:00:00Z');
const ATTEMPTS = 1000;
const IN_FLIGHT = 100;

describe(`1,000 booking attempts racing on one calendar (${testEventStoreLabel()})`, () => {
  let t: TestSystem;
  beforeAll(async () => {
    t = await startTestSystem({ clock: () => now });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it('books each stretch of time at most once and answers every other attempt 409', async () => {
    const m = marketplace(t);
    const coach = await m.coach();
    const hour = await m.offering(coach, { sessionMinutesDuration: 60 });
    const ninety = await m.offering(coach, { sessionMinutesDuration: 90 });
    // Starts every 30 minutes, 09:00-15:00 on two days: a 60- and a 90-minute booking overlap their neighbours.
    const starts = ['2026-12-02', '2026-12-03'].flatMap((day) =>
      Array.from({ length: 13 }, (_, i) => {
        const minutes = 9 * 60 + i * 30;
        return `${day}T${String(Math.floor(minutes / 60)).padStart(2, '0')}:${minutes % 60 ? '30' : '00'}:00`;
      }),
    );
    const attempts = Array.from({ length: ATTEMPTS }, (_, i) => ({
      serviceId: i % 3 ? hour : ninety,
      slot: starts[(i * 7) % starts.length]!,
      token: t.token(randomUUID(), ['client']),
    }));
    const answers: { status: number; body: { error?: string } }[] = [];
    for (let i = 0; i < attempts.length; i += IN_FLIGHT)
      answers.push(
        ...(await Promise.all(
          attempts.slice(i, i + IN_FLIGHT).map((a) =>
            t.request('POST', `/api/v1/service/${a.serviceId}`, {
              token: a.token,
              body: { slots: [a.slot] },
            }),
          ),
        )),
      );

    const accepted = answers.filter((a) => a.status === 200).length;
    const refused = answers.filter(
      (a) => a.status === 409 && (a.body.error === 'slot_unavailable' || a.body.error === 'conflict'),
    ).length;
    expect(accepted + refused).toBe(ATTEMPTS);
    expect(accepted).toBeGreaterThanOrEqual(2); // each day was free: its first attempt books (how many more fit is up to the race)

    // The log decides: the coach's holds, as stored, never overlap.
    const { events } = await t.system.deps.store.readStream(calendarStream(coach.id));
    const holds = events
      .filter((e) => e.type === 'SlotsReserved')
      .flatMap((e) => (e.data as { sessions: { startsAt: string; endsAt: string }[] }).sessions)
      .map((s) => [Date.parse(s.startsAt), Date.parse(s.endsAt)] as const)
      .sort((a, b) => a[0] - b[0]);
    expect(holds).toHaveLength(accepted);
    for (let i = 1; i < holds.length; i++) expect(holds[i]![0]).toBeGreaterThanOrEqual(holds[i - 1]![1]);

    const sessions = await t.system.deps.db.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM sessions WHERE coach_id = $1 AND state <> 'canceled'",
      [coach.id],
    );
    expect(Number(sessions.rows[0]!.n)).toBe(accepted);
  }, 600_000);
});
