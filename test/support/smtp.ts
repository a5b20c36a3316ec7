import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
  /** The plain-text part, decoded (quoted-printable breaks its raw lines anywhere). */
  text: string;
  subject: string;
  messageId: string;
  idempotencyKey: string;
}

const header = (raw: string, name: string) => {
  const head = raw.split(/\r?\n\r?\n/)[0] ?? '';
  const m = new RegExp(`^${name}:[ \\t]*(.*(?:\\r?\\n[ \\t].*)*)`, 'im').exec(head);
  return m ? m[1]!.replace(/\r?\n[ \t]+/g, ' ').trim() : '';
};

/**
 * A real SMTP server (the `smtp-server` package) on an ephemeral port that keeps every message it accepts.
 * `rejectNext(n, code)` makes the next n RCPT commands fail with that reply code; `refuseSender(code)` makes
 * every MAIL FROM fail with it (a relay refusing the service itself) until `refuseSender(null)`;
 * `slowDown(ms)` delays each message's acceptance.
 */
export async function startSmtpServer() {
  const received: ReceivedMail[] = [];
  let rejections: { left: number; code: number } = { left: 0, code: 451 };
  let senderRefusal: number | null = null;
  let connections = 0;
  let delayMs = 0;
  const server = new SMTPServer({
    onConnect(_session, callback) {
      connections++;
      callback();
    },
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onMailFrom(_address, _session, callback) {
      if (senderRefusal === null) return callback();
      callback(Object.assign(new Error('authentication required'), { responseCode: senderRefusal }));
    },
    onRcptTo(_address, _session, callback) {
      if (rejections.left > 0) {
        rejections.left--;
        return callback(
          Object.assign(new Error(rejections.code >= 500 ? 'mailbox unavailable' : 'try again later'), {
            responseCode: rejections.code,
          }),
        );
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
        const raw = Buffer.concat(chunks).toString('utf8');
        const parsed = await simpleParser(raw);
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          text: parsed.text ?? '',
          subject: parsed.subject ?? header(raw, 'Subject'),
          messageId: header(raw, 'Message-ID'),
          idempotencyKey: header(raw, 'X-Idempotency-Key'),
        });
        callback();
      });
    },
  });
  // A client killed mid-conversation (the crash test kills the service) resets its connection: not our error.
  server.on('error', () => undefined);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    rejectionsLeft: () => rejections.left,
    /** SMTP connections opened to it so far. */
    connections: () => connections,
    /** Answers each message's data this much later (a slow relay); 0 for at once. */
    slowDown(ms: number) {
      delayMs = ms;
    },
    rejectNext(n: number, code = 451) {
      rejections = { left: n, code };
    },
    /** Refuses every sender (MAIL FROM) with this reply code, as a relay does wrong credentials; null: accepts again. */
    refuseSender(code: number | null) {
      senderRefusal = code;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
