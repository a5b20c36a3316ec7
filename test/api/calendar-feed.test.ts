import { profileStream } from '../../commands/users/events';
import { escapeText, foldLine } from '../../src/resources/icalendar';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { requestContext } from '../../src/http/middleware';
import { type TestSystem } from '../support/system';
import { apiSuite, type Marketplace } from '../support/apiSuite';
import { checkICalendar } from '../support/icalendarCheck';

let t: TestSystem;
let m: Marketplace;
const clock = apiSuite('2026-12-01T08:00:00Z', (system, market) => {
  t = system;
  m = market;
});

/**
 * The feed as a calendar app fetches it: no Authorization header. Every feed answered is checked against the
 * RFC 5545 rules (test/support/icalendarCheck.ts), as the bytes were sent.
 */
const fetchFeed = async (url: string, headers: Record<string, string> = {}) => {
  const raw = await fetch(t.baseUrl + url, { headers });
  if (raw.status === 200 && raw.headers.get('content-type')?.startsWith('text/calendar'))
    checkICalendar(Buffer.from(await raw.arrayBuffer()));
  return t.request('GET', url, { headers });
};

/** The VEVENTs of a feed (checked), each as its unfolded, unescaped properties. */
const feedEvents = async (url: string) => {
  const raw = await fetch(t.baseUrl + url);
  expect(raw.status).toBe(200);
  return checkICalendar(Buffer.from(await raw.arrayBuffer()));
};

/** The VEVENTs of a feed, each as its unfolded properties. */
function eventsOf(ics: string): Record<string, string>[] {
  const unfolded = ics.replace(/\r\n /g, '');
  return [...unfolded.matchAll(/BEGIN:VEVENT\r\n([\s\S]*?)END:VEVENT/g)].map((m) =>
    Object.fromEntries(
      m[1]!
        .split('\r\n')
        .filter(Boolean)
        .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)]),
    ),
  );
}

async function bookedPair(serviceName = 'Tennis basics') {
  const coach = await m.coach();
  const serviceId = await m.offering(coach, { name: serviceName });
  const client = await m.client({ firstName: 'Ana', lastName: 'Lima' });
  const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
    token: client.token,
    body: { slots: ['2026-12-02T10:00:00'], address: 'Main St 1, 10115 Berlin' },
  });
  expect(res.status).toBe(200);
  return { coach, client, serviceId, session: res.body[0] as { id: string } };
}

const open = async (token: string) => {
  const res = await t.request('POST', '/api/v1/calendar/feed', { token });
  expect(res.status).toBe(200);
  return res.body as { url: string; token: string; issuedAt: string };
};

describe('calendar feed (added)', () => {
  it("lists the caller's sessions as client and as coach, in UTC, without a token header", async () => {
    const { coach, client, session } = await bookedPair();
    const forClient = await open(client.token);
    expect(forClient.url).toBe(`/api/v1/calendar/feed/${forClient.token}.ics`);
    expect(forClient.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const res = await fetchFeed(forClient.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/calendar; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('private, no-cache');
    const ics = res.body as string;
    expect(ics.startsWith('BEGIN:VCALENDAR\r\nVERSION:2.0\r\n')).toBe(true);
    expect(ics.endsWith('END:VCALENDAR\r\n')).toBe(true);
    const [event, ...more] = eventsOf(ics);
    expect(more).toEqual([]);
    expect(event).toMatchObject({
      UID: `${session.id}@sessions.coaching`,
      // 10:00 in Berlin on 2 December is 09:00 UTC.
      DTSTART: '20261202T090000Z',
      DTEND: '20261202T100000Z',
      SUMMARY: expect.stringMatching(/^Tennis basics with Coach [0-9a-f]{6}$/),
      STATUS: 'TENTATIVE',
      LOCATION: 'Main St 1\\, 10115 Berlin',
    });
    // The coach's own feed shows the same session with the client's name.
    const forCoach = await open(coach.token);
    const [coachEvent] = eventsOf((await fetchFeed(forCoach.url)).body as string);
    expect(coachEvent).toMatchObject({ UID: event!.UID, SUMMARY: 'Tennis basics with Ana Lima' });
    // Approved, it is confirmed.
    expect(
      (await t.request('POST', `/api/v1/session/${session.id}/approve`, { token: coach.token })).status,
    ).toBe(200);
    expect(eventsOf((await fetchFeed(forClient.url)).body as string)[0]!.STATUS).toBe('CONFIRMED');
  });

  it('drops a canceled session, and sessions that ended more than 90 days ago', async () => {
    const { client, session } = await bookedPair();
    const feed = await open(client.token);
    expect(eventsOf((await fetchFeed(feed.url)).body as string)).toHaveLength(1);
    expect(
      (await t.request('POST', `/api/v1/session/${session.id}/cancel`, { token: client.token, body: {} }))
        .status,
    ).toBe(200);
    expect(eventsOf((await fetchFeed(feed.url)).body as string)).toEqual([]);
    // Another session (it ends at 10:00 UTC on 2 December), seen 90 days after its end and the day after.
    const second = await bookedPair();
    const later = await open(second.client.token);
    clock.set('2027-03-02T10:00:00Z');
    expect(eventsOf((await fetchFeed(later.url)).body as string)).toHaveLength(1);
    clock.set('2027-03-02T10:00:01Z');
    expect(eventsOf((await fetchFeed(later.url)).body as string)).toEqual([]);
  });

  it('over 5,000 sessions, drops the past ones first: the upcoming ones are listed (a busy group coach)', async () => {
    const { coach, session } = await bookedPair();
    // 5,000 seats of past group sessions in the last 90 days, as the sessions read model holds them.
    await t.system.deps.db.query(
      `INSERT INTO sessions (id, group_id, coach_id, client_id, service_id, payment_id, state, payment_state,
         starts_at, ends_at, slot, timezone, terms, booked_at, updated_at)
       SELECT gen_random_uuid(), gen_random_uuid(), $1, gen_random_uuid(), gen_random_uuid(), gen_random_uuid(),
         'completed', 'delivered', $2::timestamptz - (i * interval '20 minutes'),
         $2::timestamptz - (i * interval '20 minutes') + interval '1 hour', '', 'Europe/Berlin',
         '{"serviceName": "Group yoga"}'::jsonb, $2, $2
       FROM generate_series(1, 5000) AS i`,
      [coach.id, '2026-12-01T07:00:00Z'],
    );
    const feed = await open(coach.token);
    const events = eventsOf((await fetchFeed(feed.url)).body as string);
    expect(events).toHaveLength(5000);
    // The session still to come is there (it was left out: the 5,000 earliest were all past ones).
    expect(events.map((e) => e.UID)).toContain(`${session.id}@sessions.coaching`);
    // Still earliest first.
    const starts = events.map((e) => e.DTSTART!);
    expect([...starts].sort()).toEqual(starts);
    expect(starts[starts.length - 1]).toBe('20261202T090000Z');
  });

  it("keeps the session's place after the coach deletes the address it was booked at, as the session does", async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { name: 'Tennis basics' });
    const saved = await t.request('POST', '/api/v1/nav/addreses', {
      token: coach.token,
      body: { lat: 52.5, lng: 13.4, name: 'Court 3', address: 'Parkweg 5, Berlin', isDefault: true },
    });
    expect(saved.status).toBe(200);
    const addressId = (saved.body as { id: string; name: string }[]).find((a) => a.name === 'Court 3')!.id;
    const client = await m.client({ firstName: 'Ana', lastName: 'Lima' });
    const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-02T10:00:00'], addressId },
    });
    expect(booked.status).toBe(200);
    const sessionId = (booked.body as { id: string }[])[0]!.id;
    const forClient = await open(client.token);
    const forCoach = await open(coach.token);
    const place = 'Court 3, Parkweg 5, Berlin';
    expect((await feedEvents(forClient.url))[0]).toMatchObject({ LOCATION: place });
    expect(
      (await t.request('DELETE', `/api/v1/nav/addreses/${addressId}`, { token: coach.token })).status,
    ).toBe(200);
    // The session still takes place there: it says so, and so do both feeds.
    expect(await m.sessionAs(client.token, sessionId)).toMatchObject({ addressId });
    expect((await feedEvents(forClient.url))[0]).toMatchObject({ LOCATION: place });
    expect((await feedEvents(forCoach.url))[0]).toMatchObject({ LOCATION: place });
  });

  it("places a package's later session where its own booking says, not at the first one's address", async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { numberOfSessions: 2, price: 80 });
    const saved = await t.request('POST', '/api/v1/nav/addreses', {
      token: coach.token,
      body: { lat: 52.5, lng: 13.4, name: 'Court 3', address: 'Parkweg 5', isDefault: true },
    });
    const addressId = (saved.body as { id: string }[])[0]!.id;
    const client = await m.client();
    const first = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-02T10:00:00'], addressId },
    });
    expect(first.status).toBe(200);
    const later = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-03T10:00:00'], packageId: first.body[0].groupId, address: 'Home 1' },
    });
    expect(later.status).toBe(200);
    expect(await feedEvents((await open(client.token)).url)).toMatchObject([
      { DTSTART: '20261202T090000Z', LOCATION: 'Court 3, Parkweg 5' },
      { DTSTART: '20261203T090000Z', LOCATION: 'Home 1' },
    ]);
  });

  it("shows a coach's group slot as one event listing its clients; its UID stays as seats join and leave", async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { name: 'Group yoga', groupSession: true, maxGroupSize: 3 });
    const book = async (firstName: string) => {
      const client = await m.client({ firstName, lastName: 'Lima' });
      const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
        token: client.token,
        body: { slots: ['2026-12-02T10:00:00'] },
      });
      expect(res.status).toBe(200);
      return { client, sessionId: (res.body as { id: string }[])[0]!.id };
    };
    const ana = await book('Ana');
    const feed = await open(coach.token);
    const [first, ...none] = await feedEvents(feed.url);
    expect(none).toEqual([]);
    expect(first).toMatchObject({
      SUMMARY: 'Group yoga with Ana Lima',
      DTSTART: '20261202T090000Z',
      STATUS: 'TENTATIVE',
    });
    // Not a session's UID: the slot's, so a second seat updates this event rather than adding one.
    expect(first!.UID).not.toBe(`${ana.sessionId}@sessions.coaching`);
    const ben = await book('Ben');
    const [second, ...none2] = await feedEvents(feed.url);
    expect(none2).toEqual([]);
    expect(second).toMatchObject({ UID: first!.UID, SUMMARY: 'Group yoga with 2 clients' });
    expect(Number(second!.SEQUENCE)).toBeGreaterThan(Number(first!.SEQUENCE));
    expect(second!.DESCRIPTION).toContain('Ana Lima');
    expect(second!.DESCRIPTION).toContain('Ben Lima');
    // Each client's own feed shows its own session.
    const benFeed = await open(ben.client.token);
    expect(await feedEvents(benFeed.url)).toMatchObject([
      {
        UID: `${ben.sessionId}@sessions.coaching`,
        SUMMARY: expect.stringMatching(/^Group yoga with Coach /),
      },
    ]);
    // One seat approved: the slot is on.
    expect(
      (await t.request('POST', `/api/v1/session/${ana.sessionId}/approve`, { token: coach.token })).status,
    ).toBe(200);
    const third = (await feedEvents(feed.url))[0]!;
    expect(third).toMatchObject({ UID: first!.UID, STATUS: 'CONFIRMED' });
    expect(Number(third.SEQUENCE)).toBeGreaterThan(Number(second!.SEQUENCE));
    // A seat leaves: the same event, without it.
    expect(
      (
        await t.request('POST', `/api/v1/session/${ben.sessionId}/cancel`, {
          token: ben.client.token,
          body: {},
        })
      ).status,
    ).toBe(200);
    const fourth = await feedEvents(feed.url);
    expect(fourth).toMatchObject([{ UID: first!.UID, SUMMARY: 'Group yoga with Ana Lima' }]);
    expect(fourth[0]!.DESCRIPTION).not.toContain('Ben Lima');
    expect(Number(fourth[0]!.SEQUENCE)).toBeGreaterThan(Number(third.SEQUENCE));
    // A seat moved to another time leaves the slot too: the slot's event changes, and one for the new time.
    const cleo = await book('Cleo');
    const before = (await feedEvents(feed.url))[0]!;
    expect(before.DESCRIPTION).toContain('Cleo Lima');
    const moved = await t.request('POST', `/api/v1/session/${cleo.sessionId}/reschedule`, {
      token: coach.token,
      body: { slot: '2026-12-02T14:00:00' },
    });
    expect(moved.status).toBe(200);
    const after = await feedEvents(feed.url);
    expect(after).toHaveLength(2);
    expect(after[0]).toMatchObject({ UID: first!.UID, SUMMARY: 'Group yoga with Ana Lima' });
    expect(Number(after[0]!.SEQUENCE)).toBeGreaterThan(Number(before.SEQUENCE));
    expect(after[1]).toMatchObject({ DTSTART: '20261202T130000Z', SUMMARY: 'Group yoga with Cleo Lima' });
    expect(after[1]!.UID).not.toBe(first!.UID);
  });

  it('keeps the UID of a rescheduled session, with its new times and a higher SEQUENCE', async () => {
    const { coach, client, session } = await bookedPair();
    const feed = await open(client.token);
    const [was] = await feedEvents(feed.url);
    expect(was).toMatchObject({ UID: `${session.id}@sessions.coaching`, SEQUENCE: '0' });
    const moved = await t.request('POST', `/api/v1/session/${session.id}/reschedule`, {
      token: coach.token,
      body: { slot: '2026-12-03T15:00:00' },
    });
    expect(moved.status).toBe(200);
    const [now, ...none] = await feedEvents(feed.url);
    expect(none).toEqual([]);
    expect(now).toMatchObject({
      UID: was!.UID,
      DTSTART: '20261203T140000Z',
      DTEND: '20261203T150000Z',
    });
    expect(Number(now!.SEQUENCE)).toBeGreaterThan(Number(was!.SEQUENCE));
    expect(now!['LAST-MODIFIED']).toMatch(/^\d{8}T\d{6}Z$/);
  });

  it('answers a poll of an unchanged feed 304 Not Modified by its ETag', async () => {
    const { coach, client, session } = await bookedPair();
    const feed = await open(client.token);
    const first = await fetchFeed(feed.url);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^W\/"[A-Za-z0-9_-]+"$/);
    // Fetched later, the same tag: only the DTSTAMPs (when the copy was made) differ.
    clock.set('2026-12-01T09:30:00Z');
    const again = await fetchFeed(feed.url);
    expect(again.headers.get('etag')).toBe(etag);
    expect((again.body as string).replace(/DTSTAMP:.*/g, '')).toBe(
      (first.body as string).replace(/DTSTAMP:.*/g, ''),
    );
    expect(again.body).not.toBe(first.body);
    const unchanged = await fetchFeed(feed.url, { 'If-None-Match': etag });
    expect(unchanged.status).toBe(304);
    expect(unchanged.body).toBeUndefined();
    expect(unchanged.headers.get('etag')).toBe(etag);
    expect((await fetchFeed(feed.url, { 'If-None-Match': `"other", ${etag}` })).status).toBe(304);
    expect((await fetchFeed(feed.url, { 'If-None-Match': etag.slice(2) })).status).toBe(304);
    expect((await fetchFeed(feed.url, { 'If-None-Match': '"other"' })).status).toBe(200);
    expect(
      (await t.request('POST', `/api/v1/session/${session.id}/approve`, { token: coach.token })).status,
    ).toBe(200);
    const changed = await fetchFeed(feed.url, { 'If-None-Match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
  });

  it('writes names with commas, semicolons, line breaks and long non-ASCII text as valid iCalendar', async () => {
    const name = 'Yoga; stretch, breathe\nand rest — ' + 'Übung 🧘 '.repeat(12);
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { name: name.replace('\n', ' ') });
    const client = await m.client({ firstName: 'Zoë; "Z"', lastName: 'Ångström,\\x' });
    const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-02T10:00:00'], address: 'Flat 2; Hof 3,\nMain St 1 🏠 '.repeat(4) },
    });
    expect(res.status).toBe(200);
    const [event] = await feedEvents((await open(coach.token)).url);
    expect(event).toMatchObject({
      SUMMARY: `${name.replace('\n', ' ').trim()} with Zoë; "Z" Ångström,\\x`,
      LOCATION: 'Flat 2; Hof 3,\nMain St 1 🏠 '.repeat(4),
    });
  });

  it('replaces the address when asked again, and closes it on DELETE', async () => {
    const { client } = await bookedPair();
    const first = await open(client.token);
    const second = await open(client.token);
    expect(second.token).not.toBe(first.token);
    expect((await fetchFeed(first.url)).status).toBe(404);
    expect((await fetchFeed(second.url)).status).toBe(200);
    // A keyed request repeated (its answer lost) answers the same address, as every keyed POST does.
    const keyed = () =>
      t.request('POST', '/api/v1/calendar/feed', {
        token: client.token,
        headers: { 'Idempotency-Key': `feed-${client.id}` },
      });
    const third = (await keyed()).body as { token: string };
    expect((await keyed()).body).toMatchObject({ token: third.token });
    expect((await fetchFeed(second.url)).status).toBe(404);
    expect((await fetchFeed(`/api/v1/calendar/feed/${third.token}.ics`)).status).toBe(200);
    const latest = await open(client.token);
    expect((await fetchFeed(latest.url)).status).toBe(200);
    const status = await t.request('GET', '/api/v1/calendar/feed', { token: client.token });
    expect(status.body).toEqual({ open: true, issuedAt: '2026-12-01T08:00:00.000Z' });
    const closed = await t.request('DELETE', '/api/v1/calendar/feed', { token: client.token });
    expect(closed).toMatchObject({ status: 200, body: { open: false, issuedAt: null } });
    const gone = await fetchFeed(latest.url);
    expect(gone).toMatchObject({ status: 404, body: { error: 'feed_not_found', code: 404 } });
    expect((await t.request('GET', '/api/v1/calendar/feed', { token: client.token })).body).toEqual({
      open: false,
      issuedAt: null,
    });
    // Closing again is no error and records nothing more.
    const before = (await t.system.deps.store.readStream(profileStream(client.id))).events.length;
    expect((await t.request('DELETE', '/api/v1/calendar/feed', { token: client.token })).status).toBe(200);
    expect((await t.system.deps.store.readStream(profileStream(client.id))).events).toHaveLength(before);
  });

  it('keeps only the hash of the token in the log, and none in the access log', async () => {
    const { client } = await bookedPair();
    const feed = await open(client.token);
    const { events } = await t.system.deps.store.readStream(profileStream(client.id));
    const issued = events.find((e) => e.type === 'CalendarFeedIssued')!;
    expect(JSON.stringify([issued.data, issued.metadata])).not.toContain(feed.token);
    expect((issued.data as { tokenSha256: string }).tokenSha256).toMatch(/^[0-9a-f]{64}$/);
    // The access log's line for a fetch of the feed.
    const lines: Record<string, unknown>[] = [];
    const log = {
      ...t.system.deps.log,
      info: (msg: string, fields?: Record<string, unknown>) => lines.push({ msg, ...fields }),
    };
    const app = new Koa().use(requestContext(log)).use((ctx) => {
      ctx.body = 'ok';
    });
    const server = app.listen(0);
    try {
      const { port } = server.address() as AddressInfo;
      await fetch(`http://127.0.0.1:${port}${feed.url}`);
      await fetch(`http://127.0.0.1:${port}/api/v1/calendar/feed`);
      // With a trailing slash the feed is served too (the router ignores it): its token is not logged either.
      await fetch(`http://127.0.0.1:${port}${feed.url}/`);
    } finally {
      server.close();
    }
    expect(lines.map((l) => l.path)).toEqual([
      '/api/v1/calendar/feed/[token]',
      '/api/v1/calendar/feed',
      '/api/v1/calendar/feed/[token]',
    ]);
    expect((await fetchFeed(`${feed.url}/`)).status).toBe(200);
  });

  it('answers an unknown or malformed address 404 in the error shape, and needs a token to open one', async () => {
    for (const file of [
      `${'A'.repeat(43)}.ics`,
      'short.ics',
      `${'A'.repeat(43)}`,
      '%E2%82%AC.ics',
      '.ics',
      // More path segments are a malformed address too (they were the router's 404 not_found).
      `${'A'.repeat(21)}/${'A'.repeat(21)}.ics`,
      `${'A'.repeat(43)}.ics/more`,
      'a/b/c.ics',
      '%E0%A4%A.ics',
      '..%2F..%2Fx.ics',
    ])
      expect(await fetchFeed(`/api/v1/calendar/feed/${file}`)).toMatchObject({
        status: 404,
        body: { error: 'feed_not_found' },
      });
    expect((await t.request('POST', '/api/v1/calendar/feed')).status).toBe(401);
    expect((await t.request('GET', '/api/v1/calendar/feed')).status).toBe(401);
    expect((await t.request('DELETE', '/api/v1/calendar/feed')).status).toBe(401);
  });
});

describe('iCalendar text', () => {
  it('escapes TEXT values and drops control characters', () => {
    expect(escapeText('a\\b;c,d\r\ne\nf\rg\u0007h\tk')).toBe('a\\\\b\\;c\\,d\\ne\\nf\\ngh\tk');
  });

  it('folds lines at 75 octets without splitting a character', () => {
    const line = `SUMMARY:${'é'.repeat(60)}`;
    const folded = foldLine(line);
    for (const part of folded.split('\r\n')) expect(Buffer.byteLength(part)).toBeLessThanOrEqual(75);
    expect(
      folded
        .split('\r\n')
        .slice(1)
        .every((p) => p.startsWith(' ')),
    ).toBe(true);
    expect(folded.replace(/\r\n /g, '')).toBe(line);
    expect(foldLine('SHORT:x')).toBe('SHORT:x');
  });
});
