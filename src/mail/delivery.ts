import os from 'node:os';
import {
  MAX_MAIL_ATTEMPTS,
  deliveryDecider,
  type DeliveryCommand,
  type DeliveryState,
} from '../../commands/delivery/decider';
import { deliveryStream } from '../../commands/delivery/events';
import { ConcurrencyConflictError, handleCommand } from '../commandHandler';
import { forget } from '../foldedStates';
import { limiter } from '../limiter';
import type { EventMetadata, EventStore } from '../eventstore/types';
import type { Logger } from '../log';
import { isPermanentMailError, type MailMessage, type Mailer } from './mailer';

/**
 * Sending slots per mailer (its `concurrency`), shared by everything that delivers through it. A delivery is
 * claimed only once it holds one, so its lease runs while it is sent, never while it waits for a pooled
 * connection: the e-mail process reacts to up to 32 events at once, and with 32 claims queued behind 3
 * SMTP connections a slow server kept the last of them waiting past their lease, when another sender could
 * take them over and send a copy (seen in CI with a short test lease).
 */
const slots = new WeakMap<Mailer, ReturnType<typeof limiter>>();
const slotsOf = (mailer: Mailer) => {
  let s = slots.get(mailer);
  if (!s) slots.set(mailer, (s = limiter(mailer.concurrency)));
  return s;
};

/** Who claims, for operators reading the ledger. */
const SENDER = `${os.hostname()}:${process.pid}`;

interface Claimed {
  stream: string;
  message: MailMessage;
  attempt: number;
}

export interface DeliveryDeps {
  store: EventStore;
  mailer: Mailer;
  log: Logger;
  clock: () => Date;
  /** How long a claim is exclusive; a claim older than this is taken over (MAIL_LEASE_MS). */
  leaseMs: number;
}

/**
 * Sending through the delivery ledger (commands/delivery): claim the delivery's stream (exclusive by
 * optimistic concurrency), send, record the outcome. Used by the e-mail process manager for new e-mails and
 * by the retry job for deferred ones and for claims whose sender died (lease over).
 *
 * The one window in which a message can go out twice: the SMTP server accepted it, and the sender died (or
 * lost the event store) before `DeliverySent` was stored. After the lease another sender sends it again, with
 * the same Message-ID, so the receiving side can drop the copy.
 */
export function deliveries(deps: DeliveryDeps) {
  const { store, mailer, log, clock } = deps;

  const run = async (
    stream: string,
    command: DeliveryCommand,
    metadata: EventMetadata,
    first?: 'new' | 'kept',
  ) => {
    try {
      return await handleCommand(store, stream, deliveryDecider, command, metadata, 3, undefined, first);
    } catch (err) {
      // Another sender wrote the stream each time we tried: it has the delivery in hand.
      if (err instanceof ConcurrencyConflictError) return null;
      throw err;
    }
  };

  /** Claims the delivery (first claim, due retry, or takeover of a stale claim); null when not ours to send. */
  const claim = async (
    stream: string,
    first: Extract<DeliveryCommand, { type: 'Claim' }>['first'],
    metadata: EventMetadata,
  ): Promise<Claimed | null> => {
    const outcome = await run(
      stream,
      { type: 'Claim', first, now: clock().toISOString(), leaseMs: deps.leaseMs, by: SENDER },
      metadata,
      // A first claim is of a delivery nobody has started: decided on the empty stream without reading it
      // (if someone has, the append refuses and the stream is read).
      first ? 'new' : undefined,
    );
    if (!outcome?.ok) return null;
    const state = outcome.state as Exclude<DeliveryState, { status: 'none' }>;
    return { stream, message: state.message, attempt: state.attempt };
  };

  /** Sends a claimed delivery and records what happened. A failure to record a sent message is logged only. */
  const send = async (c: Claimed, metadata: EventMetadata): Promise<'sent' | 'deferred' | 'failed'> => {
    let messageId: string;
    try {
      // The ledger gives up after this many tries: then a temporary refusal fails the e-mail as well.
      ({ messageId } = await mailer.send(c.message, { last: c.attempt >= MAX_MAIL_ATTEMPTS }));
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      const permanent = isPermanentMailError(err);
      const recorded = await run(
        c.stream,
        { type: 'RecordRefusal', error, permanent, now: clock().toISOString() },
        metadata,
        'kept', // the claim just made, unless another sender took it over meanwhile
      );
      forget(store, deliveryDecider, c.stream);
      const failed = permanent || (recorded?.ok && recorded.events[0]?.type === 'DeliveryFailed');
      (failed ? log.error : log.warn)(failed ? 'e-mail refused for good' : 'e-mail deferred', {
        stream: c.stream,
        attempt: c.attempt,
        error,
      });
      return failed ? 'failed' : 'deferred';
    }
    // Outside the try: the server took the message, so a failure to record it must never send it again
    // at once. If recording fails for longer than half the lease (the event store is away), the lease runs
    // out and the message is sent once more, with the same Message-ID (the documented window). One append,
    // without reading the stream first: the shorter the time between the server's 250 and this record, the
    // rarer that window is hit.
    const sent = {
      type: 'DeliverySent',
      data: { messageId, sentAt: clock().toISOString(), attempt: c.attempt },
      metadata,
    };
    // Real time, not the injected clock: how long the claim is still surely ours.
    const giveUpAt = performance.now() + deps.leaseMs / 2;
    for (let pause = 50; ; pause = Math.min(pause * 2, 1000)) {
      try {
        await store.append(c.stream, [sent], { expectedRevision: 'any' });
        break;
      } catch (err) {
        // A restart of the event store's database, say: this sender still knows the message went out.
        if (performance.now() + pause > giveUpAt) throw err;
        log.warn('e-mail sent but not recorded yet; trying again', {
          stream: c.stream,
          error: err instanceof Error ? err.message : String(err),
        });
        await new Promise((r) => setTimeout(r, pause));
      }
    }
    // Done: its fold would only take room from streams that are decided on again (inboxes, calendars).
    forget(store, deliveryDecider, c.stream);
    return 'sent';
  };

  /**
   * Claims (a first claim with `first`, else a due retry or a takeover) and sends, inside one of the mailer's
   * sending slots; 'skipped' when the ledger says it is not ours to send.
   */
  const claimAndSend = (
    stream: string,
    first: Extract<DeliveryCommand, { type: 'Claim' }>['first'],
    metadata: EventMetadata,
  ): Promise<'sent' | 'deferred' | 'failed' | 'skipped'> =>
    slotsOf(mailer)(async () => {
      const claimed = await claim(stream, first, metadata);
      return claimed ? send(claimed, metadata) : 'skipped';
    });

  return {
    /** The delivery of `message` caused by `causeEventId` to `recipient`: claimed and sent unless done already. */
    deliver: (
      causeEventId: string,
      recipient: string,
      message: MailMessage,
      template: string,
      metadata: EventMetadata,
    ) =>
      claimAndSend(
        deliveryStream(causeEventId, recipient),
        { causeEventId, recipient, message, template, messageId: mailer.messageIdFor(message.key) },
        metadata,
      ),
    /** A due retry or the takeover of a claim whose lease ran out. */
    retry: (stream: string, metadata: EventMetadata) => claimAndSend(stream, undefined, metadata),
    /** An operator's "try again" for a failed delivery, recorded with the operator's request metadata. */
    async requeue(stream: string, by: string, metadata: EventMetadata): Promise<boolean> {
      const outcome = await run(stream, { type: 'Requeue', now: clock().toISOString(), by }, metadata);
      return outcome?.ok === true;
    },
  };
}

export type Deliveries = ReturnType<typeof deliveries>;
