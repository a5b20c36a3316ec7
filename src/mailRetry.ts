import type { Database } from './db/database';
import type { Logger } from './log';
import { isPermanentMailError, type MailMessage, type Mailer } from './mail/mailer';

/** After this many failed attempts a deferred e-mail is given up (recorded `failed`). */
export const MAX_MAIL_ATTEMPTS = 10;
/** Wait before attempt n + 1: 1, 2, 4 … minutes, at most 6 hours (ten attempts span about 8.5 hours). */
export const retryDelayMs = (attempts: number) => Math.min(2 ** (attempts - 1) * 60_000, 6 * 3_600_000);

/** Records a temporary failure: the message waits in `sent_emails` for its next attempt. */
export async function deferEmail(
  db: Database,
  eventId: string,
  recipient: string,
  attempts: number,
  now: Date,
  error: string,
  mail: MailMessage,
): Promise<void> {
  const giveUp = attempts >= MAX_MAIL_ATTEMPTS;
  await db.query(
    `UPDATE sent_emails SET status = $3, attempts = $4, next_attempt_at = $5, error = $6, message = $7::jsonb
     WHERE event_id = $1 AND recipient = $2`,
    [
      eventId,
      recipient,
      giveUp ? 'failed' : 'deferred',
      attempts,
      giveUp ? null : new Date(now.getTime() + retryDelayMs(attempts)).toISOString(),
      error.slice(0, 1000),
      JSON.stringify(mail),
    ],
  );
}

export interface MailRetry {
  /** Sends the deferred e-mails due at `now`; resolves to how many went out. */
  retryDue(now?: Date): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

/**
 * Sends deferred e-mails again when they are due. Each row is claimed (deferred -> sending) before it is
 * sent, so two instances never send one twice; the schedule lives in the table, so a restart loses none.
 */
export function createMailRetry(
  deps: { db: Database; mailer: Mailer; clock: () => Date; log: Logger },
  intervalMs = 30_000,
): MailRetry {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<number> | null = null;

  const retryOnce = async (now: Date): Promise<number> => {
    const due = await deps.db.query<{
      event_id: string;
      recipient: string;
      attempts: number;
      message: MailMessage;
    }>(
      `UPDATE sent_emails SET status = 'sending', claimed_at = now()
       WHERE (event_id, recipient) IN (
         SELECT event_id, recipient FROM sent_emails
         WHERE status = 'deferred' AND next_attempt_at <= $1 ORDER BY next_attempt_at LIMIT 50)
         AND status = 'deferred'
       RETURNING event_id, recipient, attempts, message`,
      [now.toISOString()],
    );
    let sent = 0;
    for (const row of due.rows) {
      let messageId: string;
      try {
        ({ messageId } = await deps.mailer.send(row.message));
      } catch (err) {
        const error = err instanceof Error ? err.message : String(err);
        if (isPermanentMailError(err)) {
          await deps.db.query(
            `UPDATE sent_emails SET status = 'failed', error = $3, next_attempt_at = NULL
             WHERE event_id = $1 AND recipient = $2`,
            [row.event_id, row.recipient, error.slice(0, 1000)],
          );
          deps.log.error('e-mail refused for good; not retried', { eventId: row.event_id, error });
          continue;
        }
        await deferEmail(deps.db, row.event_id, row.recipient, row.attempts + 1, now, error, row.message);
        deps.log.warn('e-mail deferred again', { eventId: row.event_id, attempts: row.attempts + 1, error });
        continue;
      }
      // Sent: recorded outside the try, so a failure to record never sends it a second time.
      await deps.db.query(
        `UPDATE sent_emails SET status = 'sent', message_id = $3, sent_at = now(), next_attempt_at = NULL
         WHERE event_id = $1 AND recipient = $2`,
        [row.event_id, row.recipient, messageId],
      );
      sent++;
    }
    return sent;
  };

  const retryDue = (now = deps.clock()) => {
    // One pass at a time: the timer and an on-demand call share it.
    running ??= retryOnce(now).finally(() => {
      running = null;
    });
    return running;
  };

  return {
    retryDue,
    start() {
      timer = setInterval(() => {
        retryDue().catch((err: unknown) =>
          deps.log.warn('e-mail retry pass failed', {
            error: err instanceof Error ? err.message : String(err),
          }),
        );
      }, intervalMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      await running?.catch(() => undefined);
    },
  };
}
