import fs from 'node:fs';
import path from 'node:path';
import { DEMO_IDS, printSummary, seedDemo, type SeedResult } from '../../src/cli/seed';
import { startTestSystem, type TestSystem } from '../support/system';

let t: TestSystem;
let first: SeedResult;
beforeAll(async () => {
  t = await startTestSystem();
  first = await seedDemo({ baseUrl: t.baseUrl, sign: (id, roles) => t.token(id, roles) });
}, 60_000);
afterAll(() => t.close());

describe('npm run seed (seedDemo)', () => {
  it('creates three coaches in their time zones, with a default address each', async () => {
    const zones: string[] = [];
    for (const id of DEMO_IDS.coaches) {
      const profile = await t.request('GET', `/api/v1/coach/${id}/profile`);
      expect(profile.status).toBe(200);
      expect(profile.body.firstName).toEqual(expect.any(String));
      expect(profile.body.services).toHaveLength(2);
      const addresses = await t.request('GET', '/api/v1/nav/addreses', { token: t.token(id, ['coach']) });
      expect(addresses.body).toHaveLength(1);
      expect(addresses.body[0].isDefault).toBe(true);
      const serviceId = first.services.find((s) => s.coachId === id)!.id;
      const availability = await t.request('GET', `/api/v1/service/${serviceId}/availability`);
      expect(availability.status).toBe(200);
      zones.push(availability.body.timezone);
    }
    expect(zones).toEqual(['Europe/Berlin', 'Europe/Lisbon', 'America/New_York']);
  });

  it('creates two approved services per coach: a group service and a 3-session package', async () => {
    for (const id of DEMO_IDS.coaches) {
      const listed = await t.request('GET', `/api/v1/coach/${id}/services`);
      expect(listed.status).toBe(200);
      expect(listed.body).toHaveLength(2);
      expect(listed.body.every((s: { status: string }) => s.status === 'approved')).toBe(true);
      const group = listed.body.find((s: { groupSession: boolean }) => s.groupSession);
      const pkg = listed.body.find((s: { groupSession: boolean }) => !s.groupSession);
      expect(group.maxGroupSize).toBeGreaterThan(1);
      expect(pkg.numberOfSessions).toBe(3);
    }
    expect(first.services).toHaveLength(7); // and the quick check-in coach's one service
    expect(first.createdServices).toBe(7);
  });

  it('publishes schedules, so every service has free slots in the coming week', async () => {
    for (const s of first.services) {
      const res = await t.request('GET', `/api/v1/service/${s.id}/availability`);
      expect(res.status).toBe(200);
      expect(res.body.slots.length).toBeGreaterThan(0);
    }
  });

  it('creates two clients with a default address, and hands out tokens that work', async () => {
    const clients = first.users.filter((u) => u.role === 'client');
    expect(clients.map((c) => c.id)).toEqual([...DEMO_IDS.clients]);
    for (const c of clients) {
      const addresses = await t.request('GET', '/api/v1/nav/addreses', { token: c.token });
      expect(addresses.status).toBe(200);
      expect(addresses.body).toHaveLength(1);
      expect(addresses.body[0].isDefault).toBe(true);
    }
    expect(first.users.map((u) => u.role).sort()).toEqual([
      'admin',
      'client',
      'client',
      'coach',
      'coach',
      'coach',
      'coach',
    ]);
  });

  it('prints ids, tokens, service ids and four curl examples', () => {
    const lines: string[] = [];
    printSummary(first, (l) => lines.push(l));
    const text = lines.join('\n');
    for (const u of first.users) expect(text).toContain(u.id);
    for (const s of first.services) expect(text).toContain(s.id);
    expect(first.examples).toHaveLength(4);
    expect(first.examples.every((e) => e.startsWith('curl '))).toBe(true);
  });

  it('finds a demo coach as the search example asks', async () => {
    const path = first.examples[0]!.match(/'https?:\/\/[^/]+(\/api\/v1\/coaches\?[^']+)'/)![1]!;
    const res = await t.request('GET', path);
    expect(res.status).toBe(200);
    expect(res.body.map((c: { id: string }) => c.id)).toContain(DEMO_IDS.coaches[0]);
  });

  it('books the example slot as the example command says', async () => {
    const example = first.examples[2]!;
    const serviceId = example.match(/\/api\/v1\/service\/([0-9a-f-]{36})/)![1]!;
    const body = JSON.parse(example.match(/-d '([^']+)'/)![1]!);
    const token = example.match(/Bearer ([^']+)'/)![1]!;
    const res = await t.request('POST', `/api/v1/service/${serviceId}`, { token, body });
    expect(res.status).toBe(200);
    expect(res.body[0]).toMatchObject({ state: 'new', serviceId, slot: body.slots[0] });
  });

  it('is harmless to run twice: same services, no duplicates', async () => {
    const second = await seedDemo({ baseUrl: t.baseUrl, sign: (id, roles) => t.token(id, roles) });
    expect(second.createdServices).toBe(0);
    expect(second.services.map((s) => s.id).sort()).toEqual(first.services.map((s) => s.id).sort());
    for (const id of DEMO_IDS.coaches) {
      const all = await t.request('GET', `/api/v1/coach/${id}/services`, { token: t.token(id, ['coach']) });
      expect(all.body).toHaveLength(2);
      const addresses = await t.request('GET', '/api/v1/nav/addreses', { token: t.token(id, ['coach']) });
      expect(addresses.body).toHaveLength(1);
    }
  });
});

describe("README's walk of a session's whole life with the quick check-in coach", () => {
  // The README's paragraph on Quinn Quick, and the booking body it tells a client to send.
  const readme = fs.readFileSync(path.join(__dirname, '../../README.md'), 'utf8');
  const walk = readme.slice(readme.indexOf('A fourth coach, Quinn Quick'));
  const told = /book its next\s+slot as a client with `([^`]+)`/.exec(walk)?.[1];
  let clock = new Date('2026-12-01T08:03:00Z');
  let q: TestSystem;
  let seeded: SeedResult;
  beforeAll(async () => {
    q = await startTestSystem({ clock: () => clock });
    seeded = await seedDemo({ baseUrl: q.baseUrl, sign: (id, roles) => q.token(id, roles) });
  }, 60_000);
  afterAll(() => q.close());

  it('books the next slot as told, approves, completes once started, reviews: the profile shows it', async () => {
    expect(told).toBeDefined();
    const quick = seeded.services.find((s) => s.coachId === DEMO_IDS.quickCoach)!;
    const client = seeded.users.find((u) => u.role === 'client')!;
    const quinn = seeded.users.find((u) => u.id === DEMO_IDS.quickCoach)!;
    const free = await q.request('GET', `/api/v1/service/${quick.id}/availability`);
    const next = free.body.slots[0] as { slot: string; startsAt: string };
    const booked = await q.request('POST', `/api/v1/service/${quick.id}`, {
      token: client.token,
      body: { slots: [next.slot], ...JSON.parse(`{${told}}`) },
    });
    expect(booked.status).toBe(200);
    const sessionId = booked.body[0].id as string;
    const act = (action: string, token: string, body?: unknown) =>
      q.request('POST', `/api/v1/session/${sessionId}/${action}`, { token, body });
    expect((await act('approve', quinn.token)).status).toBe(200);
    expect((await act('complete', quinn.token)).status).toBe(409); // not started yet
    // The session starts; the payment sweeper runs as it does every few seconds.
    clock = new Date(Date.parse(next.startsAt) + 60_000);
    await q.system.sweepExpiredPayments();
    const completed = await act('complete', quinn.token);
    expect([completed.status, completed.body.state]).toEqual([200, 'completed']);
    expect((await act('review', client.token, { rating: 5 })).status).toBe(200);
    const profile = await q.request('GET', `/api/v1/coach/${DEMO_IDS.quickCoach}/profile`);
    expect(profile.body).toMatchObject({ rating: 5, sessionCount: 1 });
  });
});
