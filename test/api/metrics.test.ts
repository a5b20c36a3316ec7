import { eventually, marketplace } from '../support/marketplace';
import { startSmtpServer } from '../support/smtp';
import { startTestSystem, type TestSystem } from '../support/system';
import { getWithRawHeaders } from '../support/rawHeaders';

const now = new Date('2026-12-01T08:00:00Z');
const SLOT = '2026-12-02T10:00:00';
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;

beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestSystem({
    clock: () => now,
    env: { SMTP_URL: smtp.url, METRICS_TOKEN: 'scrape-secret-123' },
  });
  m = marketplace(t);
});
afterAll(async () => {
  await t.close();
  await smtp.close();
});

const scrape = async () => {
  const res = await fetch(`${t.baseUrl}/metrics`, {
    headers: { authorization: 'Bearer scrape-secret-123' },
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
};

/** The value of one sample line, e.g. `value(text, 'booking_conflicts_total{reason="conflict"}')`. */
const value = (text: string, sample: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(sample + ' '));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
};

describe('GET /metrics', () => {
  it('needs an admin token or METRICS_TOKEN', async () => {
    expect((await t.request('GET', '/metrics')).status).toBe(401);
    expect((await t.request('GET', '/metrics', { token: 'wrong-token' })).status).toBe(401);
    const client = await t.request('GET', '/metrics', { token: t.token(crypto.randomUUID(), ['client']) });
    expect(client.status).toBe(403);
    expect(client.body).toEqual({ error: 'forbidden', message: expect.any(String), code: 403 });
    // The router serves /metrics/ too (and any letter case): the scraper's token counts there as well.
    for (const path of ['/metrics/', '/Metrics']) {
      const res = await fetch(`${t.baseUrl}${path}`, {
        headers: { authorization: 'Bearer scrape-secret-123' },
      });
      expect([path, res.status]).toEqual([path, 200]);
    }
    // The scraper's token and another Authorization header: which one counts would be a guess, so none does.
    for (const other of ['Bearer scrape-secret-123', `Bearer ${m.admin()}`, 'Bearer wrong-token']) {
      const twice = await getWithRawHeaders(t.baseUrl, '/metrics', [
        'Authorization',
        'Bearer scrape-secret-123',
        'Authorization',
        other,
      ]);
      expect([other, twice.status]).toEqual([other, 401]);
      expect(JSON.parse(twice.body)).toMatchObject({
        message: expect.stringMatching(/one Authorization header/),
      });
    }
    const admin = await t.request('GET', '/metrics', { token: m.admin() });
    expect(admin.status).toBe(200);
    expect(admin.body).toContain('# TYPE http_request_duration_seconds histogram');
    await scrape();
  });

  it('counts requests by route pattern, appends, booking conflicts, e-mails and projection lag', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const first = await m.client();
    const second = await m.client();
    const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: first.token,
      body: { slots: [SLOT] },
    });
    expect(booked.status).toBe(200);
    const taken = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: second.token,
      body: { slots: [SLOT] },
    });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toBe('slot_unavailable');

    // The booking mails client and coach (sent); a permanent refusal is counted as failed.
    await eventually(
      async () => value(await scrape(), 'email_deliveries_total{status="sent"}') ?? 0,
      (n) => n >= 2,
      5000,
    );
    smtp.rejectNext(1, 550);
    await t.request('POST', `/api/v1/session/${booked.body[0].id}/approve`, { token: coach.token });
    const text = await eventually(
      scrape,
      (s) => (value(s, 'email_deliveries_total{status="failed"}') ?? 0) >= 1,
      5000,
    );

    expect(value(text, 'booking_conflicts_total{reason="slot_unavailable"}')).toBe(1);
    expect(value(text, 'booking_conflicts_total{reason="conflict"}')).toBe(0);
    // Route label is the pattern, not the requested path (bounded cardinality).
    expect(
      value(
        text,
        'http_request_duration_seconds_count{method="POST",route="/api/v1/service/:service_id",status="409"}',
      ),
    ).toBe(1);
    expect(text).not.toContain(`route="/api/v1/service/${serviceId}"`);
    // All five 401s are the route's: the one without a token reached it, the one with a malformed token and
    // the three with two Authorization headers were refused before routing.
    expect(
      value(text, 'http_request_duration_seconds_count{method="GET",route="/metrics",status="401"}'),
    ).toBe(5);
    const appends = value(
      text,
      `eventstore_append_duration_seconds_count{store="${t.system.deps.store.kind}",outcome="ok"}`,
    );
    expect(appends).toBeGreaterThanOrEqual(5);
    // Every projection the runner has reports both lag gauges; caught up, they read 0.
    await t.system.runner.waitFor(await t.system.deps.store.headPosition(), 5000);
    const caughtUp = await scrape();
    for (const p of t.system.runner.status()) {
      expect(value(caughtUp, `projection_lag_events{projection="${p.name}"}`)).toBe(0);
      expect(value(caughtUp, `projection_lag_seconds{projection="${p.name}"}`)).toBe(0);
    }
    // Process defaults of prom-client.
    expect(caughtUp).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(caughtUp).toMatch(/^nodejs_heap_size_used_bytes \d/m);
  });

  it('labels a request refused before routing (a token that is not valid, a body that is not JSON) with its route', async () => {
    const sample = (method: string, route: string, status: number) =>
      `http_request_duration_seconds_count{method="${method}",route="${route}",status="${status}"}`;
    const before = await scrape();
    const serviceId = crypto.randomUUID();
    const client = t.token(crypto.randomUUID(), ['client']);
    const badToken = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: 'not-a-jwt',
      body: { slots: [SLOT] },
    });
    expect(badToken.status).toBe(401);
    const notJson = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client,
      body: '{"slots": [',
    });
    expect(notJson.status).toBe(400);
    const unknown = await t.request('GET', `/api/v1/no-such-thing/${serviceId}`);
    expect(unknown.status).toBe(404);
    const after = await scrape();
    const moved = (s: string) => (value(after, s) ?? 0) - (value(before, s) ?? 0);
    expect(moved(sample('POST', '/api/v1/service/:service_id', 401))).toBe(1);
    expect(moved(sample('POST', '/api/v1/service/:service_id', 400))).toBe(1);
    // A path no route takes keeps the one bounded label.
    expect(moved(sample('GET', '(unmatched)', 404))).toBe(1);
    expect(after).not.toContain(serviceId);
  });

  it('counts the last of ten temporary refusals as failed, as the e-mail then is (not deferred: nothing retries it)', async () => {
    const sample = (status: string) => `email_deliveries_total{status="${status}"}`;
    const before = await scrape();
    const user = await m.client();
    smtp.rejectNext(10, 451);
    const queued = await t.request('POST', `/api/v1/notification/private/email/${user.id}/verification`, {
      token: m.service(),
      body: { code: '271828' },
    });
    expect(queued.status).toBe(200);
    const delivery = async () => {
      await t.system.runner.waitFor(await t.system.deps.store.headPosition(), 5000);
      const res = await t.request('GET', '/api/v1/admin/emails?status=deferred&limit=200', {
        token: m.admin(),
      });
      const failed = await t.request('GET', '/api/v1/admin/emails?status=failed&limit=200', {
        token: m.admin(),
      });
      return [...res.body, ...failed.body].find((d: { recipient: string }) => d.recipient === user.id);
    };
    await eventually(delivery, (d) => d?.status === 'deferred', 5000);
    // Each retry pass a day later than the one before: every next attempt is due (at most 6 h apart).
    for (let day = 1; day < 10; day++)
      await t.system.retryDeferredEmails(new Date(now.getTime() + day * 24 * 3_600_000));
    const last = await eventually(delivery, (d) => d?.status !== 'deferred', 5000);
    expect(last).toMatchObject({ status: 'failed', attempts: 10, nextAttemptAt: null });
    expect(smtp.rejectionsLeft()).toBe(0);
    const after = await scrape();
    const moved = (status: string) =>
      (value(after, sample(status)) ?? 0) - (value(before, sample(status)) ?? 0);
    expect({ deferred: moved('deferred'), failed: moved('failed') }).toEqual({ deferred: 9, failed: 1 });
  });

  it('times multi-stream appends too (a booking on the SQL stores is one), with their outcome', async () => {
    const store = t.system.deps.store;
    if (!store.appendMany) return; // EventStoreDB has none: a booking is plain appends there
    const sample = (outcome: string) =>
      `eventstore_append_duration_seconds_count{store="${store.kind}",outcome="${outcome}"}`;
    const before = await scrape();
    const stream = `metrics-probe-${Date.now()}`;
    const probe = { type: 'MetricsProbed', data: {} };
    await store.appendMany([
      { streamName: `${stream}-a`, events: [probe], expectedRevision: 'no_stream' },
      { streamName: `${stream}-b`, events: [probe], expectedRevision: 'no_stream' },
    ]);
    await expect(
      store.appendMany([{ streamName: `${stream}-a`, events: [probe], expectedRevision: 'no_stream' }]),
    ).rejects.toThrow('expected revision');
    const after = await scrape();
    const moved = (outcome: string) =>
      (value(after, sample(outcome)) ?? 0) - (value(before, sample(outcome)) ?? 0);
    // At least these two (a process manager may append meanwhile).
    expect(moved('ok')).toBeGreaterThanOrEqual(1);
    expect(moved('conflict')).toBeGreaterThanOrEqual(1);
  });

  it('counts the read caches: hits, misses, entries and bytes per cache', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    // Every read model has the service and the coach: no version bump still on its way turns a hit below
    // into a miss (seen once on the EventStoreDB double).
    expect(await t.system.runner.waitFor(await t.system.deps.store.headPosition(), 5000)).toBe(true);
    const before = await scrape();
    const read = () => t.request('GET', `/api/v1/service/${serviceId}/availability?from_date=2026-12-02`);
    for (let i = 0; i < 3; i++) expect((await read()).status).toBe(200);
    const after = await scrape();
    const delta = (sample: string) => (value(after, sample) ?? 0) - (value(before, sample) ?? 0);
    // The first read computes (and caches) the answer, the next two are served from the cache.
    expect(delta('read_cache_misses_total{cache="availability"}')).toBe(1);
    expect(delta('read_cache_hits_total{cache="availability"}')).toBe(2);
    expect(value(after, 'read_cache_entries{cache="availability"}')).toBeGreaterThanOrEqual(1);
    expect(value(after, 'read_cache_bytes{cache="availability"}')).toBeGreaterThan(1000);
    expect(value(after, 'read_cache_evictions_total{cache="coach_profile"}')).toBe(0);
  });

  it('a stopped projection shows its lag in events and in the age of its oldest unprocessed event', async () => {
    await t.system.runner.stop();
    try {
      // Two new users: events nobody applies while the runner is stopped.
      await m.client();
      await m.client();
      await new Promise((r) => setTimeout(r, 300));
      const text = await scrape();
      const lags = t.system.runner.status().map((p) => ({
        events: value(text, `projection_lag_events{projection="${p.name}"}`)!,
        seconds: value(text, `projection_lag_seconds{projection="${p.name}"}`)!,
      }));
      expect(lags.length).toBeGreaterThan(0);
      for (const lag of lags) {
        expect(lag.events).toBeGreaterThanOrEqual(2);
        expect(lag.seconds).toBeGreaterThanOrEqual(0.3);
      }
    } finally {
      await t.system.runner.start();
    }
  });

  it('still answers when the event store does not: every other metric, and no lag samples', async () => {
    const store = t.system.deps.store as { headPosition: () => Promise<unknown> };
    store.headPosition = () => Promise.reject(new Error('connection refused'));
    try {
      const text = await scrape();
      expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
      expect(text).toContain('http_request_duration_seconds_count{');
      expect(text).not.toMatch(/^projection_lag_events\{/m);
      expect(text).not.toMatch(/^projection_lag_seconds\{/m);
    } finally {
      delete (store as { headPosition?: unknown }).headPosition;
    }
    // Once it answers again, so does the lag.
    expect(await scrape()).toMatch(/^projection_lag_events\{/m);
  });
});
