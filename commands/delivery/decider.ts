import { left, right } from 'fp-ts/Either';
import { assertNever, type Decider } from '../../src/decider';
import type { MailMessage } from '../../src/mail/mailer';
import type { DeliveryEvent } from './events';

/** After this many attempts ended by temporary refusals, a delivery is given up (`failed`). */
export const MAX_MAIL_ATTEMPTS = 10;
/** Wait before attempt n + 1: 1, 2, 4 … minutes, at most 6 hours (ten attempts span about 8.5 hours). */
export const retryDelayMs = (attempts: number) => Math.min(2 ** (attempts - 1) * 60_000, 6 * 3_600_000);

export type DeliveryState =
  | { status: 'none' }
  | {
      status: 'sending' | 'sent' | 'deferred' | 'failed';
      causeEventId: string;
      recipient: string;
      message: MailMessage;
      template: string;
      messageId: string;
      /** Attempts made so far (a takeover repeats the attempt it took over). */
      attempt: number;
      leaseUntil: string | null;
      nextAttemptAt: string | null;
    };

export type DeliveryCommand =
  | {
      type: 'Claim';
      /** What the first claim records (the process manager knows it); later claims repeat the ledger's. */
      first?: {
        causeEventId: string;
        recipient: string;
        message: MailMessage;
        template: string;
        messageId: string;
      };
      now: string;
      leaseMs: number;
      by: string;
    }
  | { type: 'RecordSent'; messageId: string; now: string }
  | { type: 'RecordRefusal'; error: string; permanent: boolean; now: string }
  | { type: 'Requeue'; now: string; by: string };

const notClaimable = (why: string) => left({ code: 'delivery_not_claimable', message: why });

const at = (iso: string) => Date.parse(iso);

/** The ledger of one delivery: who may send it when, and what happened. Pure; the clock comes in the command. */
export const deliveryDecider: Decider<DeliveryCommand, DeliveryEvent, DeliveryState> = {
  initialState: () => ({ status: 'none' }),
  evolve(state, event) {
    switch (event.type) {
      case 'DeliveryClaimed': {
        const base = state.status === 'none' ? null : state;
        const message = base?.message ?? event.data.message;
        if (!message) return state; // a takeover claim of a stream never claimed: cannot happen
        return {
          status: 'sending',
          causeEventId: event.data.causeEventId,
          recipient: event.data.recipient,
          message,
          template: event.data.template,
          messageId: event.data.messageId,
          attempt: event.data.attempt,
          leaseUntil: event.data.leaseUntil,
          nextAttemptAt: null,
        };
      }
      case 'DeliverySent':
        return state.status === 'none' ? state : { ...state, status: 'sent', leaseUntil: null };
      case 'DeliveryDeferred':
        return state.status === 'none'
          ? state
          : { ...state, status: 'deferred', leaseUntil: null, nextAttemptAt: event.data.nextAttemptAt };
      case 'DeliveryFailed':
        return state.status === 'none'
          ? state
          : { ...state, status: 'failed', leaseUntil: null, nextAttemptAt: null };
      case 'DeliveryRequeued':
        return state.status === 'none'
          ? state
          : { ...state, status: 'deferred', attempt: 0, nextAttemptAt: event.data.at };
      default:
        return assertNever(event);
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'Claim': {
        const claim = (
          facts: { causeEventId: string; recipient: string; template: string; messageId: string },
          attempt: number,
          takeover: boolean,
          message?: MailMessage,
        ) =>
          right<never, DeliveryEvent[]>([
            {
              type: 'DeliveryClaimed',
              data: {
                causeEventId: facts.causeEventId,
                recipient: facts.recipient,
                ...(message ? { message } : {}),
                template: facts.template,
                messageId: facts.messageId,
                attempt,
                claimedAt: command.now,
                leaseUntil: new Date(at(command.now) + command.leaseMs).toISOString(),
                by: command.by,
                ...(takeover ? { takeover: true } : {}),
              },
            },
          ]);
        switch (state.status) {
          case 'none':
            if (!command.first) return notClaimable('the delivery was never claimed; nothing to send');
            return claim(command.first, 1, false, command.first.message);
          case 'sending':
            // The holder may still be sending; only a lease that ran out is taken over (see docs: the
            // window in which this sends a message twice, with the same Message-ID).
            return state.leaseUntil && at(state.leaseUntil) <= at(command.now)
              ? claim(state, state.attempt, true)
              : notClaimable('another sender holds the claim');
          case 'deferred':
            return state.nextAttemptAt && at(state.nextAttemptAt) <= at(command.now)
              ? claim(state, state.attempt + 1, false)
              : notClaimable('the next attempt is not due');
          case 'sent':
            return notClaimable('already sent');
          case 'failed':
            return notClaimable('failed for good');
          default:
            return assertNever(state);
        }
      }
      case 'RecordSent':
        if (state.status === 'none') return notClaimable('the delivery was never claimed');
        if (state.status === 'sent') return right([]);
        return right([
          {
            type: 'DeliverySent',
            data: { messageId: command.messageId, sentAt: command.now, attempt: state.attempt },
          },
        ]);
      case 'RecordRefusal': {
        if (state.status === 'none') return notClaimable('the delivery was never claimed');
        if (state.status === 'sent' || state.status === 'failed') return right([]);
        const error = command.error.slice(0, 1000);
        if (command.permanent || state.attempt >= MAX_MAIL_ATTEMPTS)
          return right([
            { type: 'DeliveryFailed', data: { attempt: state.attempt, error, at: command.now } },
          ]);
        return right([
          {
            type: 'DeliveryDeferred',
            data: {
              attempt: state.attempt,
              error,
              at: command.now,
              nextAttemptAt: new Date(at(command.now) + retryDelayMs(state.attempt)).toISOString(),
            },
          },
        ]);
      }
      case 'Requeue':
        if (state.status !== 'failed')
          return left({ code: 'delivery_not_failed', message: 'only a failed delivery can be retried' });
        return right([{ type: 'DeliveryRequeued', data: { at: command.now, by: command.by } }]);
      default:
        return assertNever(command);
    }
  },
};
