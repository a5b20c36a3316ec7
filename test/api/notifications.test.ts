import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { uuidFrom } from '../../commands/notifications/sessionNotices';
import { notificationProcess } from '../../projections/notificationProcess';
import { eventually, marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

const START = new Date('2026-12-01T08:00:00Z');
let now = START;
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
beforeAll(async () => {
  t = await startTestSystem({ clock: () => now });
  m = marketplace(t);
});
afterAll(() => t.close());
afterEach(() => {
  now = START;
});

const SLOT = '2026-12-02T10:00:00';
const list = (token: string, query = '') => t.request('GET', `/api/v1/notifications${query}`, { token });

async function booked() {
  const coach = await m.coach();
  const serviceId = await m.offering(coach);
  const client = await m.client();
  const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
    token: client.token,
    body: { slots: [SLOT] },
  });
  expect(res.status).toBe(200);
  const session = res.body[0] as { id: string; groupId: string };
  const mine = (u: { token: string }) =>
    eventually(
      async () => (await list(u.token)).body as any[],
      (l) => l.length >= 1,
    );
  return { coach, client, session, clientList: await mine(client), coachList: await mine(coach) };
}

describe('notifications (24 to 31)', () => {
  it('a booking notifies both parties once, also when the cause is handled again', async () => {
    const { client, coach, session, clientList, coachList } = await booked();
    expect(clientList).toEqual([
      {
        id: expect.any(String),
        type: 'session_booked',
        contentType: 'booking',
        contentId: session.groupId,
        message: expect.stringContaining('Tennis basics'),
        code: 1,
        unread: true,
        createdAt: expect.any(String),
      },
    ]);
    expect(coachList[0].type).toBe('session_booked');
    const { store } = t.system.deps;
    const cause = (await store.readStream(`booking-${session.groupId}`)).events[0]!;
    await notificationProcess(store).react!(cause);
    await notificationProcess(store).react!(cause);
    expect((await store.readStream(`notifications-${client.id}`)).events).toHaveLength(1);
    expect((await list(client.token)).body).toHaveLength(1);
    expect((await list(coach.token)).body).toHaveLength(1);
  });

  it("each message names the session's time as its e-mail does, so a client with several sessions of a service can tell which", async () => {
    const { client, coach, session, clientList, coachList } = await booked();
    const at = '2026-12-02 10:00 (Europe/Berlin)';
    expect(clientList[0].message).toBe(
      `Your booking of Tennis basics on ${at} is received and waits for the coach`,
    );
    expect(coachList[0].message).toBe(`New booking of Tennis basics on ${at}: please approve or decline it`);
    const act = (who: { token: string }, action: string, body?: unknown) =>
      t.request('POST', `/api/v1/session/${session.id}/${action}`, { token: who.token, body });
    expect((await act(coach, 'reschedule', { slot: '2026-12-02T14:00' })).status).toBe(200);
    expect((await act(coach, 'approve')).status).toBe(200);
    expect((await act(coach, 'cancel', { reason: 'ill' })).status).toBe(200);
    const messages = await eventually(
      async () => ((await list(client.token)).body as { message: string }[]).map((n) => n.message),
      (l) => l.length >= 4,
    );
    expect(messages).toEqual([
      'Your session of Tennis basics on 2026-12-02 14:00 (Europe/Berlin) was canceled by the coach. Reason: ill',
      'Your session of Tennis basics on 2026-12-02 14:00 (Europe/Berlin) was approved',
      'Your coach moved your session of Tennis basics from 2026-12-02 10:00 to 2026-12-02 14:00 (Europe/Berlin)',
      `Your booking of Tennis basics on ${at} is received and waits for the coach`,
    ]);
  });

  it("a decline, cancellation or dispute tells the reason in the app too, as its e-mail does (the system's in words)", async () => {
    const declined = await booked();
    const reasonOf = async (who: { token: string }, type: string) =>
      (
        await eventually(
          async () => (await list(who.token)).body as { type: string; message: string }[],
          (l) => l.some((n) => n.type === type),
        )
      ).find((n) => n.type === type)?.message;
    const act = (s: { session: { id: string } }, who: { token: string }, action: string, body?: unknown) =>
      t.request('POST', `/api/v1/session/${s.session.id}/${action}`, { token: who.token, body });
    expect((await act(declined, declined.coach, 'decline', { reason: 'I am away that week' })).status).toBe(
      200,
    );
    expect(await reasonOf(declined.client, 'session_declined')).toBe(
      'Your session of Tennis basics on 2026-12-02 10:00 (Europe/Berlin) was declined. Reason: I am away that week',
    );
    const unpaid = await booked();
    const paymentId = (await m.sessionAs(unpaid.client.token, unpaid.session.id)).paymentId as string;
    const canceled = await t.request('POST', `/api/v1/payment/private/payment/${paymentId}/cancel`, {
      token: m.service(),
    });
    expect(canceled.status).toBe(200);
    expect(await reasonOf(unpaid.client, 'session_canceled')).toBe(
      'Your session of Tennis basics on 2026-12-02 10:00 (Europe/Berlin) was canceled. Reason: the payment was canceled or not made in time',
    );
    const blank = await booked();
    expect((await act(blank, blank.client, 'cancel', { reason: '  ' })).status).toBe(200);
    expect(await reasonOf(blank.coach, 'session_canceled')).toBe(
      'Your session of Tennis basics on 2026-12-02 10:00 (Europe/Berlin) was canceled by the client',
    );
  });

  it('a review tells its coach in the app, with the rating, once, also when the cause is handled again', async () => {
    const { client, coach, session } = await booked();
    const act = (who: { token: string }, action: string, body?: unknown) =>
      t.request('POST', `/api/v1/session/${session.id}/${action}`, { token: who.token, body });
    expect((await act(coach, 'approve')).status).toBe(200);
    now = new Date('2026-12-02T10:05:00Z');
    expect((await act(coach, 'complete')).status).toBe(200);
    expect((await act(client, 'review', { rating: 4, comment: 'Good drills' })).status).toBe(200);
    const [reviewed] = await eventually(
      async () => (await list(coach.token)).body as any[],
      (l) => l[0]?.type === 'session_reviewed',
    );
    expect(reviewed).toEqual({
      id: expect.any(String),
      type: 'session_reviewed',
      contentType: 'session',
      contentId: session.id,
      message: 'New review of Tennis basics (4/5)',
      code: 9,
      unread: true,
      createdAt: expect.any(String),
    });
    // The client, who wrote it, is told nothing of it (its approval and booking only).
    expect(((await list(client.token)).body as { type: string }[]).map((n) => n.type)).toEqual([
      'session_approved',
      'session_booked',
    ]);
    const { store } = t.system.deps;
    const cause = (await store.readStream(`booking-${session.groupId}`)).events.find(
      (e) => e.type === 'SessionReviewed',
    )!;
    expect(reviewed.id).toBe(uuidFrom('notification', cause.id, coach.id));
    const inbox = async () => (await store.readStream(`notifications-${coach.id}`)).events.length;
    const before = await inbox();
    await notificationProcess(store).react!(cause);
    await notificationProcess(store).react!(cause);
    expect(await inbox()).toBe(before);
    expect(((await list(coach.token)).body as { type: string }[]).map((n) => n.type)).toEqual([
      'session_reviewed',
      'session_booked',
    ]);
  });

  it('a client hears of its payment received, refunded and then canceled, each once; its coach of none', async () => {
    const { client, coach, session } = await booked();
    const paymentId = (await m.sessionAs(client.token, session.id)).paymentId as string;
    const provider = (status: string) =>
      t.request('POST', `/api/v1/payment/private/payment/${paymentId}/update`, {
        token: m.service(),
        body: { status },
      });
    const newest = (type: string) =>
      eventually(
        async () => (await list(client.token)).body as any[],
        (l) => l[0]?.type === type,
      ).then((l) => l[0]);
    expect((await provider('checkout')).status).toBe(200);
    expect((await provider('received')).status).toBe(200);
    expect(await newest('payment_received')).toEqual({
      id: expect.any(String),
      type: 'payment_received',
      contentType: 'payment',
      contentId: paymentId,
      message: 'Payment received for Tennis basics',
      code: 10,
      unread: true,
      createdAt: expect.any(String),
    });
    // The client cancels its only session: the money goes back (received -> refund, booking_canceled).
    const cancel = await t.request('POST', `/api/v1/session/${session.id}/cancel`, {
      token: client.token,
      body: { reason: 'ill' },
    });
    expect(cancel.status).toBe(200);
    expect(await newest('payment_refund')).toMatchObject({
      contentType: 'payment',
      contentId: paymentId,
      message: 'Your payment for Tennis basics is being refunded',
      code: 11,
    });
    // The refund went through (refund -> canceled): no session was left open for a session notice to tell.
    expect((await provider('canceled')).status).toBe(200);
    expect(await newest('payment_canceled')).toMatchObject({
      contentType: 'payment',
      contentId: paymentId,
      message: 'Your payment for Tennis basics was canceled after its refund',
      code: 12,
    });
    expect(((await list(client.token)).body as { type: string }[]).map((n) => n.type)).toEqual([
      'payment_canceled',
      'payment_refund',
      'payment_received',
      'session_booked',
    ]);
    // Each move handled again (a replay) notifies no one twice.
    const { store } = t.system.deps;
    const inbox = async () => (await store.readStream(`notifications-${client.id}`)).events.length;
    const before = await inbox();
    for (const move of (await store.readStream(`payment-${paymentId}`)).events) {
      await notificationProcess(store).react!(move);
      await notificationProcess(store).react!(move);
    }
    expect(await inbox()).toBe(before);
    // The coach hears of the booking and of its client's cancellation, not of the client's money.
    const coachTypes = await eventually(
      async () => ((await list(coach.token)).body as { type: string }[]).map((n) => n.type),
      (l) => l.length >= 2,
    );
    expect(coachTypes).toEqual(['session_canceled', 'session_booked']);
  });

  it('a failed payment tells its client by when to pay again before the booking is canceled, once per failure', async () => {
    const { client, coach, session } = await booked();
    const paymentId = (await m.sessionAs(client.token, session.id)).paymentId as string;
    const provider = (status: string) =>
      t.request('POST', `/api/v1/payment/private/payment/${paymentId}/update`, {
        token: m.service(),
        body: { status },
      });
    const failed = async (n: number) =>
      (
        await eventually(
          async () => (await list(client.token)).body as any[],
          (l) => l.filter((x) => x.type === 'payment_failed').length >= n,
        )
      ).filter((x) => x.type === 'payment_failed');
    expect((await provider('checkout')).status).toBe(200);
    expect((await provider('failed')).status).toBe(200);
    const [first] = await failed(1);
    expect(first).toEqual({
      id: expect.any(String),
      type: 'payment_failed',
      contentType: 'payment',
      contentId: paymentId,
      message:
        'Your payment for Tennis basics failed: pay again by 2026-12-02 09:00 (Europe/Berlin), or the booking is canceled then',
      code: 14,
      unread: true,
      createdAt: expect.any(String),
    });
    // Tried again and failed again: a second notice; handled again (a replay), no third.
    expect((await provider('checkout')).status).toBe(200);
    expect((await provider('failed')).status).toBe(200);
    expect(await failed(2)).toHaveLength(2);
    const { store } = t.system.deps;
    const inbox = async () => (await store.readStream(`notifications-${client.id}`)).events.length;
    const before = await inbox();
    for (const move of (await store.readStream(`payment-${paymentId}`)).events)
      await notificationProcess(store).react!(move);
    expect(await inbox()).toBe(before);
    // Past its deadline a failure says only that it failed (the expiry cancels the booking at the next sweep).
    now = new Date('2026-12-02T09:30:00Z');
    expect((await provider('checkout')).status).toBe(200);
    expect((await provider('failed')).status).toBe(200);
    expect((await failed(3))[0].message).toBe('Your payment for Tennis basics failed');
    const coachTypes = ((await list(coach.token)).body as { type: string }[]).map((n) => n.type);
    expect(coachTypes).not.toContain('payment_failed');
  });

  it('a payment canceled while its sessions are open, or after the client canceled them, adds no payment notice', async () => {
    const { store } = t.system.deps;
    const types = async (userId: string) =>
      (await store.readStream(`notifications-${userId}`)).events
        .filter((e) => e.type === 'NotificationCreated')
        .map((e) => (e.data as { type: string }).type);
    /** The payment's move to canceled, handled by the notification process (again, or first). */
    const handleCancel = async (paymentId: string) => {
      const move = (
        await eventually(
          async () => (await store.readStream(`payment-${paymentId}`)).events,
          (l) => l.some((e) => (e.data as { to?: string }).to === 'canceled'),
        )
      ).find((e) => (e.data as { to?: string }).to === 'canceled')!;
      await notificationProcess(store).react!(move);
      return move.data as { reason: string };
    };
    const sessionCanceled = (who: { token: string }) =>
      eventually(
        async () => (await list(who.token)).body as { type: string }[],
        (l) => l.some((n) => n.type === 'session_canceled'),
      );
    const paymentOf = async (s: { client: { token: string }; session: { id: string } }) =>
      (await m.sessionAs(s.client.token, s.session.id)).paymentId as string;

    // Canceled by the payment service (16): the session notice (reason payment_canceled) tells the client.
    const byService = await booked();
    const serviceCanceled = await paymentOf(byService);
    const canceled = await t.request('POST', `/api/v1/payment/private/payment/${serviceCanceled}/cancel`, {
      token: m.service(),
    });
    expect(canceled.status).toBe(200);
    await sessionCanceled(byService.client);
    expect(await handleCancel(serviceCanceled)).toMatchObject({ reason: 'canceled_by_service' });
    expect(await types(byService.client.id)).toEqual(['session_booked', 'session_canceled']);

    // Expired unpaid at its deadline (an hour before the start): the same, by the session notice alone.
    const expired = await booked();
    const expiredPayment = await paymentOf(expired);
    now = new Date('2026-12-02T08:30:00Z');
    await t.system.sweepExpiredPayments();
    await sessionCanceled(expired.client);
    expect(await handleCancel(expiredPayment)).toMatchObject({ reason: 'expired' });
    expect(await types(expired.client.id)).toEqual(['session_booked', 'session_canceled']);
    now = START;

    // The client canceled its unpaid booking's only session: the payment follows (booking_canceled), and
    // the client, who did it, is told nothing more.
    const byClient = await booked();
    const clientCanceled = await paymentOf(byClient);
    const cancel = await t.request('POST', `/api/v1/session/${byClient.session.id}/cancel`, {
      token: byClient.client.token,
      body: { reason: 'away' },
    });
    expect(cancel.status).toBe(200);
    await sessionCanceled(byClient.coach);
    expect(await handleCancel(clientCanceled)).toMatchObject({ reason: 'booking_canceled' });
    expect(await types(byClient.client.id)).toEqual(['session_booked']);
  });

  it('the outbox (no SMTP_URL) holds one .eml per recipient with a stable Message-ID', async () => {
    const { client, coach } = await booked();
    const outbox = path.join(t.config.dataDir, 'outbox');
    const files = await eventually(
      async () =>
        fs
          .readdirSync(outbox)
          .map((f) => fs.readFileSync(path.join(outbox, f), 'utf8'))
          .filter((c) => c.includes(client.id.slice(0, 8)) || c.includes(coach.id.slice(0, 8))),
      (l) => l.length >= 2,
    );
    expect(files).toHaveLength(2);
    const toClient = files.find((c) => c.includes(`To: ${client.id.slice(0, 8)}@example.com`))!;
    expect(toClient).toMatch(/^Subject: Booking received: Tennis basics\r$/m);
    expect(toClient).toMatch(/^Message-ID: <[0-9a-f]{40}@coaching\.local>\r$/m);
  });

  it('the outbox is made again when it went missing while the service ran', async () => {
    const outbox = path.join(t.config.dataDir, 'outbox');
    await booked();
    await eventually(
      async () => fs.existsSync(outbox) && fs.readdirSync(outbox).length,
      (n) => !!n,
    );
    fs.rmSync(outbox, { recursive: true, force: true });
    const { client } = await booked();
    const files = await eventually(
      async () =>
        fs.existsSync(outbox)
          ? fs
              .readdirSync(outbox)
              .filter((f) => fs.readFileSync(path.join(outbox, f), 'utf8').includes(client.id.slice(0, 8)))
          : [],
      (l) => l.length >= 1,
    );
    expect(files.length).toBeGreaterThanOrEqual(1);
  });

  it("carries the interface document's integer code, one per type, in every answer that shows a notification", async () => {
    const { client, coach, session } = await booked();
    const act = (token: string, action: string, body?: unknown) =>
      t.request('POST', `/api/v1/session/${session.id}/${action}`, { token, body });
    expect((await act(coach.token, 'approve')).status).toBe(200);
    expect((await act(client.token, 'cancel', { reason: 'ill' })).status).toBe(200);
    const codes = async (token: string) =>
      (
        await eventually(
          async () => (await list(token)).body as any[],
          (l) => l.length >= 2,
        )
      ).map((n) => [n.type, n.code]);
    expect(await codes(client.token)).toEqual([
      ['session_approved', 2],
      ['session_booked', 1],
    ]);
    expect(await codes(coach.token)).toEqual([
      ['session_canceled', 4],
      ['session_booked', 1],
    ]);
    const [newest] = (await list(coach.token)).body;
    const read = await t.request('PUT', '/api/v1/notifications', {
      token: coach.token,
      body: { notifications: [newest.id] },
    });
    expect(read.body).toEqual([{ ...newest, unread: false }]);
    const adminView = await t.request('GET', `/manage/admin/notifications/${newest.id}`, {
      token: m.admin(),
    });
    expect(adminView.body).toMatchObject({ id: newest.id, code: 4 });
  });

  it("marks read (25), filters unread, refuses ids that are not the caller's, records delivery (26)", async () => {
    const { client, coach, clientList, coachList } = await booked();
    const mineId = clientList[0].id as string;
    const others = await t.request('PUT', '/api/v1/notifications', {
      token: client.token,
      body: { notifications: [mineId, coachList[0].id] },
    });
    expect(others.status).toBe(404);
    expect(others.body.error).toBe('notification_not_found');
    expect((await list(client.token, '?unread=true')).body).toHaveLength(1); // nothing marked
    const read = await t.request('PUT', '/api/v1/notifications', {
      token: client.token,
      body: { notifications: [mineId] },
    });
    expect(read.status).toBe(200);
    expect(read.body).toEqual([expect.objectContaining({ id: mineId, unread: false })]);
    expect((await list(client.token, '?unread=true')).body).toEqual([]);
    expect((await list(client.token, '?unread=false')).body).toHaveLength(1);
    expect((await list(coach.token, '?unread=true')).body).toHaveLength(1);
    expect((await t.request('PUT', '/api/v1/notifications', { token: client.token, body: {} })).status).toBe(
      422,
    );
    expect((await list(client.token, '?unread=maybe')).status).toBe(422);
    expect((await t.request('GET', '/api/v1/notifications')).status).toBe(401);

    const delivered = await t.request('POST', '/api/v1/notification/event', {
      token: client.token,
      body: { notificationIds: [mineId] },
    });
    expect(delivered.status).toBe(200);
    expect(delivered.body).toEqual([{ id: mineId, status: 'delivered', deliveredAt: expect.any(String) }]);
    const adminView = await t.request('GET', `/manage/admin/notifications/${mineId}`, { token: m.admin() });
    expect(adminView.body).toMatchObject({ id: mineId, userId: client.id, unread: false });
    expect(adminView.body.deliveredAt).toBe(delivered.body[0].deliveredAt);
  });

  it('24 pages on after a given notification (before), so new notifications do not repeat one on the next page', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const book = async (slot: string) =>
      expect(
        (
          await t.request('POST', `/api/v1/service/${serviceId}`, {
            token: client.token,
            body: { slots: [slot] },
          })
        ).status,
      ).toBe(200);
    const mine = (n: number) =>
      eventually(
        async () => (await list(client.token)).body as { id: string }[],
        (l) => l.length >= n,
      );
    for (const slot of ['2026-12-02T10:00:00', '2026-12-03T10:00:00', '2026-12-04T10:00:00'])
      await book(slot);
    const [n3, n2, n1] = await mine(3);
    const first = (await list(client.token, '?limit=2')).body as { id: string }[];
    expect(first.map((n) => n.id)).toEqual([n3!.id, n2!.id]);

    await book('2026-12-07T10:00:00'); // a new notification arrives while the app shows the first page
    const [n4] = await mine(4);
    expect(n4!.id).not.toBe(n3!.id);
    // By offset the next page starts with what the first page showed last; after its last one, it does not.
    expect(((await list(client.token, '?limit=2&offset=2')).body as { id: string }[])[0]!.id).toBe(n2!.id);
    const next = await list(client.token, `?limit=2&before=${n2!.id.toUpperCase()}`);
    expect(next.status).toBe(200);
    expect((next.body as { id: string }[]).map((n) => n.id)).toEqual([n1!.id]);
    expect((await list(client.token, `?before=${n3!.id}&unread=true&limit=1`)).body).toEqual([
      expect.objectContaining({ id: n2!.id }),
    ]);

    // Another user's notification is as unknown as one that does not exist; a malformed id is 422.
    const stranger = await m.client();
    for (const before of [n2!.id, randomUUID()]) {
      const res = await list(stranger.token, `?before=${before}`);
      expect({ status: res.status, error: res.body.error }).toEqual({
        status: 404,
        error: 'notification_not_found',
      });
    }
    const bad = await list(client.token, '?before=nope');
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['query', 'before']);
  });

  it('registers delivery channels (27) and checks the mail provider (28)', async () => {
    const user = await m.client();
    const body = { type: 'webhook', address: 'https://example.com/hook' };
    const first = await t.request('POST', '/api/v1/notification/channel', { token: user.token, body });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ id: expect.any(String), ...body });
    const again = await t.request('POST', '/api/v1/notification/channel', { token: user.token, body });
    expect(again.body.id).toBe(first.body.id);
    const bad = await t.request('POST', '/api/v1/notification/channel', {
      token: user.token,
      body: { type: 'webhook', address: 'http://insecure' },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'address']);
    // The answered (normal) form registers the same channel again, so it is never longer than an address may
    // be: 220 characters sent are 1,220 percent-encoded, and refused rather than kept unsendable.
    const encoded = await t.request('POST', '/api/v1/notification/channel', {
      token: user.token,
      body: { type: 'webhook', address: `https://example.com/${'é'.repeat(200)}` },
    });
    expect({ status: encoded.status, loc: encoded.body.detail?.[0]?.loc }).toEqual({
      status: 422,
      loc: ['body', 'address'],
    });
    const fits = await t.request('POST', '/api/v1/notification/channel', {
      token: user.token,
      body: { type: 'webhook', address: `https://example.com/${'é'.repeat(80)}` },
    });
    expect(fits.status).toBe(200);
    const resent = await t.request('POST', '/api/v1/notification/channel', {
      token: user.token,
      body: { type: 'webhook', address: fits.body.address },
    });
    expect(resent.body.id).toBe(fits.body.id);
    // An e-mail channel is one mailbox, by the rule profiles follow: not a list or a name with an address.
    // And one a mail server takes, as shown: no dot-atom it refuses, no host name that is none, nothing invisible.
    for (const address of [
      'a@x.io,b@y.io',
      'Eve <eve@x.io>',
      'a;b@x.io',
      '"a b"@x.io',
      'a..b@x.io',
      '.a@x.io',
      'a.@x.io',
      'a@x..io',
      'a@-x.io',
      'a@x_y.io',
      'a@1.2.3.4',
      'a\u200b@x.io',
      'a\u202e@x.io',
    ]) {
      const notOne = await t.request('POST', '/api/v1/notification/channel', {
        token: user.token,
        body: { type: 'email', address },
      });
      expect({ address, status: notOne.status }).toEqual({ address, status: 422 });
    }
    const mailbox = await t.request('POST', '/api/v1/notification/channel', {
      token: user.token,
      body: { type: 'email', address: ' Zoe.Ng+coach@Example.COM ' },
    });
    expect(mailbox.body).toMatchObject({ type: 'email', address: 'zoe.ng+coach@example.com' });
    const international = await t.request('POST', '/api/v1/notification/channel', {
      token: user.token,
      body: { type: 'email', address: 'zoë@bücher.de' },
    });
    expect([international.status, international.body.address]).toEqual([200, 'zoë@bücher.de']);

    const init = '/api/v1/notification/channel/mailprovider-init';
    expect((await t.request('POST', init, { token: m.admin() })).body).toEqual({
      provider: 'outbox',
      status: 'ok',
    });
    expect((await t.request('POST', init, { token: m.service() })).status).toBe(200);
    expect((await t.request('POST', init, { token: user.token })).status).toBe(403);
    expect((await t.request('POST', init)).status).toBe(401);
  });

  it('admin views: list with filters (29), one (30), counts (31)', async () => {
    const { client } = await booked();
    const admin = m.admin();
    const mine = await t.request('GET', `/manage/admin/notifications?user=${client.id}&type=session_booked`, {
      token: admin,
    });
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual([expect.objectContaining({ userId: client.id, type: 'session_booked' })]);
    const all = await t.request('GET', '/manage/admin/notifications?limit=2', { token: admin });
    expect(all.body).toHaveLength(2);
    const missing = await t.request('GET', `/manage/admin/notifications/${randomUUID()}`, { token: admin });
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error: 'notification_not_found', code: 404 });
    const malformed = await t.request('GET', '/manage/admin/notifications/not-a-uuid', { token: admin });
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail).toEqual([
      { loc: ['path', 'notification_id'], msg: 'Input should be a valid UUID', type: 'invalid_uuid' },
    ]);
    const counts = await t.request('GET', '/admin/notifications', { token: admin });
    expect(counts.body.total).toBeGreaterThanOrEqual(2);
    expect(counts.body.byType).toContainEqual(
      expect.objectContaining({
        type: 'session_booked',
        total: expect.any(Number),
        unread: expect.any(Number),
      }),
    );
    expect((await t.request('GET', '/admin/notifications', { token: client.token })).status).toBe(403);
    expect((await t.request('GET', '/manage/admin/notifications', { token: client.token })).status).toBe(403);
  });

  it('30 shows the e-mails its cause sent its user, as the admin e-mail list shows them (did the client get told?)', async () => {
    const { client, coach, session } = await booked();
    const admin = m.admin();
    // The booking's e-mail to the client, as GET /api/v1/admin/emails?user= lists it once it went out.
    const [email] = await eventually(
      async () => (await t.request('GET', `/api/v1/admin/emails?user=${client.id}`, { token: admin })).body,
      (l) => Array.isArray(l) && l.some((d: { status: string }) => d.status === 'sent'),
    );
    expect(email).toMatchObject({ recipient: client.id, template: 'booking', status: 'sent' });
    const [notice] = (await list(client.token)).body;
    const one = await t.request('GET', `/manage/admin/notifications/${notice.id}`, { token: admin });
    expect(one.status).toBe(200);
    // Only the client's: the coach's e-mail of the same booking is the coach's notification's.
    expect(one.body.emailDeliveries).toEqual([email]);
    const [coachNotice] = (await list(coach.token)).body;
    const coachEmails = (
      await t.request('GET', `/manage/admin/notifications/${coachNotice.id}`, { token: admin })
    ).body.emailDeliveries;
    expect(coachEmails).toHaveLength(1);
    expect(coachEmails[0]).toMatchObject({ recipient: coach.id, template: 'booking' });
    expect(coachEmails[0].id).not.toBe(email.id);
    // A later cause of the same session: its notification shows its own e-mail, not the booking's.
    expect(
      (await t.request('POST', `/api/v1/session/${session.id}/approve`, { token: coach.token })).status,
    ).toBe(200);
    const approved = await eventually(
      async () => ((await list(client.token)).body as { type: string; id: string }[])[0]!,
      (n) => n.type === 'session_approved',
    );
    const approvedView = await eventually(
      async () =>
        (await t.request('GET', `/manage/admin/notifications/${approved.id}`, { token: admin })).body,
      (b) => b.emailDeliveries?.some((d: { status: string }) => d.status === 'sent'),
    );
    expect(approvedView.emailDeliveries).toEqual([
      expect.objectContaining({ recipient: client.id, template: 'approve', status: 'sent' }),
    ]);
  });

  it('29 filters by read state and by a creation window, and pages through them', async () => {
    const { client, coach, session } = await booked();
    const admin = m.admin();
    const get = (q: string) =>
      t.request('GET', `/manage/admin/notifications?user=${client.id}${q}`, { token: admin });
    const [notice] = (await list(client.token)).body;
    expect((await get('&unread=true')).body.map((n: { id: string }) => n.id)).toEqual([notice.id]);
    expect((await get('&unread=false')).body).toEqual([]);
    const at = Date.parse(notice.createdAt);
    const iso = (ms: number) => new Date(ms).toISOString();
    expect((await get(`&from=${iso(at)}&to=${iso(at + 1)}`)).body).toHaveLength(1);
    expect((await get(`&from=${iso(at + 1)}`)).body).toEqual([]);
    expect((await get(`&to=${iso(at)}`)).body).toEqual([]);
    const backwards = await get(`&from=${iso(at)}&to=${iso(at - 1)}`);
    expect([backwards.status, backwards.body.detail[0].loc]).toEqual([422, ['query', 'to']]);
    const bad = await get('&unread=maybe');
    expect([bad.status, bad.body.detail[0].loc]).toEqual([422, ['query', 'unread']]);
    // Pages follow one order: two pages of one are the first two of two.
    const act = await t.request('POST', `/api/v1/session/${session.id}/decline`, { token: coach.token });
    expect(act.status).toBe(200);
    await eventually(
      async () => (await list(client.token)).body as unknown[],
      (l) => l.length >= 2,
    );
    const [first, second, both] = [
      await get('&limit=1'),
      await get('&limit=1&offset=1'),
      await get('&limit=2'),
    ];
    expect(both.body.map((n: { type: string }) => n.type)).toEqual(['session_declined', 'session_booked']);
    expect([...first.body, ...second.body]).toEqual(both.body);
  });

  it('31 answers the page or the counts at one URL by Accept, and says so (Vary: Accept) to every cache', async () => {
    // The page's own script reads the counts at the page's URL: without Vary a browser's cache keeps the
    // JSON under that URL and shows it for the page (the Back button), or the page where JSON is asked for.
    const get = (accept: string, token?: string) =>
      fetch(`${t.baseUrl}/admin/notifications`, {
        headers: { accept, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      });
    for (const res of [
      await get('text/html,application/xhtml+xml,*/*;q=0.8'),
      await get('application/json', m.admin()),
      await get('application/json'), // 401, refused for want of a token: a page request would not be
    ]) {
      await res.arrayBuffer();
      expect(res.headers.get('vary') ?? '').toMatch(/\bAccept\b/i);
    }
  });

  it("31's page and its files are never framed, sniffed or a form target, and its token field is never sent", async () => {
    const page = await fetch(`${t.baseUrl}/admin/notifications`, { headers: { accept: 'text/html' } });
    const html = await page.text();
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/frame-ancestors 'none'/);
    // Pressed before the script ran (slow network, script refused), the sign-in form would be sent as a GET:
    // the token in the address bar, history and the Referer of what the page loads next.
    expect(csp).toMatch(/form-action 'none'/);
    expect(csp).toMatch(/base-uri 'none'/);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    const field = /<input[^>]*id="token"[^>]*>/.exec(html.replace(/\s+/g, ' '))?.[0] ?? '';
    expect(field).toMatch(/type="password"/);
    expect(field).not.toMatch(/\bname=/); // a field without a name is never part of a form's submission
    for (const asset of ['admin.js', 'admin.css']) {
      const res = await fetch(`${t.baseUrl}/admin/assets/${asset}`);
      await res.arrayBuffer();
      expect({ asset, nosniff: res.headers.get('x-content-type-options') }).toEqual({
        asset,
        nosniff: 'nosniff',
      });
    }
  });
});
