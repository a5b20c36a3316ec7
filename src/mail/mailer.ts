import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { asciiDomain, composeMessage, envelopeAddress } from './compose';
import { grouped } from '../grouped';

/** One outgoing e-mail. `key` is its idempotency key (derived from the causing event and the recipient). */
export interface MailMessage {
  key: string;
  to: string;
  subject: string;
  text: string;
  html?: string;
  headers: Record<string, string>;
}

export interface MailCheck {
  provider: 'smtp' | 'outbox';
  status: 'ok' | 'error';
  detail?: string;
}

/** The mail port (DESIGN section 6): SMTP when `SMTP_URL` is set, else `.eml` files under `DATA_DIR/outbox`. */
export interface Mailer {
  readonly provider: 'smtp' | 'outbox';
  /**
   * Messages it sends at once (SMTP: its pooled connections). Deliveries are claimed only when one of these
   * is free, so a claim's lease covers the send, not a wait in the transport's queue (src/mail/delivery.ts).
   */
  readonly concurrency: number;
  /**
   * `attempt.last`: a temporary refusal of this send ends the delivery too (its tenth try, see
   * commands/delivery): the mailers ignore it; the metrics count such a refusal as `failed`.
   */
  send(message: MailMessage, attempt?: { last: boolean }): Promise<{ messageId: string }>;
  /** The Message-ID `send` gives a message with this key (the same for every attempt). */
  messageIdFor(key: string): string;
  /** SMTP: connects and authenticates (no mail); outbox: the directory exists and is writable. */
  verify(): Promise<MailCheck>;
  close(): void;
}

/**
 * The `Message-ID` of a message with this key: the same key always gives the same id, so a receiving
 * system can drop a duplicate even if one slipped through.
 */
export const messageIdOf = (key: string, from: string) => {
  // In ASCII (IDNA) like the addresses: the header must stay 7-bit for servers without SMTPUTF8.
  // The sender's address, not its display name (which may hold an @ of its own).
  const domain = asciiDomain(/@([^@]+)$/.exec(senderAddress(from))?.[1] ?? 'coaching.local');
  return `<${createHash('sha256').update(key).digest('hex').slice(0, 40)}@${domain}>`;
};

const senderAddress = (from: string) => {
  try {
    return envelopeAddress(from);
  } catch {
    return ''; // refused at start (config.ts); a caller with another sender gets the default domain
  }
};

/** A file name safe on every filesystem, unique per key. */
export const outboxFileName = (key: string) =>
  `${key.replace(/[^\w.-]+/g, '_').slice(0, 120)}-${createHash('sha256').update(key).digest('hex').slice(0, 8)}.eml`;

/** The message as both transports send it (src/mail/compose.ts), with its Message-ID. */
const composed = (from: string, m: MailMessage) => {
  const messageId = messageIdOf(m.key, from);
  const raw = composeMessage({
    from,
    to: m.to,
    subject: m.subject,
    text: m.text,
    ...(m.html ? { html: m.html } : {}),
    messageId,
    headers: { 'X-Idempotency-Key': m.key, ...m.headers },
    date: new Date(),
    key: m.key,
  });
  return { messageId, raw };
};

/**
 * SMTP waits (nodemailer's defaults reach 10 minutes) kept well inside the delivery lease (2 minutes by
 * default), so a send that hangs fails before another sender may take the delivery over.
 */
export const SMTP_TIMEOUTS = { connectionTimeout: 20_000, greetingTimeout: 20_000, socketTimeout: 40_000 };

/**
 * Pooled SMTP: a few connections kept open and reused for many messages, instead of a connection, greeting,
 * EHLO (and STARTTLS, AUTH) per message. A connection that fails is replaced; a message refused on it fails
 * alone (the delivery ledger defers or fails it as before).
 */
export const SMTP_POOL = { pool: true, maxConnections: 3, maxMessages: 100 } as const;

export function createSmtpMailer(smtpUrl: string, from: string): Mailer {
  const transport = nodemailer.createTransport({ url: smtpUrl, ...SMTP_TIMEOUTS, ...SMTP_POOL });
  return {
    provider: 'smtp',
    concurrency: SMTP_POOL.maxConnections,
    messageIdFor: (key) => messageIdOf(key, from),
    async send(m) {
      const { messageId, raw } = composed(from, m);
      // Sent as composed: nodemailer only talks SMTP (and dot-stuffs), it builds nothing.
      await transport.sendMail({
        envelope: { from: envelopeAddress(from), to: [envelopeAddress(m.to)] },
        raw,
      });
      return { messageId };
    },
    async verify() {
      try {
        await transport.verify();
        return { provider: 'smtp', status: 'ok' };
      } catch (err) {
        return { provider: 'smtp', status: 'error', detail: (err as Error).message };
      }
    },
    close: () => transport.close(),
  };
}

/** Outbox files written at once (each an open, write, fsync, close and rename on libuv's thread pool). */
const OUTBOX_CONCURRENCY = 16;

/** Makes the renames done in `dir` durable: its entries are fsynced with the directory itself. */
export const syncDirectory = async (dir: string) => {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
};

/**
 * Writes each message as `<outboxDir>/<key>.eml` (written to a temporary name, fsynced, then renamed), byte
 * for byte as SMTP would send it. A send answers only once the file is durable under its final name: after
 * a crash the message is there, complete, or (before the answer) not there at all, never only as a `.tmp`
 * file while its delivery is recorded as sent. The directory's fsync is shared by the sends that finish
 * together (`grouped`); `syncDir` is there for tests to watch it.
 */
export function createOutboxMailer(
  outboxDir: string,
  from: string,
  syncDir: (dir: string) => Promise<void> = syncDirectory,
): Mailer {
  const renamesDurable = grouped(() => syncDir(outboxDir));
  // The directory is made once, and again only when it went missing (an operator emptied DATA_DIR).
  let made: Promise<unknown> | undefined;
  const open = async (tmp: string) => {
    await (made ??= fs.mkdir(outboxDir, { recursive: true }).catch((err: unknown) => {
      made = undefined;
      throw err;
    }));
    return fs.open(tmp, 'w').catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
      made = fs.mkdir(outboxDir, { recursive: true });
      await made;
      return fs.open(tmp, 'w');
    });
  };
  return {
    provider: 'outbox',
    concurrency: OUTBOX_CONCURRENCY,
    messageIdFor: (key) => messageIdOf(key, from),
    async send(m) {
      const { messageId, raw } = composed(from, m);
      const file = path.join(outboxDir, outboxFileName(m.key));
      const tmp = `${file}.${process.pid}.tmp`;
      const fh = await open(tmp);
      try {
        await fh.writeFile(raw);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fs.rename(tmp, file);
      await renamesDurable();
      return { messageId };
    },
    async verify() {
      try {
        await fs.mkdir(outboxDir, { recursive: true });
        await fs.access(outboxDir, fs.constants.W_OK);
        return { provider: 'outbox', status: 'ok' };
      } catch (err) {
        return { provider: 'outbox', status: 'error', detail: (err as Error).message };
      }
    },
    close: () => undefined,
  };
}

export function createMailer(config: { smtpUrl?: string; mailFrom: string; dataDir: string }): Mailer {
  return config.smtpUrl
    ? createSmtpMailer(config.smtpUrl, config.mailFrom)
    : createOutboxMailer(path.join(config.dataDir, 'outbox'), config.mailFrom);
}

/** The SMTP commands whose refusal is about this message or its recipient, not about the sender. */
const MESSAGE_COMMANDS = new Set(['RCPT TO', 'DATA']);

/**
 * Whether a failed send is final: a 5xx reply to this message's recipient or content (RCPT TO, DATA: an
 * unknown mailbox, a rejected message), or a message the service itself refused (an address that is not
 * one mailbox, src/mail/compose.ts: no SMTP command). Connection trouble and 4xx replies are temporary, and
 * so is a 5xx refusal of the service itself, before any message is looked at (the greeting, EHLO, AUTH,
 * MAIL FROM: wrong credentials, a blocked address, a sender the relay does not accept): it refuses every
 * e-mail alike until the operator fixes it, and then every e-mail waiting should go out, not have failed.
 */
export function isPermanentMailError(err: unknown): boolean {
  const { responseCode: code, command } = (err ?? {}) as { responseCode?: unknown; command?: unknown };
  if (typeof code !== 'number' || code < 500 || code >= 600) return false;
  return command === undefined || (typeof command === 'string' && MESSAGE_COMMANDS.has(command));
}
