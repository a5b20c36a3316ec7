import { randomUUID } from 'node:crypto';
import { eventually, marketplace } from '../support/marketplace';
import { startScriptedSmtp, type SmtpScript } from '../support/scriptedSmtp';
import { startTestSystem, type TestSystem } from '../support/system';

let clock = new Date('2026-12-01T08:00:00Z');
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
let smtp: Awaited<ReturnType<typeof startScriptedSmtp>>;

beforeAll(async () => {
  smtp = await startScriptedSmtp();
  t = await startTestSystem({
    clock: () => clock,
    env: { SMTP_URL: smtp.url, MAIL_FROM: 'Coaching <mail@coaching.test>' },
  });
  m = marketplace(t);
});
afterAll(async () => {
  await t.close();
  await smtp.close();
});

interface Row {
  status: string;
  message_id: string;
  error: string | null;
}
const row = async (stream: string) =>
  (await t.system.deps.db.query<Row>(`SELECT * FROM email_deliveries WHERE stream = $1`, [stream])).rows[0];

/** A verification e-mail (18) and its delivery's ledger stream. */
async function requested() {
  const user = await m.client();
  const res = await t.request('POST', `/api/v1/notification/private/email/${user.id}/verification`, {
    token: m.service(),
    body: { code: '1234' },
  });
  expect(res.status).toBe(200);
  const [requestedEvent] = (await t.system.deps.store.readStream(`email-${res.body.id}`)).events;
  return `delivery-${requestedEvent!.id}-${user.id}`;
}

// A 4xx anywhere, and a 5xx refusing the service itself (greeting, EHLO, MAIL FROM), defer; a 5xx to the
// recipient or the message (RCPT TO, DATA, the end of data) fails for good (docs/api.md, "E-mail delivery").
const cases: [string, SmtpScript, 'deferred' | 'failed'][] = [
  ['421 greeting', { refuse: { stage: 'greeting', code: 421 } }, 'deferred'],
  ['554 greeting', { refuse: { stage: 'greeting', code: 554 } }, 'deferred'],
  ['550 EHLO (and HELO)', { refuse: { stage: 'ehlo', code: 550 } }, 'deferred'],
  ['553 MAIL FROM', { refuse: { stage: 'mail', code: 553 } }, 'deferred'],
  ['450 RCPT TO', { refuse: { stage: 'rcpt', code: 450 } }, 'deferred'],
  ['550 RCPT TO', { refuse: { stage: 'rcpt', code: 550 } }, 'failed'],
  ['451 DATA', { refuse: { stage: 'data', code: 451 } }, 'deferred'],
  ['554 DATA', { refuse: { stage: 'data', code: 554 } }, 'failed'],
  ['451 end of data', { refuse: { stage: 'eod', code: 451 } }, 'deferred'],
  ['554 end of data', { refuse: { stage: 'eod', code: 554 } }, 'failed'],
  ['connection dropped after the data, before the answer', { dropAfterData: true }, 'deferred'],
];

describe('SMTP refusals at each stage', () => {
  it.each(cases)('%s', async (_name, script, expected) => {
    await smtp.play(script);
    const stream = await requested();
    const first = await eventually(
      () => row(stream),
      (r) => r !== undefined && r.status !== 'sending',
      10_000,
    );
    expect(first!.status).toBe(expected);
    const admin = t.token(randomUUID(), ['admin']);
    const listed = await t.request('GET', `/api/v1/admin/emails?status=${expected}`, { token: admin });
    expect(listed.body.map((e: { id: string }) => e.id)).toContain(stream);

    await smtp.play({});
    const retried = await t.request('POST', `/api/v1/admin/emails/${stream}/retry`, { token: admin });
    if (expected === 'failed') {
      expect(retried.status).toBe(200);
      expect(retried.body.status).toBe('sent');
    } else {
      expect(retried.status).toBe(409);
      clock = new Date(clock.getTime() + 10 * 60_000);
      expect(await t.system.retryDeferredEmails(clock)).toBeGreaterThanOrEqual(1);
    }
    const sent = await eventually(
      () => row(stream),
      (r) => r?.status === 'sent',
      5000,
    );
    // Every copy the relay kept carries the one Message-ID: one copy, or two when the connection broke
    // after the relay had the data (SMTP cannot tell the sender whether it kept it).
    const copies = smtp.kept.filter((k) => k.messageId === sent!.message_id);
    expect(copies).toHaveLength(script.dropAfterData ? 2 : 1);
  });
});
