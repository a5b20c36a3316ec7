import type { EmailFacts } from './events';

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * Local slot labels as people read them, with their zone: `2026-12-02 10:00, 2026-12-03 10:00 (Europe/Berlin)`
 * (`''` for none). The e-mails and the in-app notifications name a session's time with it, alike.
 */
export const namedTimes = (slots: readonly string[] | undefined, zone: string | undefined) =>
  slots?.length ? `${slots.map((s) => s.replace('T', ' ').slice(0, 16)).join(', ')} (${zone ?? 'UTC'})` : '';

const when = (f: EmailFacts) => namedTimes(f.slots, f.timezone);

/** The reasons the system gives when it cancels (projections/bookingProcess.ts), in the reader's words. */
const SYSTEM_REASONS: Readonly<Record<string, string>> = {
  payment_canceled: 'the payment was canceled or not made in time',
  payment_deleted: 'the payment was withdrawn',
  payment_refund: 'the payment was refunded',
};
// Own keys only: a person's reason such as "constructor" must not find what every object inherits. The in-app
// notifications say it in the same words.
export const reasonLine = (reason: string) =>
  `Reason: ${Object.hasOwn(SYSTEM_REASONS, reason) ? SYSTEM_REASONS[reason] : reason}`;

/**
 * A name as one line: line breaks and other control characters (which profiles and service names may hold)
 * become one space, so a name cannot start lines of its own in the text part (a forged "Reason: …") nor
 * read differently there than in the HTML part.
 */
// eslint-disable-next-line no-control-regex -- control characters are what it removes
const oneLine = (s: string) => s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').trim();

/** Subject and body of each template; plain text first, the HTML part says the same. */
export function renderEmail(f: EmailFacts): RenderedEmail {
  // A reason of blanks only (a decline's or cancellation's may be) says nothing: no "Reason:" line, as for "".
  const reason = f.reason?.trim() ? f.reason : undefined;
  const service = (f.serviceName && oneLine(f.serviceName)) || 'your session';
  const at = when(f);
  const lines: string[] = [`Hello ${oneLine(f.recipientName ?? '') || 'there'},`, ''];
  let subject: string;
  switch (f.template) {
    case 'verification':
      subject = 'Verify your e-mail address';
      lines.push('Please confirm your e-mail address.');
      if (f.code) lines.push(`Your verification code: ${f.code}`);
      if (f.link) lines.push(`${f.code ? 'Or open' : 'Open'}: ${f.link}`);
      break;
    case 'booking':
      subject = f.role === 'coach' ? `New booking: ${service}` : `Booking received: ${service}`;
      lines.push(
        f.role === 'coach'
          ? `A client booked ${service}${at ? ` on ${at}` : ''}. Please approve or decline it.`
          : `Your booking of ${service}${at ? ` on ${at}` : ''} is received and waits for the coach.`,
      );
      break;
    // The private endpoints (20 to 23) may mail either party: each is told in its own words.
    case 'approve':
      subject = `Session approved: ${service}`;
      lines.push(`${f.role === 'coach' ? 'You' : 'Your coach'} approved ${service}${at ? ` on ${at}` : ''}.`);
      break;
    case 'decline':
      subject = `Session declined: ${service}`;
      lines.push(`${f.role === 'coach' ? 'You' : 'Your coach'} declined ${service}${at ? ` on ${at}` : ''}.`);
      if (reason) lines.push(reasonLine(reason));
      break;
    case 'cancel':
      subject = `Session canceled: ${service}`;
      lines.push(`${service}${at ? ` on ${at}` : ''} was canceled${f.by ? ` by the ${f.by}` : ''}.`);
      if (reason) lines.push(reasonLine(reason));
      break;
    case 'dispute':
      subject = `Session disputed: ${service}`;
      lines.push(
        f.role === 'client'
          ? `Your dispute of ${service}${at ? ` on ${at}` : ''} is received.`
          : `Your client disputed ${service}${at ? ` on ${at}` : ''}.`,
      );
      if (reason) lines.push(reasonLine(reason));
      break;
    case 'reschedule': {
      const was = f.previousSlot ? `${f.previousSlot.replace('T', ' ').slice(0, 16)}` : '';
      subject = `Session moved: ${service}`;
      lines.push(
        `${service}${was ? ` on ${was}` : ''} was moved${f.by ? ` by the ${f.by}` : ''}${at ? ` to ${at}` : ''}.`,
      );
      if (f.role === 'coach' && f.by === 'client') lines.push('Please approve or decline the new time.');
      break;
    }
  }
  const text = lines.join('\n') + '\n';
  const html = `<!doctype html><html><body>${lines
    .filter((l) => l)
    .map((l) => `<p>${escapeHtml(l)}</p>`)
    .join('')}</body></html>`;
  return { subject, text, html };
}
