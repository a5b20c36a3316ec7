import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { eventually, marketplace } from '../support/marketplace';
import { startSmtpServer } from '../support/smtp';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * The operators' page (GET /admin/notifications in a browser) in a real Chromium, driven by playwright-core.
 * Chromium comes from the OS packages (`apt-get install chromium`, done by .ci/run); CHROMIUM_PATH names
 * another one. Without it the suite is skipped, saying why. `SCREENSHOT_DOCS=1` refreshes docs/admin-page.png.
 */
const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (p): p is string => !!p && fs.existsSync(p),
);
const suite = CHROMIUM ? describe : describe.skip;
const title = CHROMIUM
  ? 'admin page in Chromium'
  : 'admin page in Chromium (skipped: no Chromium found; apt-get install chromium, or set CHROMIUM_PATH)';

let now = new Date('2026-12-01T08:00:00Z');
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let browser: Browser;
let page: Page;

suite(title, () => {
  beforeAll(async () => {
    smtp = await startSmtpServer();
    t = await startTestSystem({ clock: () => now, env: { SMTP_URL: smtp.url } });
    m = marketplace(t);
    browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await smtp?.close();
  });

  /** Waits for the page's next complete load (it stamps body[data-loaded] after each one). */
  const reloaded = async (before: string | null) =>
    page.waitForFunction((b) => {
      const v = (globalThis as any).document.body.dataset.loaded;
      return v !== undefined && v !== b;
    }, before);
  const stamp = () => page.evaluate(() => (globalThis as any).document.body.dataset.loaded ?? null);

  it('signs in with an admin token and shows the same counts as the API', async () => {
    // Data: a booking notifies its coach and client; another coach's service waits for review.
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-02T10:00:00'] },
    });
    expect(booked.status).toBe(200);
    await eventually(
      async () => (await t.request('GET', '/admin/notifications', { token: m.admin() })).body.total,
      (n) => n >= 2,
      5000,
    );

    const res = await page.goto(`${t.baseUrl}/admin/notifications`);
    expect(res!.status()).toBe(200);
    expect(res!.headers()['content-type']).toMatch(/^text\/html/);
    expect(await page.isVisible('#signin')).toBe(true);
    expect(await page.isVisible('#panels')).toBe(false);

    // A client's token is not enough.
    await page.fill('#token', t.token(client.id, ['client']));
    await page.click('#signin button[type=submit]');
    await page.waitForSelector('#message:has-text("admin role")');
    expect(await page.isVisible('#signin')).toBe(true);

    const before = await stamp();
    await page.fill('#token', m.admin());
    await page.click('#signin button[type=submit]');
    await reloaded(before);
    expect(await page.textContent('#message')).toBe('');

    const api = (await t.request('GET', '/admin/notifications', { token: m.admin() })).body;
    const shown = await page.evaluate(() => {
      const doc = (globalThis as any).document;
      const count = (id: string) => Number(doc.querySelector(`[data-testid=${id}]`).textContent);
      return {
        total: count('count-total'),
        unread: count('count-unread'),
        delivered: count('count-delivered'),
        byType: Array.from(doc.querySelectorAll('#by-type tr[data-type]')).map((tr: any) => ({
          type: tr.dataset.type,
          total: Number(tr.cells[1].textContent),
          unread: Number(tr.cells[2].textContent),
          delivered: Number(tr.cells[3].textContent),
        })),
      };
    });
    expect(shown).toEqual(api);
    expect(api.total).toBeGreaterThanOrEqual(2);

    // Latest notifications, filtered by user: only the coach's.
    const latest = await page.$$eval('#notifications tr', (rows) => rows.map((r) => r.textContent));
    expect(latest.length).toBeGreaterThanOrEqual(2);
    await page.fill('#filter input[name=user]', coach.id);
    await page.click('#filter button[type=submit]');
    await page.waitForFunction(
      (id) =>
        Array.from((globalThis as any).document.querySelectorAll('#notifications tr')).every(
          (r: any) => r.children[1]?.textContent === id,
        ),
      coach.id,
    );
    const coachOnly = (
      await t.request('GET', `/manage/admin/notifications?user=${coach.id}&limit=20`, { token: m.admin() })
    ).body;
    expect(await page.$$eval('#notifications tr', (rows) => rows.length)).toBe(coachOnly.length);

    // Projections of this instance with their lag.
    const names = t.system.runner.status().map((p) => p.name);
    const listed = await page.$$eval('#projection-rows tr[data-projection]', (rows) =>
      rows.map((r) => (r as any).dataset.projection),
    );
    expect(listed.sort()).toEqual([...names].sort());
  });

  it('approves a service waiting for review', async () => {
    const coach = await m.coach();
    const created = await t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: { name: 'Padel for two', price: 60, priceCurrency: 'EUR', sessionMinutesDuration: 60 },
    });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    let before = await stamp();
    await page.click('#refresh');
    await reloaded(before);
    const row = `#services tr[data-service="${id}"]`;
    expect(await page.textContent(row)).toContain('Padel for two');

    await fs.promises.mkdir(path.join(os.tmpdir(), 'coaching-admin'), { recursive: true });
    await page.screenshot({
      path: path.join(os.tmpdir(), 'coaching-admin', 'admin-page.png'),
      fullPage: true,
    });
    before = await stamp();
    await page.click(`${row} button.approve`);
    await reloaded(before);
    expect(await page.$(row)).toBeNull();
    const service = await t.request('GET', `/api/v1/service/${id}`, { token: m.admin() });
    expect(service.body.status).toBe('approved');
  });

  it('leaves a service waiting when Reject is cancelled, and rejects it with the reason typed', async () => {
    const coach = await m.coach();
    const created = await t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: { name: 'Surfing basics', price: 50, priceCurrency: 'EUR', sessionMinutesDuration: 60 },
    });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    let before = await stamp();
    await page.click('#refresh');
    await reloaded(before);
    const row = `#services tr[data-service="${id}"]`;

    page.once('dialog', (d) => void d.dismiss());
    before = await stamp();
    await page.click(`${row} button.reject`);
    await reloaded(before);
    expect(await page.$(row)).not.toBeNull();
    expect((await t.request('GET', `/api/v1/service/${id}`, { token: m.admin() })).body.status).toBe(
      'review',
    );

    page.once('dialog', (d) => void d.accept('  Photos missing  '));
    before = await stamp();
    await page.click(`${row} button.reject`);
    await reloaded(before);
    expect(await page.$(row)).toBeNull();
    expect((await t.request('GET', `/api/v1/service/${id}`, { token: m.admin() })).body.status).toBe(
      'rejected',
    );
  });

  it('shows names and error messages as text, never as HTML', async () => {
    const hostile = '<img src=x onerror="document.body.dataset.pwned=1">\u202e\u200b';
    const coach = await m.coach();
    const created = await t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: { name: hostile, price: 40, priceCurrency: 'EUR', sessionMinutesDuration: 60 },
    });
    expect(created.status).toBe(200);
    let before = await stamp();
    await page.click('#refresh');
    await reloaded(before);
    expect(await page.textContent(`#services tr[data-service="${created.body.id}"] td:nth-child(2)`)).toBe(
      hostile,
    );

    // An error the API answers, holding what the operator typed, is shown as text as well.
    await page.fill('#filter input[name=user]', '<img src=x onerror="document.body.dataset.pwned=1">');
    await page.click('#filter button[type=submit]');
    await page.waitForSelector('#message:has-text("422")');
    await page.fill('#filter input[name=user]', '');
    expect(await page.$$('img')).toHaveLength(0);
    expect(await page.evaluate(() => (globalThis as any).document.body.dataset.pwned)).toBeUndefined();
    // Out of the review queue (and the README's picture).
    const id = created.body.id as string;
    const rejected = await t.request('POST', `/api/v1/admin/services/${id}/reject`, {
      token: m.admin(),
      body: {},
    });
    expect(rejected.status).toBe(200);
    before = await stamp();
    await page.click('#refresh');
    await reloaded(before);
  });

  it('wraps a long unbroken name in its cell, keeping Approve and Reject in view', async () => {
    const coach = await m.coach();
    const created = await t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: { name: 'W'.repeat(120), price: 40, priceCurrency: 'EUR', sessionMinutesDuration: 60 },
    });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    let before = await stamp();
    await page.click('#refresh');
    await reloaded(before);
    const fits = await page.evaluate((serviceId) => {
      const doc = (globalThis as any).document;
      const section = doc.querySelector('#review');
      const right = section.getBoundingClientRect().right;
      const buttons = Array.from(doc.querySelectorAll(`#services tr[data-service="${serviceId}"] button`));
      return {
        scrolls: section.scrollWidth > section.clientWidth,
        buttonsInView:
          buttons.length === 2 && buttons.every((b: any) => b.getBoundingClientRect().right <= right),
      };
    }, id);
    expect(fits).toEqual({ scrolls: false, buttonsInView: true });
    const rejected = await t.request('POST', `/api/v1/admin/services/${id}/reject`, {
      token: m.admin(),
      body: {},
    });
    expect(rejected.status).toBe(200);
    before = await stamp();
    await page.click('#refresh');
    await reloaded(before);
  });

  it('says so when more services wait for review than the 50 it shows', async () => {
    const coach = await m.coach();
    const ids: string[] = [];
    for (let i = 0; i < 51; i++) {
      const created = await t.request('POST', '/api/v1/coach/services', {
        token: coach.token,
        body: { name: `Queued ${i}`, price: 40, priceCurrency: 'EUR', sessionMinutesDuration: 60 },
      });
      expect(created.status).toBe(200);
      ids.push(created.body.id as string);
    }
    let before = await stamp();
    await page.click('#refresh');
    await reloaded(before);
    expect(await page.$$eval('#services tr[data-service]', (rows) => rows.length)).toBe(50);
    expect(await page.textContent('#services tr.more')).toMatch(/oldest 50/);

    for (const id of ids)
      expect(
        (await t.request('POST', `/api/v1/admin/services/${id}/reject`, { token: m.admin(), body: {} }))
          .status,
      ).toBe(200);
    before = await stamp();
    await page.click('#refresh');
    await reloaded(before);
    expect(await page.$('#services tr.more')).toBeNull();
  }, 60_000);

  it('puts no token in the URL when the sign-in is pressed before the script ran', async () => {
    const bare = await browser.newPage();
    try {
      await bare.route('**/admin/assets/admin.js', (r) => r.abort());
      await bare.goto(`${t.baseUrl}/admin/notifications`);
      await bare.fill('#token', m.admin());
      // keyboard.press: page.press waits for the navigation the form would start, which is refused here.
      await bare.focus('#token');
      await bare.keyboard.press('Enter');
      await bare.waitForTimeout(500);
      expect(bare.url()).toBe(`${t.baseUrl}/admin/notifications`);
    } finally {
      await bare.close();
    }
  });

  it('shows e-mail deliveries with their state and error, and retries a failed one until it is sent', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    smtp.rejectNext(2, 550); // the booking's e-mails to client and coach are refused for good
    const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-03T10:00:00'] },
    });
    expect(booked.status).toBe(200);
    const failed = await eventually(
      async () =>
        (await t.request('GET', '/api/v1/admin/emails?status=failed', { token: m.admin() })).body as any[],
      (list) => list.length >= 2,
      8000,
    );
    const target = failed[0];
    expect(target.error).toMatch(/550/);

    let before = await stamp();
    await page.click('#refresh');
    await reloaded(before);
    const row = `#deliveries tr[data-delivery="${target.id}"]`;
    expect(await page.getAttribute(row, 'data-state')).toBe('failed');
    expect(await page.textContent(`${row} .error`)).toContain('550');

    before = await stamp();
    await page.click(`${row} button.retry`);
    await reloaded(before);
    expect(await page.getAttribute(row, 'data-state')).toBe('sent');
    expect(await page.$(`${row} button.retry`)).toBeNull();
    const after = (await t.request('GET', '/api/v1/admin/emails', { token: m.admin() })).body as any[];
    expect(after.find((d) => d.id === target.id)).toMatchObject({ status: 'sent', error: null });
    expect(smtp.received.some((r) => r.to.includes(target.to))).toBe(true);

    if (process.env.SCREENSHOT_DOCS === '1') {
      // The picture in the README: a service in the review queue, no filter.
      await t.request('POST', '/api/v1/coach/services', {
        token: coach.token,
        body: { name: 'Beach volleyball', price: 35, priceCurrency: 'EUR', sessionMinutesDuration: 90 },
      });
      await page.fill('#filter input[name=user]', '');
      before = await stamp();
      await page.click('#refresh');
      await reloaded(before);
      await page.screenshot({ path: path.join(__dirname, '../../docs/admin-page.png'), fullPage: true });
    }
  });

  it('keeps a failed e-mail in view, with its Retry, after more than 50 later e-mails were sent', async () => {
    const client = await m.client();
    const verify = () =>
      t.request('POST', `/api/v1/notification/private/email/${client.id}/verification`, {
        token: m.service(),
        body: { code: '1234' },
      });
    smtp.rejectNext(1, 550);
    expect((await verify()).status).toBe(200);
    const failed = await eventually(
      async () =>
        (
          (await t.request('GET', '/api/v1/admin/emails?status=failed', { token: m.admin() })).body as any[]
        ).filter((d) => d.recipient === client.id),
      (list) => list.length === 1,
      8000,
    );
    // The later ones are later (the test clock stands still otherwise).
    now = new Date(now.getTime() + 60_000);
    for (let i = 0; i < 55; i++) expect((await verify()).status).toBe(200);
    await eventually(
      async () =>
        (
          (await t.request('GET', '/api/v1/admin/emails?status=sent&limit=200', { token: m.admin() }))
            .body as any[]
        ).filter((d) => d.recipient === client.id).length,
      (n) => n === 55,
      20_000,
    );
    const before = await stamp();
    await page.click('#refresh');
    await reloaded(before);
    const row = `#deliveries tr[data-delivery="${failed[0].id}"]`;
    expect(await page.getAttribute(row, 'data-state')).toBe('failed');
    expect(await page.$(`${row} button.retry`)).not.toBeNull();
    // The latest 50 are there too, newest first.
    expect(await page.$$eval('#deliveries tr[data-state=sent]', (rows) => rows.length)).toBe(50);
  }, 60_000);
});
