import { randomUUID } from 'node:crypto';
import { bookingStream } from '../../commands/booking/events';
import { notificationStream } from '../../commands/notifications/events';
import { uuidFrom } from '../../commands/notifications/sessionNotices';
import { loadConfig } from '../../src/config';
import { createSystem } from '../../src/system';
import { apiSuite } from '../support/apiSuite';
import { eventually, sessionsBookedData, type marketplace } from '../support/marketplace';
import { testDatabase } from '../support/services';
import type { TestSystem } from '../support/system';
import { startWebhookReceiver } from '../support/webhookReceiver';

// Booked on 1 December 2026 at 08:00 UTC for 2 December 10:00 in Berlin (09:00 UTC): 25 hours ahead, so the
// reminder (24 hours before, the default SESSION_REMINDER_LEAD_MS) falls due at 09:00 UTC on 1 December.
const START = '2026-12-01T08:00:00Z';
const SLOT = '2026-12-02T10:00:00';
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
// The test systems leave reminders off (test/support/system.ts); on here, at the production default.
const clock = apiSuite(
  START,
  (system, market) => {
    t = system;
    m = market;
  },
  {
    SESSION_REMINDER_LEAD_MS: String(loadConfig({ JWT_SECRET: 'x' }).sessionReminderLeadMs),
    WEBHOOK_ALLOW_LOOPBACK: 'true',
  },
);
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
afterAll(() => receiver?.close());

const notices = async (token: string) =>
  (await t.request('GET', '/api/v1/notifications', { token })).body as {
    type: string;
    code: number;
    contentType: string;
    contentId: string;
    message: string;
  }[];
const reminders = async (token: string) =>
  (await notices(token)).filter((n) => n.type === 'session_reminder');

/** A session booked at SLOT, once both parties' booking notices are in (the process has seen the booking). */
async function booked() {
  const b = await m.sessionBooked(SLOT);
  for (const u of [b.client, b.coach])
    await eventually(
      () => notices(u.token),
      (l) => l.some((n) => n.type === 'session_booked'),
    );
  return b;
}

/** Sweeps, then waits for the projections of what the sweep appended (the inboxes, the due table). */
async function sweep() {
  const reminded = await t.system.remindSessions();
  expect(await t.system.runner.waitFor(await t.system.deps.store.headPosition(), 5000)).toBe(true);
  return reminded;
}

describe('session reminders', () => {
  it('reminds the client and the coach once, the lead time before the start', async () => {
    const { client, coach, session } = await booked();
    // 25 hours ahead: not due yet.
    expect(await sweep()).toBe(0);
    expect(await reminders(client.token)).toEqual([]);

    clock.set('2026-12-01T09:30:00Z');
    // Counted by what the sweep appended; the background sweeper may have been first, so the inboxes tell.
    await sweep();
    for (const u of [client, coach]) {
      expect(await reminders(u.token)).toEqual([
        expect.objectContaining({
          type: 'session_reminder',
          code: 13,
          contentType: 'session',
          contentId: session.id,
          message: expect.stringContaining('Tennis basics on 2026-12-02 10:00 (Europe/Berlin)'),
        }),
      ]);
    }
    // Swept again (and later, still before the start): nothing more.
    expect(await sweep()).toBe(0);
    clock.set('2026-12-02T08:30:00Z');
    expect(await sweep()).toBe(0);
    for (const u of [client, coach]) expect(await reminders(u.token)).toHaveLength(1);
  });

  it("reaches the parties' webhook channels, as every other notice does", async () => {
    const { client, session } = await booked();
    // Registered after the booking: its notices went out before; the reminder is the channel's first.
    const path = `/hooks/${randomUUID()}`;
    const channel = await t.request('POST', '/api/v1/notification/channel', {
      token: client.token,
      body: { type: 'webhook', address: receiver.url(path) },
    });
    expect(channel.status).toBe(200);
    clock.set('2026-12-01T09:30:00Z');
    await sweep();
    const sent = await eventually(
      async () =>
        receiver
          .at(path)
          .map((h) => (JSON.parse(h.body) as { data: { notification: { type: string } } }).data.notification),
      (l) => l.length >= 1,
      8000,
    );
    expect(sent).toEqual([
      expect.objectContaining({
        type: 'session_reminder',
        code: 13,
        contentType: 'session',
        contentId: session.id,
        message: expect.stringContaining('2026-12-02 10:00 (Europe/Berlin)'),
      }),
    ]);
  });

  it('does not remind of a canceled session', async () => {
    const { client, coach, session } = await booked();
    const res = await t.request('POST', `/api/v1/session/${session.id}/cancel`, {
      token: client.token,
      body: { reason: 'cannot make it' },
    });
    expect(res.status).toBe(200);
    await eventually(
      () => notices(coach.token),
      (l) => l.some((n) => n.type === 'session_canceled'),
    );
    clock.set('2026-12-01T09:30:00Z');
    expect(await sweep()).toBe(0);
    expect(await reminders(client.token)).toEqual([]);
    expect(await reminders(coach.token)).toEqual([]);
    const due = await t.system.deps.db.query('SELECT 1 FROM session_reminder_due WHERE session_id = $1', [
      session.id,
    ]);
    expect(due.rows).toEqual([]);
  });

  it('reminds of a rescheduled session at its new time, not at the old one', async () => {
    const { client, coach, session } = await booked();
    const moved = await t.request('POST', `/api/v1/session/${session.id}/reschedule`, {
      token: coach.token,
      body: { slot: '2026-12-03T10:00:00' },
    });
    expect(moved.status).toBe(200);
    await eventually(
      () => notices(client.token),
      (l) => l.some((n) => n.type === 'session_rescheduled'),
    );
    // The old time's reminder would be due now: none is sent.
    clock.set('2026-12-01T09:30:00Z');
    expect(await sweep()).toBe(0);
    expect(await reminders(client.token)).toEqual([]);

    clock.set('2026-12-02T09:30:00Z');
    await sweep();
    for (const u of [client, coach]) {
      const mine = await reminders(u.token);
      expect(mine).toHaveLength(1);
      expect(mine[0]!.message).toContain('2026-12-03 10:00 (Europe/Berlin)');
    }
  });

  it('sends no reminder for a session booked less than the lead time before its start', async () => {
    clock.set('2026-12-01T12:00:00Z'); // 21 hours before the start: the booking notice is the reminder
    const { client, coach } = await booked();
    clock.set('2026-12-02T08:00:00Z');
    expect(await sweep()).toBe(0);
    expect(await reminders(client.token)).toEqual([]);
    expect(await reminders(coach.token)).toEqual([]);
  });
});

// The due sessions live in a read model, not in timers: a restart (or a rebuild that puts a reminded
// session's row back, or a sweeper that died between the reminder and the row's removal) reminds no one twice.
it('reminds of a session that fell due while stopped, once, also after a restart and a replayed row', async () => {
  let now = new Date('2026-12-01T08:00:00.000Z');
  const database = await testDatabase();
  const config = loadConfig({ JWT_SECRET: 'test-secret' });
  const ids = {
    groupId: randomUUID(),
    coachId: randomUUID(),
    clientId: randomUUID(),
    serviceId: randomUUID(),
  };
  const data = {
    ...sessionsBookedData(ids),
    bookedAt: now.toISOString(),
    sessions: [
      {
        sessionId: randomUUID(),
        startsAt: '2026-12-02T09:00:00.000Z',
        endsAt: '2026-12-02T10:00:00.000Z',
        slot: '2026-12-02T10:00:00',
      },
    ],
  };
  const sessionId = data.sessions[0]!.sessionId;
  const first = await createSystem(config, { db: database.db, clock: () => now });
  const res = await first.deps.store.append(bookingStream(ids.groupId), [{ type: 'SessionsBooked', data }]);
  expect(await first.runner.waitFor(res.position, 5000)).toBe(true);
  await first.close();

  now = new Date('2026-12-01T10:00:00.000Z');
  const restarted = await createSystem(config, { db: database.db, clock: () => now });
  try {
    const reminderOf = async (userId: string) =>
      (await restarted.deps.store.readStream(notificationStream(userId))).events.filter(
        (e) => (e.data as { type: string }).type === 'session_reminder',
      );
    // No explicit sweep: the sweeper runs once as the system starts.
    const client = await eventually(
      () => reminderOf(ids.clientId),
      (l) => l.length > 0,
    );
    expect(client).toHaveLength(1);
    const cause = uuidFrom('session-reminder', sessionId, '2026-12-02T09:00:00.000Z');
    expect(client[0]!.data).toMatchObject({
      notificationId: uuidFrom('notification', cause, ids.clientId),
      causationEventId: cause,
      contentId: sessionId,
    });
    await eventually(
      () => reminderOf(ids.coachId),
      (l) => l.length > 0,
    );
    // The row back (a rebuild, or a crash before its removal): swept again, it reminds no one twice.
    await restarted.deps.db.query(
      `INSERT INTO session_reminder_due (session_id, group_id, starts_at) VALUES ($1, $2, $3)
       ON CONFLICT DO NOTHING`,
      [sessionId, ids.groupId, '2026-12-02T09:00:00.000Z'],
    );
    expect(await restarted.remindSessions()).toBe(0);
    expect(await reminderOf(ids.clientId)).toHaveLength(1);
    expect(await reminderOf(ids.coachId)).toHaveLength(1);
  } finally {
    await restarted.close();
    await database.drop();
  }
});
