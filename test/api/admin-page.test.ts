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
  /** Presses Refresh and waits for the page's load it starts. */
  const refresh = async () => {
    const before = await stamp();
    await page.click('#refresh');
    await reloaded(before);
  };
  /** A new coach's service waiting for review, on the page after a Refresh: its id and its row's selector. */
  const waitingForReview = async (name: string) => {
    const coach = await m.coach();
    const created = await t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: { name, price: 40, priceCurrency: 'EUR', sessionMinutesDuration: 60 },
    });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    await refresh();
    return { id, coach: coach.id, row: `#services tr[data-service="${id}"]` };
  };

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
    const { id, row } = await waitingForReview('Padel for two');
    expect(await page.textContent(row)).toContain('Padel for two');

    await fs.promises.mkdir(path.join(os.tmpdir(), 'coaching-admin'), { recursive: true });
    await page.screenshot({
      path: path.join(os.tmpdir(), 'coaching-admin', 'admin-page.png'),
      fullPage: true,
    });
    const before = await stamp();
    await page.click(`${row} button.approve`);
    await reloaded(before);
    expect(await page.$(row)).toBeNull();
    const service = await t.request('GET', `/api/v1/service/${id}`, { token: m.admin() });
    expect(service.body.status).toBe('approved');
  });

  it('leaves a service waiting when Reject is cancelled, and rejects it with the reason typed', async () => {
    const { id, row } = await waitingForReview('Surfing basics');

    page.once('dialog', (d) => void d.dismiss());
    let before = await stamp();
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
    const { id, row } = await waitingForReview(hostile);
    expect(await page.textContent(`${row} td:nth-child(2)`)).toBe(hostile);

    // An error the API answers, holding what the operator typed, is shown as text as well.
    await page.fill('#filter input[name=user]', '<img src=x onerror="document.body.dataset.pwned=1">');
    await page.click('#filter button[type=submit]');
    await page.waitForSelector('#message:has-text("422")');
    await page.fill('#filter input[name=user]', '');
    expect(await page.$$('img')).toHaveLength(0);
    expect(await page.evaluate(() => (globalThis as any).document.body.dataset.pwned)).toBeUndefined();
    // Out of the review queue (and the README's picture).
    const rejected = await t.request('POST', `/api/v1/admin/services/${id}/reject`, {
      token: m.admin(),
      body: {},
    });
    expect(rejected.status).toBe(200);
    await refresh();
  });

  it('wraps a long unbroken name in its cell, keeping Approve and Reject in view', async () => {
    const { id } = await waitingForReview('W'.repeat(120));
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
    await refresh();
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

  /** The ids of the notifications the Latest list shows, in its order. */
  const listedNotifications = () =>
    page.$$eval('#notifications tr[data-notification]', (rows) =>
      rows.map((r) => (r as any).dataset.notification as string),
    );
  /** Sets the Latest list's filters (empty for none), presses Filter and waits for the list it answers. */
  const filterLatest = async (
    f: { user?: string; type?: string; unread?: '' | 'true' | 'false'; from?: string; to?: string },
    expected: string[],
  ) => {
    await page.fill('#filter input[name=user]', f.user ?? '');
    await page.fill('#filter input[name=type]', f.type ?? '');
    await page.selectOption('#filter select[name=unread]', f.unread ?? '');
    await page.fill('#filter input[name=from]', f.from ?? '');
    await page.fill('#filter input[name=to]', f.to ?? '');
    await page.click('#filter button[type=submit]');
    await page.waitForFunction(
      (ids) =>
        JSON.stringify(
          Array.from(
            (globalThis as any).document.querySelectorAll('#notifications tr[data-notification]'),
          ).map((r: any) => r.dataset.notification),
        ) === JSON.stringify(ids),
      expected,
    );
    expect(await listedNotifications()).toEqual(expected);
  };
  /** Empties the filters (the next Refresh lists every user's notifications again). */
  const clearFilters = async () => {
    for (const name of ['user', 'type', 'from', 'to']) await page.fill(`#filter input[name=${name}]`, '');
    await page.selectOption('#filter select[name=unread]', '');
  };
  /** Opens a listed notification's detail and waits for it. */
  const openDetail = async (id: string) => {
    await page.click(`#notifications tr[data-notification="${id}"] button.details`);
    await page.waitForSelector(`#notification[data-notification="${id}"]`);
  };
  /** The detail's e-mail rows as the operator reads them: status, template, to, attempts, last error, sent at. */
  const detailEmails = () =>
    page.$$eval('#notification-emails tr[data-delivery]', (rows) =>
      rows.map((r) => Array.from((r as any).cells).map((c: any) => c.textContent)),
    );
  /** How the page writes an instant (the browser's locale and zone). */
  const shownAt = (iso: string | null) => page.evaluate((i) => (i ? new Date(i).toLocaleString() : ''), iso);

  it("shows on a notification's detail the e-mails its cause sent its user, kept current by Refresh", async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    smtp.rejectNext(2, 550); // the booking's e-mails to client and coach are refused for good
    const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-04T10:00:00'] },
    });
    expect(booked.status).toBe(200);
    const emailsOf = async (user: string) =>
      (await t.request('GET', `/api/v1/admin/emails?user=${user}`, { token: m.admin() })).body as any[];
    const [email] = await eventually(
      () => emailsOf(client.id),
      (l) => l.length === 1 && l[0].status === 'failed',
      8000,
    );
    await eventually(
      () => emailsOf(coach.id),
      (l) => l.length === 1 && l[0].status === 'failed',
      8000,
    );
    const [notice] = await eventually(
      async () => (await t.request('GET', '/api/v1/notifications', { token: client.token })).body as any[],
      (l) => l.length === 1,
    );

    await filterLatest({ user: client.id }, [notice.id]);
    await openDetail(notice.id);
    expect(await page.textContent('#notification [data-field=type]')).toBe('session_booked');
    expect(await page.textContent('#notification [data-field=message]')).toBe(notice.message);
    expect(email.error).toMatch(/550/);
    expect(await detailEmails()).toEqual([
      ['failed', 'booking', email.to, String(email.attempts), email.error, ''],
    ]);

    // Retried (by the API here): Refresh shows the detail again, as 30 answers it now.
    const retried = await t.request('POST', `/api/v1/admin/emails/${email.id}/retry`, { token: m.admin() });
    expect([retried.status, retried.body.status]).toEqual([200, 'sent']);
    await refresh();
    const one = (await t.request('GET', `/manage/admin/notifications/${notice.id}`, { token: m.admin() }))
      .body;
    expect(one.emailDeliveries).toHaveLength(1);
    const sent = one.emailDeliveries[0];
    expect(sent).toMatchObject({ id: email.id, status: 'sent', error: null });
    expect(await detailEmails()).toEqual([
      ['sent', 'booking', sent.to, String(sent.attempts), '', await shownAt(sent.sentAt)],
    ]);
    expect(await shownAt(sent.sentAt)).not.toBe('');

    await page.click('#notification-close');
    expect(await page.isVisible('#notification')).toBe(false);
    await clearFilters();
  });

  it('says "none" when the cause mailed nobody and "not recorded" for a notification written before that was kept', async () => {
    // A rejected service tells its coach in the app only; its name is shown as text.
    const hostile = '<img src=x onerror="document.body.dataset.pwned=1">';
    const { id, coach } = await waitingForReview(hostile);
    const rejected = await t.request('POST', `/api/v1/admin/services/${id}/reject`, {
      token: m.admin(),
      body: { reason: '<b>blurry</b>' },
    });
    expect(rejected.status).toBe(200);
    const [notice] = await eventually(
      async () =>
        (await t.request('GET', `/manage/admin/notifications?user=${coach}`, { token: m.admin() }))
          .body as any[],
      (l) => l.length === 1,
    );
    expect(notice.type).toBe('service_rejected');

    await filterLatest({ user: coach }, [notice.id]);
    await openDetail(notice.id);
    expect(await page.textContent('#notification [data-field=message]')).toBe(notice.message);
    expect(notice.message).toContain(hostile);
    expect(await detailEmails()).toEqual([]);
    expect(await page.textContent('#notification-emails td.empty')).toBe('none');
    expect(await page.$$('img, b')).toHaveLength(0);
    expect(await page.evaluate(() => (globalThis as any).document.body.dataset.pwned)).toBeUndefined();

    // A notification recorded before migration 113 kept its cause (until a rebuild): 30 answers null.
    await t.database.db.query('UPDATE notifications SET cause_event_id = NULL WHERE id = $1', [notice.id]);
    expect(
      (await t.request('GET', `/manage/admin/notifications/${notice.id}`, { token: m.admin() })).body
        .emailDeliveries,
    ).toBeNull();
    await refresh();
    expect(await page.getAttribute('#notification', 'data-notification')).toBe(notice.id);
    expect(await page.textContent('#notification-emails td.empty')).toBe(
      'not recorded (written before this was kept)',
    );
    await page.click('#notification-close');
    await clearFilters();
  });

  it('filters the latest notifications by read state and by a from / to creation window', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-07T10:00:00'] },
    });
    expect(booked.status).toBe(200);
    const mine = (n: number) =>
      eventually(
        async () => (await t.request('GET', '/api/v1/notifications', { token: client.token })).body as any[],
        (l) => l.length === n,
      );
    const [bookedNotice] = await mine(1);
    const read = await t.request('PUT', '/api/v1/notifications', {
      token: client.token,
      body: { notifications: [bookedNotice.id] },
    });
    expect(read.status).toBe(200);
    const approve = await t.request('POST', `/api/v1/session/${booked.body[0].id}/approve`, {
      token: coach.token,
    });
    expect(approve.status).toBe(200);
    const notices = await mine(2); // newest first
    const [approvedNotice] = notices;
    expect(approvedNotice.type).toBe('session_approved');

    const user = client.id;
    await filterLatest({ user }, [approvedNotice.id, bookedNotice.id]);
    await filterLatest({ user, unread: 'true' }, [approvedNotice.id]);
    await filterLatest({ user, unread: 'false' }, [bookedNotice.id]);

    // from / to are picked to the minute in the operator's own zone (datetime-local) and sent as instants:
    // from the minute the booking's notice was made (inclusive), or up to it or the next one (exclusive).
    const local = (ms: number) =>
      page.evaluate((i) => {
        const d = new Date(i);
        const p = (n: number) => String(n).padStart(2, '0');
        return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
      }, ms);
    const start = Math.floor(Date.parse(bookedNotice.createdAt) / 60_000) * 60_000;
    const next = start + 60_000;
    const within = (from: number, to: number) =>
      notices
        .filter((n) => Date.parse(n.createdAt) >= from && Date.parse(n.createdAt) < to)
        .map((n) => n.id as string);
    await filterLatest({ user, from: await local(start) }, [approvedNotice.id, bookedNotice.id]);
    await filterLatest({ user, to: await local(start) }, []);
    await filterLatest({ user, to: await local(next) }, within(0, next));
    await filterLatest({ user, from: await local(next) }, within(next, Infinity));
    await filterLatest({ user, from: await local(start), to: await local(next) }, within(start, next));
    await filterLatest({ user, unread: 'false', from: await local(start) }, [bookedNotice.id]);
    await filterLatest({ user, unread: 'true', to: await local(start) }, []);
    expect(await page.textContent('#notifications td.empty')).toBe('none');
    // A window that ends before it starts is the API's 422, said on the page.
    await page.fill('#filter input[name=from]', await local(next));
    await page.fill('#filter input[name=to]', await local(start));
    await page.click('#filter button[type=submit]');
    await page.waitForSelector('#message:has-text("422")');
    await clearFilters();
  });
});
