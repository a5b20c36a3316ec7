import { randomBytes, randomUUID } from 'node:crypto';
import { allProjections } from '../../projections';
import { createPgDatabase } from '../../src/db/pg';
import { readTokens } from '../../src/readModels/readVersions';
import { rebuildReadModels } from '../../src/rebuild/rebuild';
import { eventually } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';
import { apiSuite, type Marketplace } from '../support/apiSuite';

/**
 * Availability (6) and the coach profile (13) answer from a per-process cache checked against
 * `read_versions` on every read (queries/availability.ts, queries/coachProfile.ts). Each test reads first,
 * so the answer is cached, then changes something and reads once more: the change must show on that very
 * next read after the write's reply (or, for changes made by a process manager, on the next read after the
 * read model has it), never a cached answer from before.
 */
let t: TestSystem;
let m: Marketplace;
const clock = apiSuite('2026-12-01T08:00:00Z', (system, market) => {
  t = system;
  m = market;
});

const DAY = '2026-12-02'; // a Wednesday
const availability = (serviceId: string, query = `from_date=${DAY}&to_date=${DAY}`, token?: string) =>
  t.request('GET', `/api/v1/service/${serviceId}/availability?${query}`, { token });
const slotsOf = async (serviceId: string, query?: string, token?: string) => {
  const res = await availability(serviceId, query, token);
  expect(res.status).toBe(200);
  return (res.body.slots as { slot: string }[]).map((s) => s.slot);
};
const at = (hour: number, day = DAY) => `${day}T${String(hour).padStart(2, '0')}:00:00`;
const hours = (from: number, to: number, day = DAY) =>
  Array.from({ length: to - from }, (_, i) => at(from + i, day));
const book = (token: string, serviceId: string, body: Record<string, unknown>) =>
  t.request('POST', `/api/v1/service/${serviceId}`, { token, body });
const act = (token: string, sessionId: string, action: string, body?: unknown) =>
  t.request('POST', `/api/v1/session/${sessionId}/${action}`, { token, body });
const profile = async (coachId: string, token?: string) => {
  const res = await t.request('GET', `/api/v1/coach/${coachId}/profile`, { token });
  expect(res.status).toBe(200);
  return res.body;
};
const holdGone = (sessionId: string) =>
  eventually(
    () => t.database.db.query('SELECT 1 FROM slot_holds WHERE session_id = $1', [sessionId]),
    (r) => r.rowCount === 0,
  );
const addAddress = async (token: string, name: string, place: { lat: number; lng: number }) => {
  const res = await t.request('POST', '/api/v1/nav/addreses', {
    token,
    body: { ...place, name, address: `${name} 1, Berlin` },
  });
  expect(res.status).toBe(200);
};

describe('cached availability (6) shows every change on the next read', () => {
  it('a booking takes its slot; a decline, a cancel and a canceled payment free it', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    expect(await slotsOf(serviceId)).toEqual(hours(9, 17));
    expect(await slotsOf(serviceId)).toEqual(hours(9, 17)); // served from the cache

    const first = await book(client.token, serviceId, { slots: [at(10)] });
    expect(first.status).toBe(200);
    expect(await slotsOf(serviceId)).not.toContain(at(10));
    expect((await act(coach.token, first.body[0].id, 'decline', { reason: 'busy' })).status).toBe(200);
    expect(await slotsOf(serviceId)).toContain(at(10));

    const second = await book(client.token, serviceId, { slots: [at(11)] });
    expect(await slotsOf(serviceId)).not.toContain(at(11));
    expect((await act(client.token, second.body[0].id, 'cancel', {})).status).toBe(200);
    expect(await slotsOf(serviceId)).toContain(at(11));

    // The booking process frees the slots of a canceled payment: shown as soon as the read model has it.
    const third = await book(client.token, serviceId, { slots: [at(12)] });
    expect(await slotsOf(serviceId)).not.toContain(at(12));
    const cancel = await t.request(
      'POST',
      `/api/v1/payment/private/payment/${third.body[0].paymentId}/cancel`,
      {
        token: m.service(),
      },
    );
    expect(cancel.status).toBe(200);
    await holdGone(third.body[0].id);
    expect(await slotsOf(serviceId)).toContain(at(12));
  });

  it('an expired payment frees its slot', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const day = '2026-12-10';
    const query = `from_date=${day}&to_date=${day}`;
    const res = await book(client.token, serviceId, { slots: [at(10, day)] });
    expect(res.status).toBe(200);
    expect(await slotsOf(serviceId, query)).not.toContain(at(10, day));
    clock.set('2026-12-05T08:00:00Z'); // past the payment's deadline, before the session
    expect(await slotsOf(serviceId, query)).not.toContain(at(10, day));
    await t.system.sweepExpiredPayments();
    await holdGone(res.body[0].id);
    expect(await slotsOf(serviceId, query)).toContain(at(10, day));
  });

  it('a schedule change, a service change and a rejected service', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    expect(await slotsOf(serviceId)).toEqual(hours(9, 17));
    const lunch = [{ start: '12:00', end: '14:00' }];
    const schedule = await t.request('PUT', '/api/v1/coach/schedule', {
      token: coach.token,
      body: { timezone: 'Europe/Berlin', weekly: { wednesday: lunch } },
    });
    expect(schedule.status).toBe(200);
    expect(await slotsOf(serviceId)).toEqual([at(12), at(13)]);

    const longer = await t.request('PUT', `/api/v1/coach/services/${serviceId}`, {
      token: coach.token,
      body: { sessionMinutesDuration: 120 },
    });
    expect(longer.status).toBe(200);
    const after = await availability(serviceId);
    expect(after.body.minutesDuration).toBe(120);
    expect(after.body.slots.map((s: { slot: string }) => s.slot)).toEqual([at(12)]);

    const rejected = await t.request('POST', `/api/v1/admin/services/${serviceId}/reject`, {
      token: m.admin(),
      body: { reason: 'no' },
    });
    expect(rejected.status).toBe(200);
    expect((await availability(serviceId)).status).toBe(404);
    // Its coach still sees it (never from a cache: an answer for one caller only).
    expect((await availability(serviceId, undefined, coach.token)).status).toBe(200);
  });

  it("the coach's default address changes the travel to the client's place", async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const query = `from_date=${DAY}&to_date=${DAY}&lat=52.5163&lng=13.3777`; // Brandenburger Tor
    expect((await availability(serviceId, query)).body.minutesTravel).toBe(0);
    expect((await availability(serviceId, query)).body.minutesTravel).toBe(0); // cached
    await addAddress(coach.token, 'Studio', { lat: 52.5219, lng: 13.4132 }); // Alexanderplatz
    expect((await availability(serviceId, query)).body.minutesTravel).toBeGreaterThan(0);
  });

  it("a client's packages: booked, then used up, on the client's next read", async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 2, price: 60, expiresInDays: 1 });
    const client = await m.client();
    const packages = async () => (await availability(serviceId, undefined, client.token)).body.packages;
    expect(await packages()).toEqual([]);
    expect(await packages()).toEqual([]); // cached
    const first = await book(client.token, serviceId, { slots: [at(10)] });
    expect(first.status).toBe(200);
    expect(await packages()).toMatchObject([{ packageId: first.body[0].groupId, remainingSessions: 1 }]);
    expect(await packages()).toHaveLength(1); // cached
    const rest = await book(client.token, serviceId, { slots: [at(11)], packageId: first.body[0].groupId });
    expect(rest.status).toBe(200);
    expect(await packages()).toEqual([]); // none left to book
    // Another client's packages are their own.
    const other = await m.client();
    expect((await availability(serviceId, undefined, other.token)).body.packages).toEqual([]);
  });
});

describe('cached availability (6) is recomputed when time alone changes it', () => {
  it('a slot leaves once the minimum notice passes its start', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { minimumNoticeHours: 24 });
    // now + 24 h is 09:00 Berlin on the 2nd: every slot of the day can still be booked.
    expect(await slotsOf(serviceId)).toEqual(hours(9, 17));
    expect(await slotsOf(serviceId)).toEqual(hours(9, 17)); // cached
    clock.set('2026-12-01T08:00:01Z');
    expect(await slotsOf(serviceId)).toEqual(hours(10, 17));
    clock.set('2026-12-01T08:00:00Z'); // a clock set back is not served a later answer either
    expect(await slotsOf(serviceId)).toEqual(hours(9, 17));
  });

  it('a slot enters once the booking window reaches it', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { minimumNoticeHours: 0, bookingWindowDays: 1 });
    // The window ends at 09:00 Berlin on the 2nd (08:00Z): only that slot.
    expect(await slotsOf(serviceId)).toEqual([at(9)]);
    expect(await slotsOf(serviceId)).toEqual([at(9)]); // cached
    clock.set('2026-12-01T09:00:00Z');
    expect(await slotsOf(serviceId)).toEqual(hours(9, 11));
  });

  it('the default range starts again at local midnight', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    clock.set('2026-12-01T22:30:00Z'); // 23:30 in Berlin
    expect((await availability(serviceId, '')).body.fromDate).toBe('2026-12-01');
    expect((await availability(serviceId, '')).body.fromDate).toBe('2026-12-01'); // cached
    clock.set('2026-12-01T23:30:00Z'); // 00:30 in Berlin
    expect((await availability(serviceId, '')).body.fromDate).toBe('2026-12-02');
  });

  it('the default range starts again at local midnight after a day whose midnight DST skipped', async () => {
    const coach = await m.coach({ timezone: 'America/Santiago' });
    const serviceId = await m.offering(coach);
    // 6 September 2026 starts at 01:00 in Santiago (00:00 -04:00 became 01:00 -03:00); the 7th at 00:00.
    clock.set('2026-09-06T12:00:00Z');
    expect((await availability(serviceId, '')).body.fromDate).toBe('2026-09-06');
    expect((await availability(serviceId, '')).body.fromDate).toBe('2026-09-06'); // cached
    clock.set('2026-09-07T03:30:00Z'); // 00:30 on the 7th in Santiago
    expect((await availability(serviceId, '')).body.fromDate).toBe('2026-09-07');
  });

  it('the default range starts again at the first of two local midnights (DST repeats it)', async () => {
    const coach = await m.coach({ timezone: 'America/Havana' });
    const serviceId = await m.offering(coach);
    // 1 November 2026 starts twice in Havana: 00:00 -04:00 (04:00Z), and again at 01:00 -04:00, set back to
    // 00:00 -05:00 (05:00Z). Its date begins at the first.
    clock.set('2026-10-31T12:00:00Z');
    expect((await availability(serviceId, '')).body.fromDate).toBe('2026-10-31');
    expect((await availability(serviceId, '')).body.fromDate).toBe('2026-10-31'); // cached
    clock.set('2026-11-01T04:30:00Z'); // 00:30 on the 1st, its first time round
    expect((await availability(serviceId, '')).body.fromDate).toBe('2026-11-01');
  });

  it('a package bought now may take place a day later from the first of two local midnights', async () => {
    const hours = [{ start: '09:00', end: '17:00' }];
    const coach = await m.coach({
      timezone: 'America/Havana',
      weekly: Object.fromEntries(
        ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'].map((d) => [d, hours]),
      ),
    });
    const serviceId = await m.offering(coach, { numberOfSessions: 2, price: 60, expiresInDays: 1 });
    const query = 'from_date=2026-11-02&to_date=2026-11-02';
    clock.set('2026-10-31T12:00:00Z'); // a package bought on the 31st takes place by the 1st
    expect(await slotsOf(serviceId, query)).toEqual([]);
    expect(await slotsOf(serviceId, query)).toEqual([]); // cached
    clock.set('2026-11-01T04:30:00Z'); // bought on the 1st (its first 00:30): by the 2nd
    expect(await slotsOf(serviceId, query)).toHaveLength(8);
  });

  it('a package is no longer offered once it expires', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 2, price: 60, expiresInDays: 1 });
    const client = await m.client();
    const first = await book(client.token, serviceId, { slots: [at(10)] });
    expect(first.status).toBe(200);
    const query = 'from_date=2026-12-04&to_date=2026-12-04';
    const packages = async () => (await availability(serviceId, query, client.token)).body.packages;
    expect(await packages()).toHaveLength(1);
    expect(await packages()).toHaveLength(1); // cached
    clock.set('2026-12-03T00:00:00Z'); // the end of the 2nd in Berlin, the package's last day
    expect(await packages()).toEqual([]);
  });
});

describe('version rows', () => {
  it('are not made for made-up coach ids: an anonymous 404 writes nothing (the table is never pruned)', async () => {
    const rows = async () =>
      Number(
        (await t.database.db.query<{ n: string }>('SELECT count(*)::text AS n FROM read_versions')).rows[0]!
          .n,
      );
    const before = await rows();
    for (let i = 0; i < 20; i++) {
      const res = await t.request('GET', `/api/v1/coach/${randomUUID()}/profile`);
      expect(res.status).toBe(404);
      const avail = await t.request('GET', `/api/v1/service/${randomUUID()}/availability`);
      expect(avail.status).toBe(404);
    }
    expect(await rows()).toBe(before);
  });
});

describe('cached coach profile (13) shows every change on the next read', () => {
  /** The profile's media (no kind) or a picture of its gallery (kind image). */
  async function upload(token: string, kind?: 'image') {
    const form = new FormData();
    if (kind) form.append('kind', kind);
    form.append('file', new Blob([randomBytes(300)], { type: 'image/png' }), 'photo.png');
    const res = await fetch(`${t.baseUrl}/api/v1/storage/profile/media`, {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(200);
  }

  it('profile, services, media, places, completed sessions and reviews', async () => {
    const coach = await m.coach();
    const client = await m.client();
    expect(await profile(coach.id)).toMatchObject({ services: [], sessionCount: 0, rating: null });
    expect((await profile(coach.id)).images).toEqual([]); // cached

    const renamed = await t.request('PUT', `/api/v1/users/${coach.id}`, {
      token: m.service(),
      body: { firstName: 'Renamed', lastName: 'Coach', email: 'renamed@example.com', type: 'coach' },
    });
    expect(renamed.status).toBe(200);
    expect((await profile(coach.id)).firstName).toBe('Renamed');

    const serviceId = await m.offering(coach); // created, then approved
    expect((await profile(coach.id)).services.map((s: { id: string }) => s.id)).toEqual([serviceId]);
    const changed = await t.request('PUT', `/api/v1/coach/services/${serviceId}`, {
      token: coach.token,
      body: { price: 55 },
    });
    expect(changed.status).toBe(200);
    expect((await profile(coach.id)).minPrice).toBe(55);

    expect((await profile(coach.id)).mediaUrl).toBeFalsy();
    await upload(coach.token);
    expect((await profile(coach.id)).mediaUrl).toBeTruthy();
    await upload(coach.token, 'image');
    expect((await profile(coach.id)).images).toHaveLength(1);

    expect((await profile(coach.id, client.token)).distance).toBeNull();
    await addAddress(coach.token, 'Studio', { lat: 52.5219, lng: 13.4132 });
    expect((await profile(coach.id, client.token)).distance).toBeNull(); // the client has no place yet
    await addAddress(client.token, 'Home', { lat: 52.5163, lng: 13.3777 });
    expect((await profile(coach.id, client.token)).distance).toBeGreaterThan(0);
    expect((await profile(coach.id)).distance).toBeNull(); // no caller, no distance

    const session = (await book(client.token, serviceId, { slots: [at(10)] })).body[0];
    expect((await act(coach.token, session.id, 'approve')).status).toBe(200);
    clock.set('2026-12-02T10:05:00Z');
    expect((await act(coach.token, session.id, 'complete')).status).toBe(200);
    expect((await profile(coach.id)).sessionCount).toBe(1);
    expect((await act(client.token, session.id, 'review', { rating: 4 })).status).toBe(200);
    expect((await profile(coach.id)).rating).toBe(4);
  });
});

describe('a rebuild that swaps read models in', () => {
  it('makes every cached answer be computed again from the new tables', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const session = (await book(client.token, serviceId, { slots: [at(10)] })).body[0];
    // A read model that drifted from the log (a hold lost), and an answer cached from it.
    await t.database.db.query('DELETE FROM slot_holds WHERE session_id = $1', [session.id]);
    expect(await slotsOf(serviceId)).toContain(at(10));
    expect(await slotsOf(serviceId)).toContain(at(10)); // cached
    const { store, db, mailer, log, clock } = t.system.deps;
    await rebuildReadModels({
      db,
      store,
      projections: allProjections({ store, db, mailer, log, clock }),
      names: ['calendar'],
    });
    expect(await slotsOf(serviceId)).not.toContain(at(10));
  });
});

describe('two instances on one database', () => {
  it("each sees the other's writes on its next read", async () => {
    const db = t.database.url ? createPgDatabase(t.database.url) : t.database.db;
    // The same log too: EventStoreDB (or its double) when the suite runs on it.
    const second = await startTestSystem({
      clock: () => clock.now,
      db,
      ...(t.config.eventStoreUrl ? { env: { EVENTSTORE_URL: t.config.eventStoreUrl } } : {}),
    });
    try {
      const coach = await m.coach();
      const serviceId = await m.offering(coach);
      const client = await m.client();
      const secondSlots = async () =>
        (
          await second.request(
            'GET',
            `/api/v1/service/${serviceId}/availability?from_date=${DAY}&to_date=${DAY}`,
          )
        ).body.slots.map((s: { slot: string }) => s.slot);
      // Both instances cache the answer.
      expect(await slotsOf(serviceId)).toContain(at(10));
      expect(await secondSlots()).toContain(at(10));
      // A booking on the first: the second's next read shows it (read models are shared, and so are versions).
      const first = await book(client.token, serviceId, { slots: [at(10)] });
      expect(first.status).toBe(200);
      expect(await secondSlots()).not.toContain(at(10));
      // A booking on the second: the first's next read shows it.
      const other = await second.request('POST', `/api/v1/service/${serviceId}`, {
        token: client.token,
        body: { slots: [at(11)] },
      });
      expect(other.status).toBe(200);
      expect(await slotsOf(serviceId)).not.toContain(at(11));

      const secondProfile = async () =>
        (await second.request('GET', `/api/v1/coach/${coach.id}/profile`)).body.firstName;
      expect(await secondProfile()).toBe('Coach');
      await t.request('PUT', `/api/v1/users/${coach.id}`, {
        token: m.service(),
        body: { firstName: 'Elsewhere', lastName: 'Coach', email: 'e@example.com', type: 'coach' },
      });
      expect(await secondProfile()).toBe('Elsewhere');
    } finally {
      await second.close();
      if (t.database.url) await db.close();
    }
  });
});

describe('the tokens of cached answers', () => {
  it('name when the server started: after a crash or a failover no token matches one from before', async () => {
    // A crash can take back asynchronous read-model commits, and their transaction ids can come again.
    const { db } = t.system.deps;
    const { rows } = await db.query<{ s: string }>('SELECT pg_postmaster_start_time()::text AS s');
    const tokens = await readTokens(db, ['*']);
    expect(tokens.get('*')).toMatch(/\|epoch=\d+$/);
    expect(tokens.get('*')!.startsWith(`${rows[0]!.s}|`)).toBe(true);
  });
});
