import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createProjectionRunner } from '../../projections/runner';
import { webhookProcess } from '../../projections/webhookProcess';
import { migrations } from '../../src/db/migrations';
import { migrate, splitStatements } from '../../src/db/migrate';
import { MAX_IN_FLIGHT_PER_USER, claimDueSql } from '../../src/webhooks/dispatcher';
import { SIGNATURE_HEADER, verifySignature } from '../../src/webhooks/signing';
import { eventually, marketplace } from '../support/marketplace';
import { switchableDatabase, testDatabase } from '../support/services';
import { startTestSystem, type TestSystem } from '../support/system';
import { startHeldReceiver, startWebhookReceiver } from '../support/webhookReceiver';
import { startFakeDns } from '../support/fakeDns';
import { createHostResolver } from '../../src/webhooks/target';

let now = new Date('2026-12-01T08:00:00Z');
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  t = await startTestSystem({ clock: () => now, env: { WEBHOOK_ALLOW_LOOPBACK: 'true' } });
  m = marketplace(t);
});
afterAll(async () => {
  await t.close();
  await receiver.close();
});

const nowSec = () => Math.floor(now.getTime() / 1000);
const silence = () => new Promise((r) => setTimeout(r, 300));

async function registerHook(token: string, path: string) {
  const res = await t.request('POST', '/api/v1/notification/channel', {
    token,
    body: { type: 'webhook', address: receiver.url(path) },
  });
  expect(res.status).toBe(200);
  return res.body as { id: string; secret?: string };
}

async function book(client: { token: string }, slot = '2026-12-02T10:00:00') {
  const coach = await m.coach();
  const serviceId = await m.offering(coach);
  const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
    token: client.token,
    body: { slots: [slot] },
  });
  expect(res.status).toBe(200);
  return { coach, session: res.body[0] as { id: string; groupId: string } };
}

const hooksAt = (path: string, n: number) =>
  eventually(
    async () => receiver.at(path),
    (l) => l.length >= n,
    8000,
  );

describe('webhook channels (27)', () => {
  it('registers a webhook once, showing its signing secret only in the first answer', async () => {
    const client = await m.client();
    const path = `/hooks/${randomUUID()}`;
    const first = await registerHook(client.token, path);
    expect(first).toEqual({
      id: expect.any(String),
      type: 'webhook',
      address: receiver.url(path),
      createdAt: now.toISOString(),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
    });
    const again = await registerHook(client.token, path);
    expect(again).toEqual({ ...first, secret: undefined });
    expect('secret' in again).toBe(false);
    // The same URL spelled otherwise (scheme case, a fragment, which is never sent) is the same channel:
    // a second one would get every notification again, signed with another secret.
    const respelled = await t.request('POST', '/api/v1/notification/channel', {
      token: client.token,
      body: { type: 'webhook', address: `${receiver.url(path).replace(/^http/, 'HTTP')}#top` },
    });
    expect(respelled.body).toEqual({ ...first, secret: undefined });
    const other = await registerHook(client.token, `${path}/other`);
    expect(other.secret).not.toBe(first.secret);
    const bad = await t.request('POST', '/api/v1/notification/channel', {
      token: client.token,
      body: { type: 'webhook', address: 'ftp://127.0.0.1/x' },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'address']);
  });

  it('an Idempotency-Key replay repeats the secret, which is not kept with the key', async () => {
    const client = await m.client();
    const key = randomUUID();
    const register = () =>
      t.request('POST', '/api/v1/notification/channel', {
        token: client.token,
        body: { type: 'webhook', address: receiver.url(`/hooks/${randomUUID()}`) },
        headers: { 'idempotency-key': key },
      });
    const first = await register();
    expect(first.status).toBe(200);
    expect(first.body.secret).toMatch(/^whsec_/);
    // The key's stored answer has no secret in it (docs: no secret is stored).
    const stored = await t.system.deps.db.query<{ response: unknown }>(
      'SELECT response FROM idempotency_keys WHERE scope = $1 AND key = $2',
      [client.id, key],
    );
    expect(JSON.stringify(stored.rows[0]!.response)).not.toContain(first.body.secret);
    expect(JSON.stringify(stored.rows[0]!.response)).not.toContain('whsec_');
    // The replay (same key, same body) still answers it, derived again.
    const replay = await t.request('POST', '/api/v1/notification/channel', {
      token: client.token,
      body: { type: 'webhook', address: first.body.address },
      headers: { 'idempotency-key': key },
    });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
    // A registration of an existing URL (no secret) replays without one.
    const key2 = randomUUID();
    const again = () =>
      t.request('POST', '/api/v1/notification/channel', {
        token: client.token,
        body: { type: 'webhook', address: first.body.address },
        headers: { 'idempotency-key': key2 },
      });
    const a = await again();
    const b = await again();
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(b.body).toEqual(a.body);
    expect('secret' in b.body).toBe(false);

    // An answer kept before (secret in plain form) loses it to the migration and replays the same.
    await t.system.deps.db.query(
      `UPDATE idempotency_keys SET response = (response - '$secretDerived') || jsonb_build_object('secret', $3::text)
       WHERE scope = $1 AND key = $2`,
      [client.id, key, first.body.secret],
    );
    const scrub = migrations.find((x) => x.name === 'idempotency keys: no webhook secrets kept')!;
    for (const statement of splitStatements(scrub.sql)) await t.system.deps.db.query(statement);
    const scrubbed = await t.system.deps.db.query<{ response: unknown }>(
      'SELECT response FROM idempotency_keys WHERE scope = $1 AND key = $2',
      [client.id, key],
    );
    expect(JSON.stringify(scrubbed.rows[0]!.response)).not.toContain('whsec_');
    const later = await t.request('POST', '/api/v1/notification/channel', {
      token: client.token,
      body: { type: 'webhook', address: first.body.address },
      headers: { 'idempotency-key': key },
    });
    expect(later.body).toEqual(first.body);
  });

  it("POSTs each new notification of the user, signed with the channel's secret, once, even after a replay", async () => {
    const client = await m.client();
    const path = `/hooks/${randomUUID()}`;
    const { secret } = await registerHook(client.token, path);
    const { coach } = await book(client);

    const [hook] = await hooksAt(path, 1);
    const notifications = (await t.request('GET', '/api/v1/notifications', { token: client.token })).body;
    expect(notifications).toHaveLength(1);
    const body = JSON.parse(hook!.body);
    expect(body).toEqual({
      id: expect.any(String),
      type: 'notification.created',
      createdAt: notifications[0].createdAt,
      data: { notification: { ...notifications[0], unread: true } },
    });
    expect(hook!.headers['content-type']).toBe('application/json');
    expect(hook!.headers['x-coaching-delivery']).toBe(body.id);
    expect(hook!.headers['x-coaching-event']).toBe('notification.created');
    const signature = hook!.headers[SIGNATURE_HEADER.toLowerCase()] as string;
    expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifySignature(secret!, signature, hook!.body, nowSec())).toBe(true);
    // A receiver that checks the signature refuses a changed body, another secret and an old timestamp.
    expect(verifySignature(secret!, signature, hook!.body.replace('notification', 'x'), nowSec())).toBe(
      false,
    );
    expect(verifySignature(`${secret!}x`, signature, hook!.body, nowSec())).toBe(false);
    expect(verifySignature(secret!, signature, hook!.body, nowSec() + 3600)).toBe(false);

    // The coach had no webhook: the coach's notification went nowhere but the inbox.
    const coachInbox = await eventually(
      async () => (await t.request('GET', '/api/v1/notifications', { token: coach.token })).body,
      (l) => l.length === 1,
    );
    expect(coachInbox).toHaveLength(1);

    // A second webhook process manager reading the whole log again queues nothing new, and nothing is sent.
    const { store, db, log } = t.system.deps;
    const replay = { ...webhookProcess({ store, db }), name: `webhook-replay-${randomUUID()}` };
    const runner = createProjectionRunner(store, db, [replay], log);
    await runner.start();
    expect(await runner.waitFor(await store.headPosition(), 10_000)).toBe(true);
    await runner.stop();
    await t.system.deliverWebhooks();
    await silence();
    expect(receiver.at(path)).toHaveLength(1);
    const rows = await db.query('SELECT status FROM webhook_deliveries WHERE notification_id = $1', [
      notifications[0].id,
    ]);
    expect(rows.rows).toEqual([{ status: 'delivered' }]);
  });

  it('a receiver verifies the signature as docs/api.md says, also over a body with non-ASCII text', async () => {
    // Written from the document alone, not from src/webhooks/signing.ts: the key is the whole secret's UTF-8
    // bytes, the message the bytes of t, "." and the raw body; v1 is the hex HMAC-SHA256; t within 5 minutes.
    const verify = (secret: string, header: string, raw: Buffer, nowSeconds: number) => {
      const t = /^t=(\d+),/.exec(header)?.[1];
      const v1 = /,v1=([0-9a-f]{64})$/.exec(header)?.[1];
      if (!t || !v1 || Math.abs(nowSeconds - Number(t)) > 300) return false;
      const mac = createHmac('sha256', Buffer.from(secret, 'utf8'))
        .update(Buffer.concat([Buffer.from(`${t}.`, 'utf8'), raw]))
        .digest();
      return timingSafeEqual(mac, Buffer.from(v1, 'hex'));
    };
    const client = await m.client();
    const path = `/hooks/${randomUUID()}`;
    const { secret } = await registerHook(client.token, path);
    const coach = await m.coach();
    const serviceId = await m.offering(coach, { name: 'Tennis für Anfänger — 🎾 ñ' });
    const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-02T10:00:00'] },
    });
    expect(booked.status).toBe(200);
    const [hook] = await hooksAt(path, 1);
    const raw = Buffer.from(hook!.body, 'utf8');
    expect(Number(hook!.headers['content-length'])).toBe(raw.length);
    expect(JSON.parse(hook!.body).data.notification.message).toContain('Tennis für Anfänger — 🎾 ñ');
    const signature = hook!.headers['x-coaching-signature'] as string;
    expect(verify(secret!, signature, raw, nowSec())).toBe(true);
    // The Node.js one-liner the document gives agrees.
    const [, t0, v1] = /^t=(\d+),v1=(.+)$/.exec(signature)!;
    expect(createHmac('sha256', secret!).update(`${t0}.${hook!.body}`).digest('hex')).toBe(v1);
    // A changed letter, another secret, or a timestamp over 5 minutes off is refused.
    expect(verify(secret!, signature, Buffer.from(hook!.body.replace('ü', 'u'), 'utf8'), nowSec())).toBe(
      false,
    );
    expect(verify(`${secret!}x`, signature, raw, nowSec())).toBe(false);
    expect(verify(secret!, signature, raw, nowSec() + 301)).toBe(false);
  });

  it('a new, empty read-model database beside the log queues again none of the webhooks sent before it', async () => {
    const client = await m.client();
    const path = `/hooks/${randomUUID()}`;
    await registerHook(client.token, path);
    await book(client);
    await hooksAt(path, 1);
    const { store, log } = t.system.deps;
    const fresh = await testDatabase();
    try {
      await migrate(fresh.db);
      // The webhook process of a service started on it reads the whole log.
      const runner = createProjectionRunner(store, fresh.db, [webhookProcess({ store, db: fresh.db })], log);
      await runner.start();
      try {
        expect(await runner.waitFor(await store.headPosition(), 10_000)).toBe(true);
        const queued = () =>
          fresh.db.query<{ user_id: string }>('SELECT user_id FROM webhook_deliveries').then((r) => r.rows);
        expect(await queued()).toEqual([]);
        // What is created from now on is queued there as usual.
        await book(client, '2026-12-08T10:00:00');
        await hooksAt(path, 2);
        expect(await runner.waitFor(await store.headPosition(), 10_000)).toBe(true);
        expect(await queued()).toEqual([{ user_id: client.id }]);
      } finally {
        await runner.stop();
      }
    } finally {
      await fresh.drop();
    }
  });

  it('delivers to a URL with a host name (resolved at delivery), not only to an IP literal', async () => {
    // Node 20 connects with happy eyeballs and asks the lookup for every address: a lookup that answers one
    // address made every delivery to a named host fail ("Invalid IP address: undefined").
    const client = await m.client();
    const path = `/hooks/${randomUUID()}`;
    const url = receiver.url(path).replace('127.0.0.1', 'localhost');
    const res = await t.request('POST', '/api/v1/notification/channel', {
      token: client.token,
      body: { type: 'webhook', address: url },
    });
    expect(res.status).toBe(200);
    await book(client);
    const [hook] = await hooksAt(path, 1);
    expect(
      verifySignature(res.body.secret, hook!.headers['x-coaching-signature'] as string, hook!.body, nowSec()),
    ).toBe(true);
    const rows = await eventually(
      async () =>
        (
          await t.system.deps.db.query<{ status: string; attempts: number; last_error: string | null }>(
            'SELECT status, attempts, last_error FROM webhook_deliveries WHERE user_id = $1',
            [client.id],
          )
        ).rows,
      (r) => r[0]?.status !== 'sending' && r[0]?.status !== undefined,
    );
    expect(rows).toEqual([{ status: 'delivered', attempts: 1, last_error: null }]);
  });

  it("a receiver that never finishes its answer holds back no one's webhooks (the status is all that counts)", async () => {
    // Answers 200 at once, then trickles its body forever: the socket is never idle long enough to time out.
    const sockets = new Set<Socket>();
    const trickler = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      const drip = setInterval(() => res.write('.'), 200);
      res.on('close', () => clearInterval(drip));
    });
    trickler.on('connection', (s) => sockets.add(s));
    await new Promise<void>((r) => trickler.listen(0, '127.0.0.1', r));
    try {
      const slow = await m.client();
      const port = (trickler.address() as AddressInfo).port;
      const registered = await t.request('POST', '/api/v1/notification/channel', {
        token: slow.token,
        body: { type: 'webhook', address: `http://127.0.0.1:${port}/hook` },
      });
      expect(registered.status).toBe(200);
      await book(slow);
      const delivered = await eventually(
        async () =>
          (
            await t.system.deps.db.query<{ status: string }>(
              'SELECT status FROM webhook_deliveries WHERE user_id = $1',
              [slow.id],
            )
          ).rows,
        (r) => r[0]?.status === 'delivered',
        5000,
      );
      expect(delivered).toEqual([{ status: 'delivered' }]);
      // Another user's webhook, queued after it, still goes out.
      const other = await m.client();
      const path = `/hooks/${randomUUID()}`;
      await registerHook(other.token, path);
      await book(other, '2026-12-03T11:00:00');
      expect(await hooksAt(path, 1)).toHaveLength(1);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => trickler.close(r));
    }
  });

  it("a receiver that never answers, with many deliveries due, holds back no one else's webhooks", async () => {
    // Takes the request and never answers (a server that hangs, or a firewall): each attempt waits out its
    // 10 s. Before, a pass waited for all it had claimed, so every other user's webhook waited too, and a
    // backlog for the dead receiver filled every pass.
    const sockets = new Set<Socket>();
    let arrived: () => void = () => undefined;
    const first = new Promise<void>((r) => (arrived = r));
    const silent = http.createServer((req) => {
      req.resume();
      arrived();
    });
    silent.on('connection', (s) => sockets.add(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const dead = await m.client();
      const port = (silent.address() as AddressInfo).port;
      const registered = await t.request('POST', '/api/v1/notification/channel', {
        token: dead.token,
        body: { type: 'webhook', address: `http://127.0.0.1:${port}/hook` },
      });
      expect(registered.status).toBe(200);
      await book(dead);
      await first; // its first attempt is under way
      // A backlog for the same channel, due now (as after an outage of the receiver).
      await t.system.deps.db.query(
        `INSERT INTO webhook_deliveries (id, notification_id, channel_id, user_id, url, payload, status, created_at)
         SELECT gen_random_uuid(), gen_random_uuid(), channel_id, user_id, url, payload, 'pending', created_at
           FROM webhook_deliveries, generate_series(1, 25) WHERE user_id = $1`,
        [dead.id],
      );
      t.system.deliverWebhooks().catch(() => undefined);
      await silence();

      const other = await m.client();
      const path = `/hooks/${randomUUID()}`;
      await registerHook(other.token, path);
      await book(other, '2026-12-03T12:00:00');
      const sent = await eventually(
        async () => receiver.at(path),
        (l) => l.length >= 1,
        6000,
      );
      expect(sent).toHaveLength(1);
    } finally {
      // Nothing more for the dead receiver: its channel goes (what is queued is dropped).
      const channels = await t.system.deps.db.query<{ channel_id: string; user_id: string }>(
        `SELECT DISTINCT channel_id, user_id FROM webhook_deliveries WHERE url LIKE $1`,
        [`http://127.0.0.1:${(silent.address() as AddressInfo).port}/%`],
      );
      for (const c of channels.rows)
        await t.request('DELETE', `/api/v1/notification/channel/${c.channel_id}`, {
          token: t.token(c.user_id),
        });
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it('retries a failing receiver with backoff, same delivery id, and shows every attempt to admins', async () => {
    const client = await m.client();
    const path = `/hooks/${randomUUID()}`;
    receiver.script(path, [500, 503]);
    const { secret } = await registerHook(client.token, path);
    await book(client);
    await hooksAt(path, 1);
    const notificationId = (await t.request('GET', '/api/v1/notifications', { token: client.token })).body[0]
      .id as string;
    const admin = m.admin();
    const view = async () =>
      (await t.request('GET', `/manage/admin/notifications/${notificationId}`, { token: admin })).body;
    const afterFirst = await eventually(view, (v) => v.webhookDeliveries?.[0]?.attempts === 1);
    expect(afterFirst.webhookDeliveries[0]).toMatchObject({
      status: 'pending',
      lastStatusCode: 500,
      nextAttemptAt: new Date(now.getTime() + 30_000).toISOString(),
    });

    // Not due yet: nothing is sent.
    expect(await t.system.deliverWebhooks()).toBe(0);
    expect(receiver.at(path)).toHaveLength(1);
    now = new Date(now.getTime() + 30_000);
    expect(await t.system.deliverWebhooks()).toBe(0); // 503
    now = new Date(now.getTime() + 60_000);
    expect(await t.system.deliverWebhooks()).toBe(1);
    const hooks = receiver.at(path);
    expect(hooks).toHaveLength(3);
    expect(new Set(hooks.map((h) => h.headers['x-coaching-delivery'])).size).toBe(1);
    expect(new Set(hooks.map((h) => h.body)).size).toBe(1);
    for (const h of hooks)
      expect(verifySignature(secret!, h.headers['x-coaching-signature'] as string, h.body, nowSec())).toBe(
        true,
      );

    const delivered = (await view()).webhookDeliveries;
    expect(delivered).toEqual([
      expect.objectContaining({
        notificationId,
        url: receiver.url(path),
        status: 'delivered',
        attempts: 3,
        lastStatusCode: 200,
        nextAttemptAt: null,
        deliveredAt: now.toISOString(),
      }),
    ]);
    expect(delivered[0].log.map((a: { statusCode: number }) => a.statusCode)).toEqual([500, 503, 200]);
    const list = await t.request('GET', `/manage/admin/webhook-deliveries?user=${client.id}`, {
      token: admin,
    });
    expect(list.status).toBe(200);
    expect(list.body).toEqual(delivered);
    expect((await t.request('GET', '/manage/admin/webhook-deliveries', { token: client.token })).status).toBe(
      403,
    );
  });

  it('gives up after ten attempts and records it as failed', async () => {
    const client = await m.client();
    const path = `/hooks/${randomUUID()}`;
    receiver.script(path, Array(10).fill(500));
    await registerHook(client.token, path);
    await book(client);
    await hooksAt(path, 1);
    for (let i = 0; i < 12; i++) {
      now = new Date(now.getTime() + 3_600_000);
      await t.system.deliverWebhooks();
    }
    expect(receiver.at(path)).toHaveLength(10);
    const rows = await t.system.deps.db.query<{ status: string; attempts: number }>(
      'SELECT status, attempts FROM webhook_deliveries WHERE user_id = $1',
      [client.id],
    );
    expect(rows.rows).toEqual([{ status: 'failed', attempts: 10 }]);
  });

  it('a claim left by a process that died mid-send is taken over after two minutes', async () => {
    const client = await m.client();
    const path = `/hooks/${randomUUID()}`;
    receiver.script(path, [500]);
    await registerHook(client.token, path);
    await book(client);
    await hooksAt(path, 1);
    const { db } = t.system.deps;
    await eventually(
      async () =>
        (await db.query('SELECT status FROM webhook_deliveries WHERE user_id = $1', [client.id])).rows,
      (r) => r[0]?.status === 'pending',
    );
    // As if another instance claimed it for its second attempt and died before recording the outcome.
    now = new Date(now.getTime() + 30_000);
    await db.query(`UPDATE webhook_deliveries SET status = 'sending', claimed_at = $2 WHERE user_id = $1`, [
      client.id,
      now.toISOString(),
    ]);
    expect(await t.system.deliverWebhooks()).toBe(0);
    now = new Date(now.getTime() + 60_000);
    expect(await t.system.deliverWebhooks()).toBe(0);
    expect(receiver.at(path)).toHaveLength(1);
    now = new Date(now.getTime() + 61_000);
    expect(await t.system.deliverWebhooks()).toBe(1);
    expect(receiver.at(path)).toHaveLength(2);
  });

  it("one user's 20 channels at receivers that never answer hold 4 places, not all: another user's webhook goes out", async () => {
    const hog = await m.client();
    const other = await m.client();
    const slow = await startHeldReceiver();
    try {
      for (let i = 0; i < 20; i++) {
        const res = await t.request('POST', '/api/v1/notification/channel', {
          token: hog.token,
          body: { type: 'webhook', address: slow.url(`/hog-${i}`) },
        });
        expect(res.status).toBe(200);
      }
      const path = `/other-${randomUUID()}`;
      await registerHook(other.token, path);
      await book(hog); // 20 deliveries, one per channel, none answered
      await eventually(
        async () => slow.requests,
        (n) => n >= MAX_IN_FLIGHT_PER_USER,
      );
      await book(other);
      // Within the hog's 10 s: before, its 20 attempts held every place and this one waited them out.
      const got = await eventually(
        async () => receiver.at(path),
        (r) => r.length === 1,
        5_000,
      );
      expect(got).toHaveLength(1);
      expect(slow.requests).toBe(MAX_IN_FLIGHT_PER_USER);
    } finally {
      await slow.close();
    }
  });

  it('a sender that stalled past its claim does not undo what the sender that took it over recorded', async () => {
    const client = await m.client();
    const slow = await startHeldReceiver();
    try {
      const hook = await t.request('POST', '/api/v1/notification/channel', {
        token: client.token,
        body: { type: 'webhook', address: slow.url('/hook') },
      });
      expect(hook.status).toBe(200);
      await book(client);
      await slow.arrived; // claimed and sent; no answer yet
      // The sender stalls past two minutes; another takes the claim over and delivers the webhook.
      const { db } = t.system.deps;
      await db.query(
        `UPDATE webhook_deliveries SET status = 'delivered', delivered_at = $2, claimed_at = NULL, attempts = 2,
           last_status_code = 200 WHERE channel_id = $1`,
        [hook.body.id, now.toISOString()],
      );
      slow.release(500); // the stalled sender's attempt ends, failed
      await eventually(
        async () =>
          (
            await db.query(
              `SELECT 1 FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
                WHERE d.channel_id = $1`,
              [hook.body.id],
            )
          ).rows,
        (r) => r.length === 1,
      );
      const row = await db.query(
        'SELECT status, attempts, next_attempt_at FROM webhook_deliveries WHERE channel_id = $1',
        [hook.body.id],
      );
      expect(row.rows).toEqual([{ status: 'delivered', attempts: 2, next_attempt_at: null }]);
      now = new Date(now.getTime() + 3_600_000);
      await t.system.deliverWebhooks();
      await silence();
      expect(slow.requests).toBe(1);
    } finally {
      await slow.close();
    }
  });

  it('sends only notifications created after the channel, and only the owner’s', async () => {
    const client = await m.client();
    const { coach, session } = await book(client);
    const path = `/hooks/${randomUUID()}`;
    await registerHook(client.token, path);
    const stranger = await m.client();
    await book(stranger, '2026-12-03T10:00:00');
    await t.system.deliverWebhooks();
    await silence();
    expect(receiver.at(path)).toHaveLength(0);
    // The coach approves: the client's new notification goes out.
    expect(
      (await t.request('POST', `/api/v1/session/${session.id}/approve`, { token: coach.token })).status,
    ).toBe(200);
    const [hook] = await hooksAt(path, 1);
    expect(JSON.parse(hook!.body).data.notification).toMatchObject({
      type: 'session_approved',
      contentId: session.id,
    });
  });

  it("sends a client's payment notice and a coach's review notice as it sends the others", async () => {
    const client = await m.client();
    const clientPath = `/hooks/${randomUUID()}`;
    await registerHook(client.token, clientPath);
    const { coach, session } = await book(client);
    // The coach's hook is registered after its booking notice, so it is sent the review only.
    await eventually(
      async () => (await t.request('GET', '/api/v1/notifications', { token: coach.token })).body,
      (l) => l.length === 1,
    );
    const coachPath = `/hooks/${randomUUID()}`;
    await registerHook(coach.token, coachPath);
    const paymentId = (await m.sessionAs(client.token, session.id)).paymentId as string;
    for (const status of ['checkout', 'received'])
      expect(
        (
          await t.request('POST', `/api/v1/payment/private/payment/${paymentId}/update`, {
            token: m.service(),
            body: { status },
          })
        ).status,
      ).toBe(200);
    const act = (token: string, action: string, body?: unknown) =>
      t.request('POST', `/api/v1/session/${session.id}/${action}`, { token, body });
    expect((await act(coach.token, 'approve')).status).toBe(200);
    const at = now;
    now = new Date('2026-12-02T10:05:00Z');
    try {
      expect((await act(coach.token, 'complete')).status).toBe(200);
      expect((await act(client.token, 'review', { rating: 5 })).status).toBe(200);
    } finally {
      now = at;
    }
    const sent = (path: string, n: number) =>
      hooksAt(path, n).then((l) => l.map((h) => JSON.parse(h.body).data.notification));
    const toClient = await sent(clientPath, 3);
    expect(toClient.map((n: { type: string }) => n.type).sort()).toEqual([
      'payment_received',
      'session_approved',
      'session_booked',
    ]);
    expect(toClient.find((n: { type: string }) => n.type === 'payment_received')).toMatchObject({
      contentType: 'payment',
      contentId: paymentId,
      message: 'Payment received for Tennis basics',
      code: 10,
    });
    expect(await sent(coachPath, 1)).toEqual([
      expect.objectContaining({
        type: 'session_reviewed',
        contentType: 'session',
        contentId: session.id,
        message: 'New review of Tennis basics (5/5)',
        code: 9,
      }),
    ]);
  });
});

describe('listing and removing channels', () => {
  it("lists the caller's channels in the order registered, without secrets; strangers see their own only", async () => {
    const client = await m.client();
    const hook = await registerHook(client.token, `/hooks/${randomUUID()}`);
    const push = await t.request('POST', '/api/v1/notification/channel', {
      token: client.token,
      body: { type: 'push', address: `token-${randomUUID()}` },
    });
    const list = await t.request('GET', '/api/v1/notification/channel', { token: client.token });
    expect(list.status).toBe(200);
    expect(list.body).toEqual(
      [{ ...hook, secret: undefined }, push.body].map((c) => JSON.parse(JSON.stringify(c))),
    );
    expect(JSON.stringify(list.body)).not.toContain('whsec_');
    const stranger = await m.client();
    expect((await t.request('GET', '/api/v1/notification/channel', { token: stranger.token })).body).toEqual(
      [],
    );
    expect((await t.request('GET', '/api/v1/notification/channel')).status).toBe(401);
  });

  it('removes a channel: nothing more is sent to it, its place among the 20 is free, a second removal is 404', async () => {
    const client = await m.client();
    const path = `/hooks/${randomUUID()}`;
    const hook = await registerHook(client.token, path);
    const stranger = await m.client();
    const theirs = await t.request('DELETE', `/api/v1/notification/channel/${hook.id}`, {
      token: stranger.token,
    });
    expect(theirs.status).toBe(404);
    expect(theirs.body).toMatchObject({ error: 'channel_not_found' });
    expect(
      (await t.request('DELETE', '/api/v1/notification/channel/not-a-uuid', { token: client.token })).status,
    ).toBe(422);

    const removed = await t.request('DELETE', `/api/v1/notification/channel/${hook.id.toUpperCase()}`, {
      token: client.token,
    });
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ id: hook.id, status: 'removed' });
    // Read-your-writes: the list no longer has it.
    expect((await t.request('GET', '/api/v1/notification/channel', { token: client.token })).body).toEqual(
      [],
    );
    const again = await t.request('DELETE', `/api/v1/notification/channel/${hook.id}`, {
      token: client.token,
    });
    expect(again.status).toBe(404);

    await book(client);
    await eventually(
      async () => (await t.request('GET', '/api/v1/notifications', { token: client.token })).body,
      (l) => l.length === 1,
    );
    await t.system.deliverWebhooks();
    await silence();
    expect(receiver.at(path)).toHaveLength(0);

    // 20 at most at once; removing one makes room, and the same URL registered again is a new channel
    // with a new secret.
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await t.request('POST', '/api/v1/notification/channel', {
        token: client.token,
        body: { type: 'push', address: `token-${i}-${randomUUID()}` },
      });
      expect(res.status).toBe(200);
      ids.push(res.body.id);
    }
    const full = await t.request('POST', '/api/v1/notification/channel', {
      token: client.token,
      body: { type: 'webhook', address: receiver.url(path) },
    });
    expect(full.status).toBe(409);
    expect(full.body).toMatchObject({ error: 'channel_limit_reached' });
    expect(
      (await t.request('DELETE', `/api/v1/notification/channel/${ids[0]}`, { token: client.token })).status,
    ).toBe(200);
    const back = await registerHook(client.token, path);
    expect(back.id).not.toBe(hook.id);
    expect(back.secret).toMatch(/^whsec_/);
    expect(back.secret).not.toBe(hook.secret);
  });

  it('runs a keyed registration again after a crash with the first outcome, also when the channel was removed since', async () => {
    const client = await m.client();
    const headers = { 'Idempotency-Key': `crash-${randomUUID()}` };
    const body = { type: 'webhook', address: receiver.url(`/hooks/${randomUUID()}`) };
    const first = await t.request('POST', '/api/v1/notification/channel', {
      token: client.token,
      body,
      headers,
    });
    expect(first.status).toBe(200);
    expect(
      (await t.request('DELETE', `/api/v1/notification/channel/${first.body.id}`, { token: client.token }))
        .status,
    ).toBe(200);
    // The process died before the answer was kept: the key is claimed with no answer, past its lease.
    await t.system.deps.db.query(
      `UPDATE idempotency_keys SET status = NULL, response = NULL, created_at = now() - interval '1 hour'
       WHERE key = $1`,
      [headers['Idempotency-Key']],
    );
    const retry = await t.request('POST', '/api/v1/notification/channel', {
      token: client.token,
      body,
      headers,
    });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(first.body);
    // Nothing registered again: the channel stays removed.
    expect((await t.request('GET', '/api/v1/notification/channel', { token: client.token })).body).toEqual(
      [],
    );
  });

  it('closes, without sending, a claim a dead sender left on a channel removed since', async () => {
    const client = await m.client();
    const path = `/hooks/${randomUUID()}`;
    receiver.script(path, [500]);
    const hook = await registerHook(client.token, path);
    await book(client);
    await hooksAt(path, 1);
    const { db } = t.system.deps;
    const row = async () =>
      (
        await db.query<{ status: string; last_error: string }>(
          'SELECT status, last_error FROM webhook_deliveries WHERE channel_id = $1',
          [hook.id],
        )
      ).rows;
    await eventually(row, (r) => r[0]?.status === 'pending');
    // As if another instance claimed it for its second attempt and died; then the user removed the channel.
    now = new Date(now.getTime() + 30_000);
    await db.query(
      `UPDATE webhook_deliveries SET status = 'sending', claimed_at = $2 WHERE channel_id = $1`,
      [hook.id, now.toISOString()],
    );
    expect(
      (await t.request('DELETE', `/api/v1/notification/channel/${hook.id}`, { token: client.token })).status,
    ).toBe(200);
    await eventually(
      async () =>
        (
          await db.query(
            'SELECT 1 FROM webhook_deliveries WHERE channel_id = $1 AND channel_removed_at IS NOT NULL',
            [hook.id],
          )
        ).rowCount,
      (n) => n === 1,
    );
    now = new Date(now.getTime() + 121_000);
    expect(await t.system.deliverWebhooks()).toBe(0);
    expect(receiver.at(path)).toHaveLength(1);
    expect(await row()).toEqual([{ status: 'failed', last_error: 'channel removed' }]);
  });

  it('drops what was queued for a removed channel and not sent yet; a failing attempt under way is not retried', async () => {
    const client = await m.client();
    const path = `/hooks/${randomUUID()}`;
    receiver.script(path, [500]);
    const hook = await registerHook(client.token, path);
    const other = `/hooks/${randomUUID()}`;
    await registerHook(client.token, other);
    await book(client);
    await hooksAt(path, 1); // the first attempt failed: queued again in 30 s
    await hooksAt(other, 1);
    const { db } = t.system.deps;
    const rows = () =>
      db.query<{ status: string; last_error: string; next_attempt_at: Date | null }>(
        'SELECT status, last_error, next_attempt_at FROM webhook_deliveries WHERE channel_id = $1',
        [hook.id],
      );
    await eventually(
      async () => (await rows()).rows,
      (r) => r[0]?.status === 'pending',
    );

    expect(
      (await t.request('DELETE', `/api/v1/notification/channel/${hook.id}`, { token: client.token })).status,
    ).toBe(200);
    await eventually(
      async () => (await rows()).rows,
      (r) => r[0]?.status === 'failed',
    );
    expect((await rows()).rows).toEqual([
      { status: 'failed', last_error: 'channel removed', next_attempt_at: null },
    ]);
    now = new Date(now.getTime() + 3_600_000);
    await t.system.deliverWebhooks();
    await silence();
    expect(receiver.at(path)).toHaveLength(1);

    // An attempt under way when its channel is removed, and failing, is not tried again.
    const slow = await startHeldReceiver();
    try {
      const late = await t.request('POST', '/api/v1/notification/channel', {
        token: client.token,
        body: { type: 'webhook', address: slow.url('/late') },
      });
      expect(late.status).toBe(200);
      await book(client, '2026-12-04T10:00:00');
      await slow.arrived; // claimed and sent; the receiver has not answered yet
      expect(
        (await t.request('DELETE', `/api/v1/notification/channel/${late.body.id}`, { token: client.token }))
          .status,
      ).toBe(200);
      const lateRow = () =>
        db.query<{ status: string; attempts: number; next_attempt_at: Date | null; removed: boolean }>(
          `SELECT status, attempts, next_attempt_at, channel_removed_at IS NOT NULL AS removed
             FROM webhook_deliveries WHERE channel_id = $1`,
          [late.body.id],
        );
      await eventually(
        async () => (await lateRow()).rows,
        (r) => r[0]?.removed === true,
      );
      slow.release(500);
      const settled = await eventually(
        async () => (await lateRow()).rows,
        (r) => r[0]?.attempts === 1,
      );
      expect(settled).toEqual([{ status: 'failed', attempts: 1, next_attempt_at: null, removed: true }]);
      now = new Date(now.getTime() + 3_600_000);
      expect(await t.system.deliverWebhooks()).toBe(0);
      expect((await lateRow()).rows[0]).toMatchObject({ status: 'failed', attempts: 1 });
    } finally {
      await slow.close();
    }
  });
  it('sends nothing to a channel once its removal is answered, also before the webhook process has read it', async () => {
    const client = await m.client();
    const path = `/hooks/${randomUUID()}`;
    receiver.script(path, [500]);
    const hook = await registerHook(client.token, path);
    await book(client);
    await hooksAt(path, 1); // failed: tried again in 30 s
    const { db } = t.system.deps;
    const row = async () =>
      (
        await db.query<{ status: string }>('SELECT status FROM webhook_deliveries WHERE channel_id = $1', [
          hook.id,
        ])
      ).rows;
    await eventually(row, (r) => r[0]?.status === 'pending');
    expect(
      (await t.request('DELETE', `/api/v1/notification/channel/${hook.id}`, { token: client.token })).status,
    ).toBe(200);
    await eventually(row, (r) => r[0]?.status === 'failed');
    // As the queue stands while the webhook process lags behind the log (busy, or on another instance):
    // the removal answered, the retry still pending and due.
    await db.query(
      `UPDATE webhook_deliveries SET status = 'pending', channel_removed_at = NULL, next_attempt_at = NULL
        WHERE channel_id = $1`,
      [hook.id],
    );
    now = new Date(now.getTime() + 60_000);
    expect(await t.system.deliverWebhooks()).toBe(0);
    await silence();
    expect(receiver.at(path)).toHaveLength(1);
    expect(await row()).toEqual([{ status: 'pending' }]);
  });
});

describe('receivers that are gone or do not resolve', () => {
  it('a receiver answering 410 Gone is not tried again and its channel is removed, once; its owner is told in the app', async () => {
    const client = await m.client();
    const gonePath = `/hooks/${randomUUID()}`;
    receiver.script(gonePath, [410]);
    const gone = await registerHook(client.token, gonePath);
    const otherPath = `/hooks/${randomUUID()}`;
    const other = await registerHook(client.token, otherPath);
    await book(client);
    await hooksAt(gonePath, 1);
    const { db, store } = t.system.deps;
    const rows = async () =>
      (
        await db.query<{ status: string; attempts: number; last_status_code: number; next_attempt_at: Date }>(
          `SELECT status, attempts, last_status_code, next_attempt_at FROM webhook_deliveries
            WHERE channel_id = $1`,
          [gone.id],
        )
      ).rows;
    expect(await eventually(rows, (r) => r[0]?.status === 'failed')).toEqual([
      { status: 'failed', attempts: 1, last_status_code: 410, next_attempt_at: null },
    ]);
    // The owner's list no longer has it, and the owner's inbox says why (its other webhooks get that too).
    const channels = await eventually(
      async () => (await t.request('GET', '/api/v1/notification/channel', { token: client.token })).body,
      (l) => l.length === 1,
    );
    expect(channels).toEqual([expect.objectContaining({ id: other.id })]);
    const inbox = await eventually(
      async () => (await t.request('GET', '/api/v1/notifications', { token: client.token })).body,
      (l) => l.some((n: { type: string }) => n.type === 'webhook_removed'),
    );
    expect(inbox.filter((n: { type: string }) => n.type === 'webhook_removed')).toEqual([
      expect.objectContaining({
        contentType: 'notification_channel',
        contentId: gone.id,
        code: 7,
        unread: true,
        message: expect.stringContaining('410 Gone'),
      }),
    ]);
    const toOther = await hooksAt(otherPath, 2);
    expect(toOther.map((h) => JSON.parse(h.body).data.notification.type)).toContain('webhook_removed');

    // Nothing more goes to it: no retry, and no later notification.
    now = new Date(now.getTime() + 3_600_000);
    await t.system.deliverWebhooks();
    await book(client, '2026-12-04T10:00:00');
    await hooksAt(otherPath, 3);
    await silence();
    expect(receiver.at(gonePath)).toHaveLength(1);
    // Removed once, by the system, naming the delivery that found it gone: a second 410 (a delivery claimed
    // before the removal) finds no channel and appends nothing.
    const log = (await store.readStream(`notifications-${client.id}`)).events;
    const removals = log.filter((e) => e.type === 'NotificationChannelRemoved');
    expect(removals).toHaveLength(1);
    expect(removals[0]!.data).toMatchObject({ channelId: gone.id, reason: 'receiver_gone' });
    expect(removals[0]!.metadata.actor).toMatchObject({ role: 'system' });
    // An auditor follows the removal (and the notice beside it) to its cause: the notification whose delivery
    // the receiver answered 410, and through it the booking request; the removal shares that correlation.
    const booking = log.find((e) => e.type === 'NotificationCreated')!;
    const notice = log.find((e) => (e.data as { type?: string }).type === 'webhook_removed')!;
    const auditor = t.token(randomUUID(), ['auditor']);
    for (const id of [removals[0]!.id, notice.id]) {
      const chain = await t.request('GET', `/api/v1/audit/events/${id}/chain`, { token: auditor });
      expect(chain.status).toBe(200);
      expect(chain.body.correlationId).toBe(booking.metadata.correlationId);
      expect(chain.body.event.metadata.causationId).toBe(booking.id);
      // (On EventStoreDB the booking process may have written the booking from its hold: one cause more.)
      expect(chain.body.causes.map((e: { type: string }) => e.type).slice(-2)).toEqual([
        'SessionsBooked',
        'NotificationCreated',
      ]);
      expect(chain.body.causes[0].metadata.requestId).toEqual(expect.any(String));
    }
    // Registering the URL again makes a new channel that is delivered to as any other.
    const back = await registerHook(client.token, gonePath);
    expect(back.id).not.toBe(gone.id);
  });

  it('a host name that never resolves is a failed attempt, tried again later: no hang, no error answer', async () => {
    const blackHole = await startFakeDns({ silent: true });
    const hole = await startTestSystem({
      clock: () => now,
      env: { WEBHOOK_ALLOW_LOOPBACK: 'true' },
      webhookResolver: createHostResolver({ servers: [blackHole.server], deadlineMs: 500 }),
    });
    try {
      const hm = marketplace(hole);
      const client = await hm.client();
      const registered = await hole.request('POST', '/api/v1/notification/channel', {
        token: client.token,
        body: { type: 'webhook', address: 'https://hooks.black-hole.example.test/x' },
      });
      expect(registered.status).toBe(200);
      const coach = await hm.coach();
      const serviceId = await hm.offering(coach);
      const booked = await hole.request('POST', `/api/v1/service/${serviceId}`, {
        token: client.token,
        body: { slots: ['2026-12-02T10:00:00'] },
      });
      expect(booked.status).toBe(200);
      const row = await eventually(
        async () =>
          (
            await hole.system.deps.db.query<{
              status: string;
              attempts: number;
              last_error: string;
              next_attempt_at: Date;
            }>(
              'SELECT status, attempts, last_error, next_attempt_at FROM webhook_deliveries WHERE user_id = $1',
              [client.id],
            )
          ).rows,
        (r) => r[0]?.attempts === 1,
      );
      expect(row).toEqual([
        {
          status: 'pending',
          attempts: 1,
          last_error: 'hooks.black-hole.example.test did not resolve within 500 ms',
          next_attempt_at: new Date(now.getTime() + 30_000),
        },
      ]);
      expect(blackHole.state.queries).toBeGreaterThan(0);
    } finally {
      await hole.close();
      await blackHole.close();
    }
  });
});

describe('the dispatcher', () => {
  it('finds due deliveries by index, not by reading every delivery ever made (it looks every second)', async () => {
    const fresh = await testDatabase();
    try {
      await migrate(fresh.db);
      // Thousands of delivered webhooks, and nothing due.
      await fresh.db.query(
        `INSERT INTO webhook_deliveries (id, notification_id, channel_id, user_id, url, payload, status,
           created_at, delivered_at)
         SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'https://example.com/',
                '{}', 'delivered', now() - i * interval '1 minute', now()
           FROM generate_series(1, 5000) AS i`,
      );
      await fresh.db.query('ANALYZE webhook_deliveries');
      const stale = new Date(Date.now() - 120_000).toISOString();
      const plan = await fresh.db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${claimDueSql(20)}`, [
        new Date().toISOString(),
        stale,
        [randomUUID()],
        [randomUUID()],
        [1],
      ]);
      const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(text).toContain('webhook_deliveries_claimed');
      expect(text).not.toMatch(/Seq Scan on webhook_deliveries/);
    } finally {
      await fresh.drop();
    }
  });
});

describe('the database away when an attempt ends', () => {
  it('records the outcome once the database is back, and sends nothing twice', async () => {
    const database = await testDatabase();
    const { db, away, close: closeSwitch } = await switchableDatabase(database.db);
    let clock = new Date('2026-12-01T08:00:00Z');
    const s = await startTestSystem({ db, clock: () => clock, env: { WEBHOOK_ALLOW_LOOPBACK: 'true' } });
    const slow = await startHeldReceiver();
    try {
      const market = marketplace(s);
      const client = await market.client();
      const hook = await s.request('POST', '/api/v1/notification/channel', {
        token: client.token,
        body: { type: 'webhook', address: slow.url('/hook') },
      });
      expect(hook.status).toBe(200);
      const serviceId = await market.offering(await market.coach());
      const booked = await s.request('POST', `/api/v1/service/${serviceId}`, {
        token: client.token,
        body: { slots: ['2026-12-02T10:00:00'] },
      });
      expect(booked.status).toBe(200);
      await slow.arrived; // claimed and sent
      // The receiver answers 200 while the database is away (restarting, failing over) for a second.
      away.now = true;
      slow.release(200);
      await new Promise((r) => setTimeout(r, 1000));
      away.now = false;
      const row = () =>
        database.db
          .query<{ status: string; attempts: number }>(
            'SELECT status, attempts FROM webhook_deliveries WHERE channel_id = $1',
            [hook.body.id],
          )
          .then((r) => r.rows);
      expect(await eventually(row, (r) => r[0]?.status === 'delivered', 8000)).toEqual([
        { status: 'delivered', attempts: 1 },
      ]);
      // Past the two minutes after which a claim counts as a dead sender's: nothing is sent again.
      clock = new Date(clock.getTime() + 180_000);
      await s.system.deliverWebhooks();
      await silence();
      expect(slow.requests).toBe(1);
    } finally {
      await s.close();
      await slow.close();
      await closeSwitch();
      await database.drop();
    }
  });
});
