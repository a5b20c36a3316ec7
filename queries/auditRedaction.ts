import type { DeliveryClaimed } from '../commands/delivery/events';
import type { EmailRequested } from '../commands/email/events';
import type { PaymentStatusChanged } from '../commands/payments/events';
import type { NotificationChannelRegistered } from '../commands/notifications/events';

/** What an auditor sees in place of a secret's value. */
export const REDACTED = '[redacted]';

const hide = <T extends object, K extends keyof T>(o: T, keys: K[]): T => {
  const present = keys.filter((k) => o[k] !== undefined);
  return present.length ? { ...o, ...Object.fromEntries(present.map((k) => [k, REDACTED])) } : o;
};

/**
 * Event data as auditors see it. Audits show that a secret was set or changed (its field is kept, with the
 * event's time and actor) but never its value, which would let the reader act as its owner: a payment's
 * `clientSecret` and `checkout` (they drive the payer's checkout; the owner's view shows them to the
 * payment's client only), an e-mail verification's `code` and `link`, the text of a verification e-mail
 * as rendered for sending, and the address of a webhook or push channel. Every audit answer (stream, payment and session audits, correlation chains, the
 * export) passes events through this before showing or folding them, so folded states are redacted alike.
 */
export function redactEventData(type: string, data: unknown): unknown {
  if (!data || typeof data !== 'object') return data;
  switch (type) {
    case 'PaymentStatusChanged':
      return hide(data as PaymentStatusChanged['data'], ['clientSecret', 'checkout']);
    case 'EmailRequested': {
      const d = data as EmailRequested['data'];
      return d.facts ? { ...d, facts: hide(d.facts, ['code', 'link']) } : d;
    }
    case 'NotificationChannelRegistered': {
      // A webhook URL is often a capability (a chat hook's path is its key), a push token addresses the
      // user's device: shown as set, never as written. An e-mail channel is a mailbox and stays.
      const d = data as NotificationChannelRegistered['data'];
      return d.type === 'email' ? d : hide(d, ['address']);
    }
    case 'DeliveryClaimed': {
      const d = data as DeliveryClaimed['data'];
      return d.template === 'verification' && d.message
        ? { ...d, message: hide(d.message, ['text', 'html']) }
        : d;
    }
    default:
      return data;
  }
}

/** The same event with its data redacted (see `redactEventData`). */
export const redacted = <E extends { type: string; data: unknown }>(e: E): E => {
  const data = redactEventData(e.type, e.data);
  return data === e.data ? e : { ...e, data };
};
