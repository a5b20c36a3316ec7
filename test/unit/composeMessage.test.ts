import { simpleParser } from 'mailparser';
import { ConfigError, loadConfig } from '../../src/config';
import { composeMessage, envelopeAddress, quotedPrintable } from '../../src/mail/compose';
import { messageIdOf } from '../../src/mail/mailer';

/** Composed, then read back by a real MIME parser (mailparser, as mail clients read it). */
const roundTrip = async (over: Partial<Parameters<typeof composeMessage>[0]> = {}) => {
  const input = {
    from: 'Coaching <no-reply@coaching.local>',
    to: 'anna@example.com',
    subject: 'New booking: Tennis basics',
    text: 'Hello Anna,\n\nA client booked Tennis basics.\n',
    html: '<p>Hello Anna,</p><p>A client booked Tennis basics.</p>',
    messageId: '<abc123@coaching.local>',
    headers: { 'X-Idempotency-Key': 'event-1/user-1', 'X-Coaching-Template': 'booking' },
    date: new Date('2026-12-01T08:00:00Z'),
    key: 'event-1/user-1',
    ...over,
  };
  const raw = composeMessage(input);
  return { raw: raw.toString('utf8'), parsed: await simpleParser(raw), input };
};

describe('composeMessage', () => {
  it('gives a multipart/alternative message a MIME parser reads back field for field', async () => {
    const { parsed, input } = await roundTrip();
    expect(parsed.subject).toBe(input.subject);
    expect(parsed.from?.value).toEqual([{ name: 'Coaching', address: 'no-reply@coaching.local' }]);
    expect(parsed.to && !Array.isArray(parsed.to) && parsed.to.value[0]?.address).toBe('anna@example.com');
    expect(parsed.messageId).toBe('<abc123@coaching.local>');
    expect(parsed.date?.toISOString()).toBe('2026-12-01T08:00:00.000Z');
    expect(parsed.text).toBe(input.text);
    expect(parsed.html).toBe(input.html);
    expect(parsed.headers.get('x-idempotency-key')).toBe('event-1/user-1');
    expect(parsed.headers.get('x-coaching-template')).toBe('booking');
    expect(parsed.headers.get('mime-version')).toBe('1.0');
  });

  it('writes CRLF line ends only, no line over 78 characters, and the same bytes for the same input', async () => {
    const long = 'word '.repeat(60) + 'x'.repeat(200);
    const { raw, parsed } = await roundTrip({
      subject: long.slice(0, 290),
      text: long,
      html: `<p>${long}</p>`,
    });
    expect(parsed.subject).toBe(long.slice(0, 290).trim());
    expect(raw).not.toMatch(/[^\r]\n/);
    expect(raw).not.toMatch(/\r(?!\n)/);
    for (const line of raw.split('\r\n')) expect(line.length).toBeLessThanOrEqual(78);
    const encoded = await roundTrip({ subject: 'ü'.repeat(100), from: `${'Ü'.repeat(60)} <a@b.example>` });
    expect(encoded.parsed.subject).toBe('ü'.repeat(100));
    expect(encoded.parsed.from?.value[0]?.name).toBe('Ü'.repeat(60));
    for (const line of encoded.raw.split('\r\n')) {
      expect(line.length).toBeLessThanOrEqual(78);
      // RFC 2047: an encoded word of at most 75 characters, on a line of at most 76.
      for (const word of line.match(/=\?UTF-8\?B\?[^?]*\?=/g) ?? [])
        expect(word.length).toBeLessThanOrEqual(75);
      if (line.includes('=?UTF-8?B?')) expect(line.length).toBeLessThanOrEqual(76);
    }
    expect((await roundTrip({ subject: 'x' })).raw).toBe((await roundTrip({ subject: 'x' })).raw);
  });

  it('keeps non-ASCII subjects, names and bodies exactly (encoded words, quoted-printable)', async () => {
    const subject = 'Buchung: Übungsstunde für Jürgen 🎾 — 日本語のレッスン '.repeat(3).trim();
    const text = 'Grüße, Zoë!\n\n€ 30 = dreißig; tab\tend \nline with trailing space \n';
    const { parsed, raw } = await roundTrip({
      from: 'Coaching Müller <no-reply@coaching.local>',
      subject,
      text,
      html: '<p>Grüße 🎾</p>',
    });
    expect(parsed.subject).toBe(subject);
    expect(parsed.from?.value[0]?.name).toBe('Coaching Müller');
    expect(parsed.text).toBe(text);
    expect(parsed.html).toBe('<p>Grüße 🎾</p>');
    expect([...raw].every((c) => c.charCodeAt(0) < 128)).toBe(true); // 7-bit clean with ASCII addresses
  });

  it('never lets a value start a header of its own (CR/LF in subject, headers or addresses)', async () => {
    const { parsed } = await roundTrip({
      subject: 'Hi\r\nBcc: victim@example.com',
      headers: {
        'X-Coaching-Event': 'x\nBcc: third@example.com',
        'Bad Name:': 'dropped',
        Subject: 'a second subject',
        bcc: 'fourth@example.com',
      },
    });
    expect(parsed.headers.has('bcc')).toBe(false);
    expect(parsed.subject).toBe('Hi Bcc: victim@example.com');
    expect([...parsed.headers.keys()].some((k) => k.includes('bad'))).toBe(false);
    expect((await roundTrip()).raw.match(/^Subject:/gm)).toHaveLength(1);
  });

  it('refuses, as a permanent failure (553), a recipient that is not one mailbox', async () => {
    for (const to of [
      'anna@example.com\r\nBcc: other@example.com',
      'a,b@c.de',
      'anna@example.com; bob@example.com',
      'no-at-sign',
      'Anna <anna@example.com>, bob@example.com',
      'x@evil.com\uff0cy.org', // a fullwidth comma, which IDNA turns into ","
      'x@a\uff1bb.com',
      'a\u0001b@x.com',
    ]) {
      await expect(roundTrip({ to })).rejects.toMatchObject({ responseCode: 553 });
      expect(() => envelopeAddress(to)).toThrow();
    }
  });

  it('keeps a long machine-readable header value whole and readable', async () => {
    const key = `${'a'.repeat(36)}/${'b'.repeat(36)}`;
    const { raw, parsed } = await roundTrip({ headers: { 'X-Idempotency-Key': key } });
    expect(raw).toContain(`\r\nX-Idempotency-Key: ${key}\r\n`);
    expect(parsed.headers.get('x-idempotency-key')).toBe(key);
  });

  it('keeps a quoted display name as it reads, quotes and backslashes included', async () => {
    const { parsed } = await roundTrip({ from: '"A \\"B\\" C\\\\D" <x@y.example>' });
    expect(parsed.from?.value).toEqual([{ name: 'A "B" C\\D', address: 'x@y.example' }]);
    const plain = await roundTrip({ from: 'Coaching, Inc. <x@y.example>' });
    expect(plain.parsed.from?.value).toEqual([{ name: 'Coaching, Inc.', address: 'x@y.example' }]);
  });

  it('sends text alone when the HTML is empty (an empty alternative would show a blank message)', async () => {
    const { parsed, raw } = await roundTrip({ html: '' });
    expect(raw).not.toMatch(/multipart/);
    expect(parsed.html).toBe(false);
  });

  it('folds long ASCII subjects without blank lines and with the value intact, runs of spaces included', async () => {
    for (const subject of [
      `${'x'.repeat(75)} `,
      `New booking: Tennis${' '.repeat(1200)}x`,
      `${'ab '.repeat(40)}${'y'.repeat(100)} z`,
      `${'x'.repeat(68)} \t`,
      `Tennis basics\r\n\t`,
    ]) {
      const { raw, parsed } = await roundTrip({ subject });
      const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
      for (const line of head.split('\r\n')) {
        expect(line.length).toBeLessThanOrEqual(998);
        expect(line.trim()).not.toBe('');
      }
      expect(parsed.subject?.replace(/ +/g, ' ').trim()).toBe(subject.replace(/ +/g, ' ').trim());
    }
  });

  it('a boundary-like line in the body stays body text', async () => {
    const { parsed } = await roundTrip({ text: '--=_coaching_x\n=_coaching\n.\n..dots\n' });
    expect(parsed.text).toBe('--=_coaching_x\n=_coaching\n.\n..dots\n');
  });

  it('a message without HTML is a single text/plain part', async () => {
    const { parsed, raw } = await roundTrip({ html: undefined });
    expect(raw).toMatch(/^Content-Type: text\/plain; charset=utf-8\r$/m);
    expect(raw).not.toMatch(/multipart/);
    expect(parsed.text).toBe('Hello Anna,\n\nA client booked Tennis basics.\n');
    expect(parsed.html).toBe(false);
  });

  it('sends internationalised domains in ASCII (IDNA), in the header and the envelope', async () => {
    const { raw } = await roundTrip({ to: 'jürgen@bücher.example' });
    expect(raw).toMatch(/^To: jürgen@xn--bcher-kva\.example\r$/m);
    expect(envelopeAddress('Coaching <no-reply@coaching.local>')).toBe('no-reply@coaching.local');
    expect(envelopeAddress('anna@bücher.example')).toBe('anna@xn--bcher-kva.example');
    expect(messageIdOf('k', 'Coaching <no-reply@bücher.example>')).toMatch(/@xn--bcher-kva\.example>$/);
    expect(messageIdOf('k', '"Team@Coaching" <x@y.example>')).toMatch(/^<[0-9a-f]{40}@y\.example>$/);
  });
});

describe('MAIL_FROM', () => {
  it('is checked at start: one sender mailbox, or the service does not start', () => {
    expect(loadConfig({ MAIL_FROM: 'Coaching <hello@coaching.example>' }).mailFrom).toBe(
      'Coaching <hello@coaching.example>',
    );
    expect(loadConfig({}).mailFrom).toBe('Coaching <no-reply@coaching.local>');
    for (const bad of ['noreply', 'a@b.example, c@d.example', 'Coaching <>'])
      expect(() => loadConfig({ MAIL_FROM: bad })).toThrow(ConfigError);
  });
});

describe('quotedPrintable', () => {
  it('encodes "=", non-ASCII and a line-final space, and breaks long lines softly without splitting =XX', () => {
    expect(quotedPrintable('a=b')).toBe('a=3Db');
    expect(quotedPrintable('end ')).toBe('end=20');
    expect(quotedPrintable('ä')).toBe('=C3=A4');
    const lines = quotedPrintable('é'.repeat(100)).split('\r\n');
    for (const line of lines) {
      expect(line.length).toBeLessThanOrEqual(76);
      expect(line).toMatch(/^(=[0-9A-F]{2})*=?$/);
    }
  });

  it('breaks after a space where the line has one: words, dates and codes stay whole in the raw text', async () => {
    for (let shift = 0; shift < 80; shift++) {
      const text = `${'a'.repeat(shift)} Your booking of Tennis basics on 2026-12-02 08:00 (Europe/Berlin), code 481516 is received and waits.`;
      const encoded = quotedPrintable(text);
      for (const word of ['2026-12-02', '08:00', '481516', '(Europe/Berlin),'])
        expect(encoded).toContain(word);
      for (const line of encoded.split('\r\n')) expect(line.length).toBeLessThanOrEqual(76);
      const { parsed } = await roundTrip({ text, html: undefined });
      expect(parsed.text).toBe(`${text}\n`);
    }
  });
});
