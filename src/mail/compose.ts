import { createHash } from 'node:crypto';
import { domainToASCII } from 'node:url';

/**
 * The RFC 5322 / MIME text of one e-mail, built directly: a plain-text part and, when given, an HTML
 * alternative, both UTF-8 in quoted-printable; header text that is not plain ASCII as RFC 2047 encoded
 * words; CRLF line ends; lines of at most 78 characters, except a header word longer than that (a key),
 * which stays whole. Both mail transports send exactly this (the outbox writes it, SMTP sends it as
 * nodemailer's `raw`): nodemailer's own composer built the same message at about 0.24 ms of CPU each, a
 * tenth of a booking's CPU in all.
 *
 * Every attempt at one delivery sends the same message: the same Message-ID and boundary (from the
 * idempotency key), the same parts; only the Date header tells the attempts apart.
 */
export interface ComposeInput {
  from: string;
  to: string;
  subject: string;
  text: string;
  html?: string;
  messageId: string;
  /** Extra header fields (X-Idempotency-Key and the like); names that are not valid field names are dropped. */
  headers: Record<string, string>;
  date: Date;
  /** Seeds the multipart boundary. */
  key: string;
}

const CRLF = '\r\n';
const MAX_LINE = 76;
// Printable ASCII and spaces/tabs only: anything else (a CR or LF included) needs encoding.
const PLAIN_HEADER = /^[\x20-\x7e\t]*$/;
const FIELD_NAME = /^[!-9;-~]+$/;
/** Fields this module writes itself: an extra header by one of these names would be a second copy. */
const OWN_FIELDS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'message-id',
  'date',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
]);
/**
 * One mailbox: something, an @, a domain; no whitespace, commas, semicolons, angle brackets, quotes or
 * parentheses, which would make a header name more (or other) recipients than the envelope does.
 */
// eslint-disable-next-line no-control-regex -- control characters are what it must refuse
const MAILBOX = /^[^\s\x00-\x1f\x7f@,;<>()"\\[\]:]+@[^\s\x00-\x1f\x7f@,;<>()"\\[\]:]+$/u;

/**
 * Whether `s` is one bare mailbox the mailer sends to (profiles are checked with this when written), checked
 * as it is sent: after IDNA, which maps fullwidth commas, semicolons and parentheses in a domain to ASCII.
 */
export const isMailbox = (s: string) => MAILBOX.test(s) && MAILBOX.test(asciiAddress(s));

/** A label of a host name (RFC 1035, 5321): letters, digits and inner hyphens, 1 to 63 of them. */
const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

/**
 * Whether a mailbox (`isMailbox`) is one a mail server takes and reads as shown: no control or invisible
 * character, a local part without a dot at either end or two in a row (RFC 5321's dot-atom), and a domain
 * that is a host name once in ASCII (IDNA), its last label not all digits. Profiles and e-mail channels.
 */
export function isDeliverable(address: string): boolean {
  const at = address.lastIndexOf('@');
  const labels = asciiDomain(address.slice(at + 1)).split('.');
  return (
    // No control character, nor one drawn as nothing (a bidi override, a zero-width space, a soft hyphen).
    !/[\p{Cc}\p{Default_Ignorable_Code_Point}]/u.test(address) &&
    !/^\.|\.$|\.\./.test(address.slice(0, at)) &&
    labels.length >= 2 &&
    labels.every((l) => HOST_LABEL.test(l)) &&
    /[a-z]/i.test(labels[labels.length - 1]!)
  );
}

/**
 * Folds an ASCII header line before a word that would take it past 78 characters. Unfolding (dropping the
 * CRLFs) gives the value back exactly; a continuation line always holds a word, so none is blank. A run of
 * spaces is not broken inside (it is kept whole on its line, within RFC 5322's 998).
 */
function fold(name: string, value: string): string {
  const lines: string[] = [];
  let line = `${name}:`;
  let words = 0;
  for (const word of value.split(' ')) {
    const real = word.trim() !== ''; // a word of tabs alone would make a blank line
    if (real && words > 0 && line.length + 1 + word.length > 78) {
      lines.push(line);
      line = '';
      words = 0;
    }
    line += ` ${word}`;
    if (real) words++;
  }
  lines.push(line);
  return lines.join(CRLF);
}

/**
 * RFC 2047 "B" encoded words for a value with non-ASCII characters, split between characters (never inside
 * one, never inside a surrogate pair), each at most 75 characters as RFC 2047 asks: the first fits the
 * `firstRoom` characters left on the field's first line, the others a continuation line of 76.
 */
function encodedWords(value: string, firstRoom: number): string[] {
  // Bytes a word of `room` characters holds: "=?UTF-8?B?" and "?=" take 12, base64 gives 4 per 3 bytes.
  const bytesFor = (room: number) => Math.max(3, Math.floor((room - 12) / 4) * 3);
  const words: string[] = [];
  let limit = bytesFor(Math.min(75, firstRoom));
  let chunk = '';
  for (const ch of value) {
    if (chunk && Buffer.byteLength(chunk + ch) > limit) {
      words.push(chunk);
      chunk = '';
      limit = bytesFor(75);
    }
    chunk += ch;
  }
  if (chunk) words.push(chunk);
  return words.map((w) => `=?UTF-8?B?${Buffer.from(w, 'utf8').toString('base64')}?=`);
}

/** One header field, unstructured text (Subject, X- fields): CR and LF become spaces, never new fields. */
function textHeader(name: string, raw: string): string {
  const value = raw.replace(/[\r\n]+/g, ' ');
  // Plain ASCII stays readable (and greppable: idempotency keys), folded at spaces where it has them; a word
  // past 78 characters stays whole (RFC 5322 allows lines of 998). Non-ASCII, or a line that would still
  // pass 998 (a very long word, a long run of spaces), is encoded.
  if (PLAIN_HEADER.test(value)) {
    const folded = fold(name, value);
    if (folded.split(CRLF).every((l) => l.length <= 998)) return folded;
  }
  return `${name}: ${encodedWords(value, 76 - name.length - 2).join(`${CRLF} `)}`;
}

/** An address with its domain in ASCII (IDNA), as SMTP servers expect it. */
function asciiAddress(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 0) return address;
  return `${address.slice(0, at)}@${asciiDomain(address.slice(at + 1))}`;
}

/** A domain in ASCII (IDNA); as given when it is ASCII already or not a valid name. */
export const asciiDomain = (domain: string) =>
  PLAIN_HEADER.test(domain) ? domain : domainToASCII(domain) || domain;

/** `Name <address>` or a bare address, as written in MAIL_FROM or a profile; null if no single mailbox. */
function parseMailbox(raw: string): { display: string; address: string } | null {
  const value = raw.trim();
  const angle = /^(.*?)\s*<([^<>]*)>$/.exec(value);
  const address = (angle ? angle[2]! : value).trim();
  if (!isMailbox(address)) return null;
  let display = angle ? angle[1]!.trim() : '';
  // A quoted display name: its quotes and backslash escapes are syntax, not part of the name.
  const quoted = /^"((?:[^"\\]|\\.)*)"$/.exec(display);
  if (quoted) display = quoted[1]!.replace(/\\(.)/g, '$1');
  return { display, address: asciiAddress(address) };
}

/** An error a mail server would answer with 553: permanent, so the delivery is recorded as failed. */
const badMailbox = (what: string, value: string) =>
  Object.assign(new Error(`${what} is not one e-mail address: ${JSON.stringify(value)}`), {
    responseCode: 553,
  });

/** The address of `Name <address>` (or the bare address), for the SMTP envelope; throws if not one mailbox. */
export function envelopeAddress(mailbox: string): string {
  const parsed = parseMailbox(mailbox);
  if (!parsed) throw badMailbox('the address', mailbox);
  return parsed.address;
}

/** A mailbox header, the display name quoted (ASCII) or encoded (otherwise); throws if not one mailbox. */
function mailboxHeader(name: string, raw: string): string {
  const parsed = parseMailbox(raw);
  if (!parsed) throw badMailbox(name, raw);
  const { display, address } = parsed;
  if (!display) return `${name}: ${address}`;
  const shown = PLAIN_HEADER.test(display)
    ? `"${display.replace(/["\\]/g, '\\$&')}"`
    : encodedWords(display, 76 - name.length - 2).join(`${CRLF} `);
  return `${name}: ${shown}${CRLF} <${address}>`;
}

const HEX = '0123456789ABCDEF';
const hexByte = (b: number) => `=${HEX[b >> 4]}${HEX[b & 15]}`;

/**
 * Quoted-printable (RFC 2045 section 6.7) of UTF-8 text: line ends become CRLF, `=`, control and non-ASCII
 * bytes `=XX`, a space or tab ending a line `=20`/`=09`, and lines longer than 76 get soft breaks, after the
 * line's last space where it has one (so words, dates and codes stay whole in the raw text), never inside an
 * `=XX`. No `=` is ever left bare, so a boundary starting with `=_` cannot occur in a part.
 */
export function quotedPrintable(text: string): string {
  const out: string[] = [];
  for (const line of text.replace(/\r\n?/g, '\n').split('\n')) {
    const bytes = Buffer.from(line, 'utf8');
    let current = '';
    /** Where `current` may be cut: just after its last literal space or tab (0: nowhere). */
    let cut = 0;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]!;
      const last = i === bytes.length - 1;
      const blank = (b === 32 || b === 9) && !last;
      const token = (b >= 33 && b <= 126 && b !== 61) || blank ? String.fromCharCode(b) : hexByte(b);
      // A soft break ("=" at the end) keeps each line at 76 characters at most.
      const room = MAX_LINE - (last ? 0 : 1);
      if (current.length + token.length > room) {
        if (cut > 0 && current.length - cut + token.length <= room) {
          out.push(`${current.slice(0, cut)}=`);
          current = current.slice(cut);
        } else {
          out.push(`${current}=`);
          current = '';
        }
        cut = 0;
      }
      current += token;
      if (blank) cut = current.length;
    }
    out.push(current);
  }
  return out.join(CRLF);
}

const part = (type: string, body: string) =>
  [
    `Content-Type: ${type}; charset=utf-8`,
    'Content-Transfer-Encoding: quoted-printable',
    '',
    quotedPrintable(body),
  ].join(CRLF);

/** The whole message, ready for the outbox or the SMTP DATA command (SMTP adds its dot-stuffing). */
export function composeMessage(m: ComposeInput): Buffer {
  const head = [
    mailboxHeader('From', m.from),
    mailboxHeader('To', m.to),
    textHeader('Subject', m.subject),
    `Message-ID: ${m.messageId.replace(/[\r\n\s]+/g, '')}`,
    `Date: ${m.date.toUTCString().replace(/GMT$/, '+0000')}`,
    'MIME-Version: 1.0',
    ...Object.entries(m.headers)
      .filter(([name]) => FIELD_NAME.test(name) && !OWN_FIELDS.has(name.toLowerCase()))
      .map(([name, value]) => textHeader(name, value)),
  ];
  // An empty HTML part would be the alternative clients show: a blank message. Text alone, then.
  if (!m.html) {
    const single = [...head, part('text/plain', m.text)].join(CRLF);
    return Buffer.from(single.endsWith(CRLF) ? single : single + CRLF, 'utf8');
  }
  const boundary = `=_coaching_${createHash('sha256').update(m.key).digest('hex').slice(0, 24)}`;
  const body = [
    ...head,
    `Content-Type: multipart/alternative;${CRLF} boundary="${boundary}"`,
    '',
    `--${boundary}`,
    part('text/plain', m.text),
    `--${boundary}`,
    part('text/html', m.html),
    `--${boundary}--`,
    '',
  ];
  return Buffer.from(body.join(CRLF), 'utf8');
}
