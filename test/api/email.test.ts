import { randomUUID } from 'node:crypto';
import { deliveryStream } from '../../commands/delivery/events';
import { allProjections } from '../../projections';
import { emailProcess } from '../../projections/emailProcess';
import { createProjectionRunner } from '../../projections/runner';
import { migrate } from '../../src/db/migrate';
import type { EventStore } from '../../src/eventstore/types';
import { deliveries } from '../../src/mail/delivery';
import { createSmtpMailer } from '../../src/mail/mailer';
import { createMailRetry } from '../../src/mailRetry';
import { testDatabase } from '../support/services';
import { eventually, marketplace } from '../support/marketplace';
import { startSmtpServer, type ReceivedMail } from '../support/smtp';
import { startTestSystem, type TestSystem } from '../support/system';

const now = new Date('2026-12-01T08:00:00Z');
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;

beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestSystem({
    clock: () => now,
    env: { SMTP_URL: smtp.url, MAIL_FROM: 'Coaching <mail@coaching.test>' },
  });
  m = marketplace(t);
});
afterAll(async () => {
  await t.close();
  await smtp.close();
});

const SLOT = '2026-12-02T10:00:00';
const emailOf = (id: string) => `${id.slice(0, 8)}@example.com`;
const to = (address: string) => smtp.received.filter((r) => r.to.includes(address));
const mailsTo = (address: string, n: number) =>
  eventually(
    async () => to(address),
    (list) => list.length >= n,
    5000,
  );
const silence = () => new Promise((r) => setTimeout(r, 300));

async function booked() {
  const coach = await m.coach();
  const serviceId = await m.offering(coach, { name: 'Tennis basics' });
  const client = await m.client();
  const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
    token: client.token,
    body: { slots: [SLOT] },
  });
  expect(res.status).toBe(200);
  return { coach, client, session: res.body[0] as { id: string; groupId: string } };
}

/** A second e-mail process manager on the same database, reading the whole log from the start. */
async function replayFromStart() {
  const { store, db, mailer, log, clock } = t.system.deps;
  const replay = {
    ...emailProcess({ store, mailer, log, clock, mailLeaseMs: 120_000 }),
    name: `email-replay-${randomUUID()}`,
  };
  const runner = createProjectionRunner(store, db, [replay], log);
  await runner.start();
  expect(await runner.waitFor(await store.headPosition(), 10_000)).toBe(true);
  await runner.stop();
}

describe('e-mail over real SMTP', () => {
  it('mails a booking to client and coach exactly once, even after a replay from the start', async () => {
    const { coach, client } = await booked();
    const [toClient] = await mailsTo(emailOf(client.id), 1);
    const [toCoach] = await mailsTo(emailOf(coach.id), 1);
    expect(toClient).toMatchObject({
      from: 'mail@coaching.test',
      subject: 'Booking received: Tennis basics',
    });
    expect(toClient!.text).toContain('2026-12-02 10:00 (Europe/Berlin)');
    expect(toCoach!.subject).toBe('New booking: Tennis basics');
    // Stable ids derived from the causing event: same event, same Message-ID domain and key shape.
    expect(toClient!.messageId).toMatch(/^<[0-9a-f]{40}@coaching\.test>$/);
    expect(toClient!.idempotencyKey).toMatch(new RegExp(`/${client.id}$`));

    await replayFromStart();
    // Re-handling the very same recorded event directly sends nothing either.
    const { store, mailer, log, clock } = t.system.deps;
    const all = await store.readAll({ commit: 0n, prepare: 0n }, 100_000);
    const bookedEvent = all.find(
      (e) => e.type === 'SessionsBooked' && (e.data as { clientId: string }).clientId === client.id,
    )!;
    await emailProcess({ store, mailer, log, clock, mailLeaseMs: 120_000 }).react!(bookedEvent);
    await silence();
    expect(to(emailOf(client.id))).toHaveLength(1);
    expect(to(emailOf(coach.id))).toHaveLength(1);
  });

  it('keeps its SMTP connections open for the next messages (a pool) instead of one connection each', async () => {
    const before = { connections: smtp.connections(), messages: smtp.received.length };
    const bookings = await Promise.all([booked(), booked(), booked()]);
    for (const { client, coach } of bookings) {
      await mailsTo(emailOf(client.id), 1);
      await mailsTo(emailOf(coach.id), 1);
    }
    const messages = smtp.received.length - before.messages;
    expect(messages).toBeGreaterThanOrEqual(6);
    expect(smtp.connections() - before.connections).toBeLessThanOrEqual(3);
  });

  it('mails approval to the client, a client cancellation to the coach only', async () => {
    const { coach, client, session } = await booked();
    await mailsTo(emailOf(coach.id), 1);
    expect(
      (await t.request('POST', `/api/v1/session/${session.id}/approve`, { token: coach.token })).status,
    ).toBe(200);
    const clientMails = await mailsTo(emailOf(client.id), 2);
    expect(clientMails.map((r) => r.subject)).toEqual([
      'Booking received: Tennis basics',
      'Session approved: Tennis basics',
    ]);
    const cancel = await t.request('POST', `/api/v1/session/${session.id}/cancel`, {
      token: client.token,
      body: { reason: 'ill' },
    });
    expect(cancel.status).toBe(200);
    const coachMails = await mailsTo(emailOf(coach.id), 2);
    expect(coachMails[1]!.subject).toBe('Session canceled: Tennis basics');
    expect(coachMails[1]!.text).toContain('Reason: ill');
    await silence();
    expect(to(emailOf(client.id))).toHaveLength(2);
    expect(to(emailOf(coach.id))).toHaveLength(2);
  });

  it('a temporary SMTP refusal defers the e-mail without holding back later mail; the retry sends it once; a final refusal is recorded', async () => {
    const { coach, client, session } = await booked();
    await mailsTo(emailOf(client.id), 1);
    await mailsTo(emailOf(coach.id), 1);
    smtp.rejectNext(1, 451);
    await t.request('POST', `/api/v1/session/${session.id}/approve`, { token: coach.token });
    const deferred = await eventually(
      async () =>
        (
          await t.system.deps.db.query<{ status: string; attempts: number }>(
            `SELECT status, attempts FROM email_deliveries WHERE recipient = $1 AND template = 'approve'`,
            [client.id],
          )
        ).rows[0],
      (r) => r?.status === 'deferred',
      5000,
    );
    expect(deferred).toEqual({ status: 'deferred', attempts: 1 });
    // Later mail is not held back by the deferred one.
    const next = await booked();
    await mailsTo(emailOf(next.coach.id), 1);
    // Not due yet: nothing is sent; a minute later, the retry sends it.
    expect(await t.system.retryDeferredEmails()).toBe(0);
    const aMinuteOn = new Date(t.system.deps.clock().getTime() + 2 * 60_000);
    expect(await t.system.retryDeferredEmails(aMinuteOn)).toBe(1);
    expect(await t.system.retryDeferredEmails(aMinuteOn)).toBe(0);
    const mails = await mailsTo(emailOf(client.id), 2);
    expect(mails[1]!.subject).toBe('Session approved: Tennis basics');
    expect(smtp.rejectionsLeft()).toBe(0); // the first attempt was refused
    await silence();
    expect(to(emailOf(client.id))).toHaveLength(2);
    // An auditor finds the retried sending among the approval's effects, in the approval's correlation.
    const approval = (await t.system.deps.store.readStream(`booking-${session.groupId}`)).events.find(
      (e) => e.type === 'SessionApproved',
    )!;
    const chain = await t.request('GET', `/api/v1/audit/events/${approval.id}/chain`, {
      token: t.token(randomUUID(), ['auditor']),
    });
    expect(chain.status).toBe(200);
    const toClient = deliveryStream(approval.id, client.id);
    const ledger = (await t.system.deps.store.readStream(toClient)).events;
    expect(ledger.map((e) => e.type)).toContain('DeliverySent');
    // The retry is the system's doing, and says so (before, its events had no actor).
    expect(ledger.at(-1)!.metadata.actor).toEqual({
      userId: '00000000-0000-0000-0000-000000000000',
      role: 'system',
    });
    expect(
      chain.body.effects
        .filter((e: { stream: string }) => e.stream === toClient)
        .map((e: { type: string }) => e.type),
    ).toEqual(ledger.map((e) => e.type));

    const other = await booked();
    await mailsTo(emailOf(other.client.id), 1);
    await mailsTo(emailOf(other.coach.id), 1);
    smtp.rejectNext(1, 550);
    await t.request('POST', `/api/v1/session/${other.session.id}/decline`, {
      token: other.coach.token,
      body: { reason: 'busy' },
    });
    const row = await eventually(
      async () =>
        (
          await t.system.deps.db.query<{ status: string; template: string }>(
            `SELECT status, template FROM email_deliveries WHERE recipient = $1 AND template = 'decline'`,
            [other.client.id],
          )
        ).rows[0],
      (r) => r !== undefined && r.status !== 'sending',
      5000,
    );
    expect(row).toEqual({ status: 'failed', template: 'decline' });
    // The operator's "try again" is recorded as the operator's, in the request's correlation, like the
    // sending it starts; before, the requeue carried no metadata at all (no actor for an auditor).
    const declined = (await t.system.deps.store.readStream(`booking-${other.session.groupId}`)).events.find(
      (e) => e.type === 'SessionDeclined',
    )!;
    const operator = randomUUID();
    const retried = await t.request(
      'POST',
      `/api/v1/admin/emails/${deliveryStream(declined.id, other.client.id)}/retry`,
      { token: t.token(operator, ['admin']), headers: { 'X-Correlation-Id': 'operator-retry-1' } },
    );
    expect(retried.status).toBe(200);
    const after = (await t.system.deps.store.readStream(deliveryStream(declined.id, other.client.id))).events;
    const requeued = after.find((e) => e.type === 'DeliveryRequeued')!;
    expect(requeued.metadata).toMatchObject({
      actor: { userId: operator, role: 'admin' },
      correlationId: 'operator-retry-1',
    });
    expect(after.at(-1)).toMatchObject({
      type: 'DeliverySent',
      metadata: { correlationId: 'operator-retry-1' },
    });
    // The projection keeps going: a later e-mail still goes out.
    const third = await booked();
    await mailsTo(emailOf(third.coach.id), 1);
  });

  it("the operator's retry (POST /api/v1/admin/emails/{id}/retry) honours Idempotency-Key: a repeat after a lost answer replays it, and sends nothing again", async () => {
    const user = await m.client();
    smtp.rejectNext(1, 550);
    const res = await t.request('POST', `/api/v1/notification/private/email/${user.id}/verification`, {
      token: m.service(),
      body: { code: '314159' },
    });
    expect(res.status).toBe(200);
    const failed = await eventually(
      async () =>
        (
          await t.system.deps.db.query<{ stream: string; status: string }>(
            `SELECT stream, status FROM email_deliveries WHERE recipient = $1`,
            [user.id],
          )
        ).rows[0],
      (r) => r !== undefined && r.status === 'failed',
      5000,
    );
    const operator = t.token(randomUUID(), ['admin']);
    const retry = () =>
      t.request('POST', `/api/v1/admin/emails/${failed!.stream}/retry`, {
        token: operator,
        headers: { 'Idempotency-Key': 'retry-verification-1' },
      });
    const first = await retry();
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ id: failed!.stream, status: 'sent' });
    // The operator's page never saw the answer and sends it again under its key: the first answer, not a
    // 409 delivery_not_failed for an e-mail that went out.
    const again = await retry();
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    await silence();
    expect(to(emailOf(user.id))).toHaveLength(1);
    // Sent under a claim of its own, like every send (the requeue the request stored is not its claim).
    const ledger = (await t.system.deps.store.readStream(failed!.stream)).events.map((e) => e.type);
    expect(ledger.slice(-3)).toEqual(['DeliveryRequeued', 'DeliveryClaimed', 'DeliverySent']);
  });

  it('a relay refusing the service itself (5xx to MAIL FROM: wrong credentials, sender not allowed) defers every e-mail; fixed, they go out once', async () => {
    const user = await m.client();
    const settled = (status: string) =>
      eventually(
        async () =>
          (
            await t.system.deps.db.query<{ status: string; error: string | null }>(
              `SELECT status, error FROM email_deliveries WHERE recipient = $1 AND template = 'verification'`,
              [user.id],
            )
          ).rows[0],
        (r) =>
          r !== undefined && r.status !== 'sending' && (r.status !== 'deferred' || status === 'deferred'),
        5000,
      );
    smtp.refuseSender(530);
    try {
      const res = await t.request('POST', `/api/v1/notification/private/email/${user.id}/verification`, {
        token: m.service(),
        body: { code: '271828' },
      });
      expect(res.status).toBe(200);
      // Before, every e-mail sent while the relay refused the service failed for good: nothing retried them.
      expect(await settled('deferred')).toEqual({
        status: 'deferred',
        error: expect.stringContaining('530'),
      });
    } finally {
      smtp.refuseSender(null); // the operator fixed the credentials
    }
    expect(await t.system.retryDeferredEmails(new Date(now.getTime() + 2 * 60_000))).toBeGreaterThanOrEqual(
      1,
    );
    const [mail] = await mailsTo(emailOf(user.id), 1);
    expect(mail!.text).toContain('271828');
    expect(await settled('sent')).toEqual({ status: 'sent', error: null });
    await silence();
    expect(to(emailOf(user.id))).toHaveLength(1);
  });
});

describe('crash safety of the delivery ledger', () => {
  const LEASE_MS = 120_000;

  /**
   * The state a sender leaves when it is killed between claiming and sending: a `DeliveryClaimed` in the
   * ledger and nothing after it. Written before the causing event, so the live process manager finds it.
   */
  async function claimedByADeadSender(user: { id: string }) {
    const { store, mailer } = t.system.deps;
    const causeId = randomUUID();
    const key = `${causeId}/${user.id}`;
    await store.append(deliveryStream(causeId, user.id), [
      {
        type: 'DeliveryClaimed',
        data: {
          causeEventId: causeId,
          recipient: user.id,
          message: {
            key,
            to: emailOf(user.id),
            subject: 'Verify your e-mail address',
            text: 'code 777',
            headers: {},
          },
          template: 'verification',
          messageId: mailer.messageIdFor(key),
          attempt: 1,
          claimedAt: now.toISOString(),
          leaseUntil: new Date(now.getTime() + LEASE_MS).toISOString(),
          by: 'dead-host:1',
        },
      },
    ]);
    const requested = {
      id: causeId,
      type: 'EmailRequested',
      data: {
        emailId: randomUUID(),
        userId: user.id,
        to: emailOf(user.id),
        groupId: null,
        sessionId: null,
        facts: { template: 'verification', role: 'user', recipientName: 'A', code: '777' },
        requestedAt: now.toISOString(),
      },
    };
    const { position } = await store.append(`email-${requested.data.emailId}`, [requested]);
    expect(await t.system.runner.waitFor(position, 5000)).toBe(true);
    return { causeId, messageId: mailer.messageIdFor(key) };
  }

  it('the retry job takes over a claim whose lease ran out and sends it once, with its Message-ID', async () => {
    const user = await m.client();
    const { messageId } = await claimedByADeadSender(user);
    await silence();
    expect(to(emailOf(user.id))).toHaveLength(0); // the claim is respected while its lease runs
    expect(await t.system.retryDeferredEmails(new Date(now.getTime() + LEASE_MS - 1000))).toBe(0);
    const later = new Date(now.getTime() + LEASE_MS + 1000);
    expect(await t.system.retryDeferredEmails(later)).toBe(1);
    expect(await t.system.retryDeferredEmails(later)).toBe(0);
    const [mail] = await mailsTo(emailOf(user.id), 1);
    expect(mail!.messageId).toBe(messageId);
    expect(mail!.text).toContain('code 777');
    const row = await eventually(
      async () =>
        (
          await t.system.deps.db.query<{ status: string; message_id: string; attempts: number }>(
            `SELECT status, message_id, attempts FROM email_deliveries WHERE recipient = $1`,
            [user.id],
          )
        ).rows[0],
      (r) => r?.status === 'sent',
      5000,
    );
    expect(row).toEqual({ status: 'sent', message_id: messageId, attempts: 1 });
    await silence();
    expect(to(emailOf(user.id))).toHaveLength(1);
  });

  it('the process manager, replaying after the lease, takes the claim over and sends once', async () => {
    const user = await m.client();
    const { causeId, messageId } = await claimedByADeadSender(user);
    const { store, mailer, log } = t.system.deps;
    const cause = (await store.readEvent(causeId))!;
    const within = emailProcess({ store, mailer, log, clock: () => now, mailLeaseMs: LEASE_MS });
    await within.react!(cause);
    await silence();
    expect(to(emailOf(user.id))).toHaveLength(0);
    const after = () => new Date(now.getTime() + LEASE_MS + 1000);
    const replay = emailProcess({ store, mailer, log, clock: after, mailLeaseMs: LEASE_MS });
    await replay.react!(cause);
    await replay.react!(cause);
    const [mail] = await mailsTo(emailOf(user.id), 1);
    expect(mail!.messageId).toBe(messageId);
    expect(await t.system.retryDeferredEmails(after())).toBe(0);
    await silence();
    expect(to(emailOf(user.id))).toHaveLength(1);
  });

  it('claims a delivery only when a connection is free: behind a slow server no lease runs out in the queue', async () => {
    const { store, mailer, log } = t.system.deps;
    // Time moves from the system's fixed clock, so its own retry job (on that clock) sees every lease running.
    const started = Date.now();
    const clock = () => new Date(now.getTime() + Date.now() - started);
    const lease = 1500;
    const ledger = deliveries({ store, mailer, log, clock, leaseMs: lease });
    // Another instance's sender, with its own connections, taking over every claim whose lease ran out.
    const otherMailer = createSmtpMailer(smtp.url, 'Coaching <mail@coaching.test>');
    const other = deliveries({ store, mailer: otherMailer, log, clock, leaseMs: lease });
    const user = await m.client();
    const causes = Array.from({ length: 24 }, () => randomUUID());
    const keys = causes.map((c) => `${c}/${user.id}`);
    smtp.slowDown(300); // 24 messages over 3 connections: the last ones go out 2.4 s after the first claims
    try {
      const outcomes = Promise.all(
        causes.map((c, i) =>
          ledger.deliver(
            c,
            user.id,
            { key: keys[i]!, to: emailOf(user.id), subject: 'Slow relay', text: c, headers: {} },
            'verification',
            {},
          ),
        ),
      );
      const takeovers: Promise<unknown>[] = [];
      for (let round = 0; round < 10; round++) {
        await new Promise((r) => setTimeout(r, 300));
        for (const c of causes) takeovers.push(other.retry(deliveryStream(c, user.id), {}));
      }
      expect(await outcomes).toEqual(causes.map(() => 'sent'));
      expect(new Set(await Promise.all(takeovers))).toEqual(new Set(['skipped']));
      const got = smtp.received.map((r) => r.idempotencyKey).filter((k) => keys.includes(k));
      expect(got.sort()).toEqual([...keys].sort()); // each once
    } finally {
      smtp.slowDown(0);
      otherMailer.close();
    }
  });

  it('a retry pass behind a slow server claims each e-mail on the clock as it moves: every lease covers its send', async () => {
    const { store, mailer, log, db } = t.system.deps;
    const lease = 1500;
    const user = await m.client();
    const causes = Array.from({ length: 8 }, () => randomUUID());
    const keys = causes.map((c) => `${c}/${user.id}`);
    // Eight e-mails deferred by a temporary refusal, due a minute later.
    const ledger = deliveries({ store, mailer, log, clock: () => now, leaseMs: lease });
    smtp.rejectNext(causes.length, 451);
    for (const [i, c] of causes.entries())
      expect(
        await ledger.deliver(
          c,
          user.id,
          { key: keys[i]!, to: emailOf(user.id), subject: 'Deferred', text: c, headers: {} },
          'verification',
          {},
        ),
      ).toBe('deferred');
    expect(await t.system.runner.waitFor(await store.headPosition(), 5000)).toBe(true);
    // When each message reached the server, in real time.
    const arrived = new Map<string, number>();
    const look = () => {
      for (const r of smtp.received)
        if (keys.includes(r.idempotencyKey) && !arrived.has(r.idempotencyKey))
          arrived.set(r.idempotencyKey, Date.now());
    };
    const watch = setInterval(look, 5);
    smtp.slowDown(300); // one after the other: the pass takes 2.4 s, longer than a lease
    const retry = createMailRetry({ db, store, mailer, log, clock: () => now, leaseMs: lease });
    const due = new Date(now.getTime() + 61_000);
    const started = Date.now();
    try {
      expect(await retry.retryDue(due)).toBeGreaterThanOrEqual(causes.length);
    } finally {
      smtp.slowDown(0);
      clearInterval(watch);
      look(); // the last one may have arrived since the last look
    }
    expect([...arrived.keys()].sort()).toEqual([...keys].sort());
    for (const [i, c] of causes.entries()) {
      const events = (await store.readStream(deliveryStream(c, user.id))).events;
      const claim = events.filter((e) => e.type === 'DeliveryClaimed').at(-1)!.data as { leaseUntil: string };
      // The pass's clock is `due` at its start and runs on from there: the lease's end in real time.
      const leaseEnds = started + Date.parse(claim.leaseUntil) - due.getTime();
      expect({ i, withinLease: arrived.get(keys[i]!)! <= leaseEnds }).toEqual({
        i,
        withinLease: true,
      });
    }
  });

  it('a sent e-mail the event store cannot record for a moment is recorded once it answers, and not sent again', async () => {
    const { store, mailer, log } = t.system.deps;
    // The event store's database restarting: the first three records of the sent message are refused.
    let refusals = 3;
    const restarting: EventStore = {
      ...store,
      kind: store.kind,
      append: (stream, events, opts) =>
        events.some((e) => e.type === 'DeliverySent') && refusals-- > 0
          ? Promise.reject(
              Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
            )
          : store.append(stream, events, opts),
    };
    const ledger = deliveries({ store: restarting, mailer, log, clock: () => now, leaseMs: 4000 });
    const user = await m.client();
    const cause = randomUUID();
    const key = `${cause}/${user.id}`;
    const message = { key, to: emailOf(user.id), subject: 'Store away', text: cause, headers: {} };
    expect(await ledger.deliver(cause, user.id, message, 'verification', {})).toBe('sent');
    expect(refusals).toBe(-1); // refused three times, recorded at the fourth
    const ledgerEvents = (await store.readStream(deliveryStream(cause, user.id))).events.map((e) => e.type);
    expect(ledgerEvents).toEqual(['DeliveryClaimed', 'DeliverySent']);
    await silence();
    expect(smtp.received.filter((r) => r.idempotencyKey === key)).toHaveLength(1);
  });

  it('an address stored before it had to be one mailbox fails its delivery for good, and nothing is sent', async () => {
    const { store, mailer, log } = t.system.deps;
    const ledger = deliveries({ store, mailer, log, clock: () => now, leaseMs: 4000 });
    const user = await m.client();
    const cause = randomUUID();
    const key = `${cause}/${user.id}`;
    // What a header parser reads as two recipients, one of them not the user.
    const message = {
      key,
      to: `${user.id.slice(0, 8)},other@example.com`,
      subject: 'Hi',
      text: cause,
      headers: {},
    };
    expect(await ledger.deliver(cause, user.id, message, 'verification', {})).toBe('failed');
    const ledgerEvents = (await store.readStream(deliveryStream(cause, user.id))).events.map((e) => e.type);
    expect(ledgerEvents).toEqual(['DeliveryClaimed', 'DeliveryFailed']);
    await silence();
    expect(
      smtp.received.filter((r) => r.idempotencyKey === key || r.to.includes('other@example.com')),
    ).toEqual([]);
  });

  it('a fresh read-model database, rebuilt from the log, sends nothing again and shows every delivery', async () => {
    const { coach, client } = await booked();
    await mailsTo(emailOf(client.id), 1);
    await mailsTo(emailOf(coach.id), 1);
    const { store, mailer, log, clock, db } = t.system.deps;
    const before = smtp.received.length;
    const fresh = await testDatabase();
    try {
      await migrate(fresh.db);
      const runner = createProjectionRunner(
        store,
        fresh.db,
        allProjections({ store, clock, db: fresh.db, mailer, log, mailLeaseMs: LEASE_MS }),
        log,
      );
      await runner.start();
      expect(await runner.waitFor(await store.headPosition(), 30_000)).toBe(true);
      await runner.stop();
      await silence();
      expect(smtp.received.length).toBe(before);
      const rows = (q: typeof db) =>
        q
          .query<{ stream: string; status: string }>(
            `SELECT stream, status FROM email_deliveries WHERE status <> 'sending' ORDER BY stream`,
          )
          .then((r) => r.rows);
      expect(await t.system.runner.waitFor(await store.headPosition(), 5000)).toBe(true);
      const rebuilt = await rows(fresh.db);
      expect(rebuilt.length).toBeGreaterThan(2);
      expect(rebuilt).toEqual(await rows(db));
    } finally {
      await fresh.drop();
    }
  });

  it('one retry pass sends every e-mail that is due, however many a relay outage left behind', async () => {
    const { store, mailer, log, db } = t.system.deps;
    const user = await m.client();
    const causes = Array.from({ length: 60 }, () => randomUUID());
    const keys = causes.map((c) => `${c}/${user.id}`);
    // The relay was down: 60 e-mails (more than the 50 a pass read before) deferred, all due a minute later.
    const ledger = deliveries({ store, mailer, log, clock: () => now, leaseMs: LEASE_MS });
    smtp.rejectNext(causes.length, 451);
    const outcomes = await Promise.all(
      causes.map((c, i) =>
        ledger.deliver(
          c,
          user.id,
          { key: keys[i]!, to: emailOf(user.id), subject: 'Backlog', text: c, headers: {} },
          'verification',
          {},
        ),
      ),
    );
    expect(new Set(outcomes)).toEqual(new Set(['deferred']));
    expect(await t.system.runner.waitFor(await store.headPosition(), 5000)).toBe(true);
    // Back: the next pass sends them all, not 50 of them, the rest 30 s and more later.
    const retry = createMailRetry({ db, store, mailer, log, clock: () => now, leaseMs: LEASE_MS });
    expect(await retry.retryDue(new Date(now.getTime() + 61_000))).toBeGreaterThanOrEqual(causes.length);
    const got = smtp.received.map((r) => r.idempotencyKey).filter((k) => keys.includes(k));
    expect(got.sort()).toEqual([...keys].sort()); // each once
  });
});

describe('private e-mail endpoints (18 to 23)', () => {
  it('18 queues a verification e-mail that reaches the user once per request; Idempotency-Key replays', async () => {
    const user = await m.client();
    const service = t.token(randomUUID(), ['service']); // Idempotency-Key is scoped to the caller
    const path = `/api/v1/notification/private/email/${user.id}/verification`;
    const headers = { 'idempotency-key': `verify-${user.id}` };
    const res = await t.request('POST', path, { token: service, body: { code: '481516' }, headers });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.any(String),
      status: 'queued',
      to: emailOf(user.id),
      template: 'verification',
    });
    const again = await t.request('POST', path, { token: service, body: { code: '481516' }, headers });
    expect(again.body.id).toBe(res.body.id);
    const [mail] = await mailsTo(emailOf(user.id), 1);
    expect(mail!.subject).toBe('Verify your e-mail address');
    expect(mail!.text).toContain('481516');
    await silence();
    expect(to(emailOf(user.id))).toHaveLength(1);
  });

  it("an operator lists one user's e-mails (GET /api/v1/admin/emails?user=), to see what reached them", async () => {
    const [a, b] = [await m.client(), await m.client()];
    const service = t.token(randomUUID(), ['service']);
    for (const u of [a, b, a])
      expect(
        (
          await t.request('POST', `/api/v1/notification/private/email/${u.id}/verification`, {
            token: service,
            body: { code: '1234' },
          })
        ).status,
      ).toBe(200);
    await mailsTo(emailOf(a.id), 2);
    await mailsTo(emailOf(b.id), 1);
    const admin = m.admin();
    const listed = await eventually(
      async () => (await t.request('GET', `/api/v1/admin/emails?user=${a.id}`, { token: admin })).body,
      (l) => Array.isArray(l) && l.filter((d: { status: string }) => d.status === 'sent').length === 2,
    );
    expect(listed).toHaveLength(2);
    expect(listed.map((d: { recipient: string; to: string }) => [d.recipient, d.to])).toEqual([
      [a.id, emailOf(a.id)],
      [a.id, emailOf(a.id)],
    ]);
    // With the status filter too; a malformed id is 422 at the parameter.
    const failed = await t.request('GET', `/api/v1/admin/emails?user=${a.id}&status=failed`, {
      token: admin,
    });
    expect([failed.status, failed.body]).toEqual([200, []]);
    const bad = await t.request('GET', '/api/v1/admin/emails?user=someone', { token: admin });
    expect([bad.status, bad.body.detail[0].loc]).toEqual([422, ['query', 'user']]);
  });

  it('20, 22 and 23 speak to the party they are sent to: a coach is not told "your coach", a client not "your client"', async () => {
    const { coach, client, session } = await booked();
    await mailsTo(emailOf(coach.id), 1);
    await mailsTo(emailOf(client.id), 1);
    const base = `/api/v1/notification/private/email`;
    const send = async (user: { id: string }, template: string) => {
      const r = await t.request('POST', `${base}/${user.id}/session/${session.id}/${template}`, {
        token: m.service(),
        body: { reason: 'as agreed' },
      });
      expect(r.status).toBe(200);
    };
    await send(coach, 'approve');
    await send(coach, 'decline');
    await send(client, 'dispute');
    const [, approved, declined] = await mailsTo(emailOf(coach.id), 3);
    expect(approved!.subject).toBe('Session approved: Tennis basics');
    expect(approved!.text).toContain('You approved Tennis basics on 2026-12-02 10:00 (Europe/Berlin).');
    expect(declined!.text).toContain('You declined Tennis basics on 2026-12-02 10:00 (Europe/Berlin).');
    const [, disputed] = await mailsTo(emailOf(client.id), 2);
    expect(disputed!.subject).toBe('Session disputed: Tennis basics');
    expect(disputed!.text).toContain(
      'Your dispute of Tennis basics on 2026-12-02 10:00 (Europe/Berlin) is received.',
    );
    for (const mail of [approved, declined, disputed]) expect(mail!.text).not.toMatch(/Your (coach|client) /);
  });

  it("21 to 23 carry a reason as long as a session action takes (a dispute's: 2000 characters)", async () => {
    const { coach, client, session } = await booked();
    const base = `/api/v1/notification/private/email`;
    // The client's own words, as the dispute took them (up to 2000 characters), forwarded to the coach.
    const reason = 'The coach did not come. '.repeat(84).slice(0, 2000);
    const sent = await t.request('POST', `${base}/${coach.id}/session/${session.id}/dispute`, {
      token: m.service(),
      body: { reason },
    });
    expect(sent.status).toBe(200);
    const [requested] = (await t.system.deps.store.readStream(`email-${sent.body.id}`)).events;
    expect((requested!.data as { facts: { reason: string } }).facts.reason).toBe(reason);
    const tooLong = await t.request('POST', `${base}/${client.id}/session/${session.id}/cancel`, {
      token: m.service(),
      body: { reason: `${reason}!` },
    });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.detail[0]).toMatchObject({ loc: ['body', 'reason'] });
  });

  it('18 refuses a verification e-mail that gives nothing to verify with, a code of blanks or lines, a link that is no web address', async () => {
    const user = await m.client();
    const path = `/api/v1/notification/private/email/${user.id}/verification`;
    const cases: [unknown, (string | number)[]][] = [
      [{}, ['body']],
      [undefined, ['body']],
      [{ code: null, link: null }, ['body']],
      [{ code: '   ' }, ['body', 'code']],
      [{ code: '1234\r\nReason: your account is closed' }, ['body', 'code']],
      [{ link: 'javascript:alert(1)' }, ['body', 'link']],
      [{ link: '/verify?t=1' }, ['body', 'link']],
      [{ link: 'https://example.com/verify?t=1\nReply to claim' }, ['body', 'link']],
      [{ code: '1234', link: ' ' }, ['body', 'link']],
    ];
    for (const [body, loc] of cases) {
      const res = await t.request('POST', path, {
        token: m.service(),
        ...(body === undefined ? { headers: { 'content-type': 'application/json' } } : { body }),
      });
      expect({ body, status: res.status, loc: res.body.detail?.[0]?.loc }).toEqual({
        body,
        status: 422,
        loc,
      });
    }
    const empty = await t.request('POST', path, { token: m.service(), body: {} });
    expect(empty.body.detail[0].msg).toBe('A verification e-mail needs a code or a link (or both)');
    // Nothing was requested, so nothing is sent; a code with blanks inside and a web link still are.
    const ok = await t.request('POST', path, {
      token: m.service(),
      body: { code: '481 516', link: 'HTTPS://example.com/verify?t=1' },
    });
    expect(ok.status).toBe(200);
    const [mail] = await mailsTo(emailOf(user.id), 1);
    expect(mail!.text).toContain('Your verification code: 481 516\nOr open: HTTPS://example.com/verify?t=1');
    await silence();
    expect(to(emailOf(user.id))).toHaveLength(1);
  });

  it('reads optional fields sent as null as not sent: no reason, no code', async () => {
    const { coach, session } = await booked();
    const base = `/api/v1/notification/private/email`;
    const declined = await t.request('POST', `${base}/${coach.id}/session/${session.id}/decline`, {
      token: m.service(),
      body: { reason: null },
    });
    expect(declined.status).toBe(200);
    const verify = await t.request('POST', `${base}/${coach.id}/verification`, {
      token: m.service(),
      body: { code: null, link: 'https://example.com/verify?t=1' },
    });
    expect(verify.status).toBe(200);
    for (const id of [declined.body.id, verify.body.id]) {
      const [requested] = (await t.system.deps.store.readStream(`email-${id}`)).events;
      const facts = (requested!.data as { facts: Record<string, unknown> }).facts;
      expect([facts.reason, facts.code]).toEqual([undefined, undefined]);
    }
    const mails = await mailsTo(emailOf(coach.id), 3);
    const verification = mails.find((x) => x.subject === 'Verify your e-mail address')!;
    expect(verification.text).toContain('Open: https://example.com/verify?t=1');
    expect(mails.find((x) => x.subject.startsWith('Session declined'))!.text).not.toContain('Reason:');
  });

  it('guards, validates and answers 404 for unknown users and sessions the user is no party of', async () => {
    const { coach, client, session } = await booked();
    const base = `/api/v1/notification/private/email`;
    expect((await t.request('POST', `${base}/${client.id}/verification`, { body: {} })).status).toBe(401);
    expect(
      (await t.request('POST', `${base}/${client.id}/verification`, { token: client.token, body: {} }))
        .status,
    ).toBe(403);
    const unknownUser = await t.request('POST', `${base}/${randomUUID()}/verification`, {
      token: m.service(),
      body: { code: '1234' },
    });
    expect(unknownUser.status).toBe(404);
    expect(unknownUser.body).toMatchObject({ error: 'user_not_found', code: 404 });
    const bad = await t.request('POST', `${base}/not-a-uuid/verification`, {
      token: m.service(),
      body: { x: 1 },
    });
    expect(bad.status).toBe(422);
    const stranger = await m.client();
    const notParty = await t.request('POST', `${base}/${stranger.id}/session/${session.id}/approve`, {
      token: m.service(),
    });
    expect(notParty.status).toBe(404);
    expect(notParty.body.error).toBe('session_not_found');
    expect(
      (
        await t.request('POST', `${base}/${client.id}/session/${randomUUID()}/booking`, {
          token: m.service(),
        })
      ).body.error,
    ).toBe('session_not_found');

    // 19 to 23 for the parties.
    await mailsTo(emailOf(coach.id), 1);
    const bookingMail = await t.request('POST', `${base}/${client.id}/session/${session.groupId}/booking`, {
      token: m.service(),
    });
    expect(bookingMail.body).toMatchObject({ status: 'queued', template: 'booking' });
    for (const template of ['approve', 'cancel', 'decline'] as const) {
      const r = await t.request('POST', `${base}/${client.id}/session/${session.id}/${template}`, {
        token: m.service(),
        body: { reason: 'as agreed' },
      });
      expect(r.body).toMatchObject({ status: 'queued', template, to: emailOf(client.id) });
    }
    const dispute = await t.request('POST', `${base}/${coach.id}/session/${session.id}/dispute`, {
      token: m.service(),
    });
    expect(dispute.body).toMatchObject({ status: 'queued', template: 'dispute', to: emailOf(coach.id) });
    const clientMails = await mailsTo(emailOf(client.id), 5);
    expect(clientMails.slice(1).map((r: ReceivedMail) => r.subject)).toEqual([
      'Booking received: Tennis basics',
      'Session approved: Tennis basics',
      'Session canceled: Tennis basics',
      'Session declined: Tennis basics',
    ]);
    expect((await mailsTo(emailOf(coach.id), 2))[1]!.subject).toBe('Session disputed: Tennis basics');
  });
});
