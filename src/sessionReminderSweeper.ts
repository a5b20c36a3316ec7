import { handleCommand, readState } from './commandHandler';
import type { Database } from './db/database';
import type { EventStore } from './eventstore/types';
import type { Logger } from './log';
import { LEASES, type Leases } from './leases';
import { periodicSweep, type PeriodicSweep, type SweepGuards } from './periodicSweep';
import { SYSTEM_ACTOR } from './paymentExpirySweeper';
import { bookingStream } from '../commands/booking/events';
import { inbox } from '../commands/notifications/decider';
import { notificationStream } from '../commands/notifications/events';
import {
  SESSION_REMINDER,
  decideReminder,
  reminderFold,
  reminderMessage,
} from '../commands/notifications/reminders';
import { uuidFrom } from '../commands/notifications/sessionNotices';

export type SessionReminderSweeper = PeriodicSweep;

/**
 * Reminds the client and the coach of a session the lead time (`SESSION_REMINDER_LEAD_MS`) before its start.
 * The starts live in the `session_reminder_due` read model, not in timers, so a restart loses nothing: the
 * sweeper runs at start and then every `intervalMs`, on the instance holding its lease. Each due row is
 * decided on the booking's own stream (`decideReminder`), so a read model behind a cancel or a move reminds
 * no one of a time that is gone. The notification is keyed by the session and its start (its cause), and
 * each inbox ignores a cause it has seen: a second sweep, a sweeper that died before removing the row, a
 * rebuild that put the row back or a second instance reminds no one twice; a moved session gets a new key.
 */
export function createSessionReminderSweeper(
  deps: { db: Database; store: EventStore; clock: () => Date; log: Logger; leases?: Leases },
  leadMs: number,
  intervalMs = 5000,
  batchSize = 100,
): SessionReminderSweeper {
  /** Reminds both parties of one session if it is due; whether a notification was appended. */
  const remindOne = async (row: { id: string; groupId: string; at: string }): Promise<boolean> => {
    const fold = await readState(deps.store, bookingStream(row.groupId), reminderFold);
    const decision = decideReminder(fold, row.id, deps.clock().toISOString(), leadMs);
    if (decision.kind === 'wait') return false;
    let appended = false;
    if (decision.kind === 'remind') {
      // One inbox per recipient: side by side.
      const outcomes = await Promise.all(
        decision.notices.map((n) =>
          handleCommand(
            deps.store,
            notificationStream(n.userId),
            inbox,
            {
              type: 'CreateNotification',
              notification: {
                notificationId: uuidFrom('notification', n.cause, n.userId),
                userId: n.userId,
                type: SESSION_REMINDER,
                contentType: 'session',
                contentId: n.sessionId,
                message: reminderMessage(fold, n),
                causationEventId: n.cause,
                createdAt: deps.clock().toISOString(),
              },
            },
            { actor: SYSTEM_ACTOR, correlationId: `reminder-${n.cause}` },
          ),
        ),
      );
      appended = outcomes.some((o) => o.ok && o.events.length > 0);
    }
    // Reminded (or never to be): the row goes, unless a move meanwhile set another start (its row stays).
    await deps.db.query('DELETE FROM session_reminder_due WHERE session_id = $1 AND starts_at = $2', [
      row.id,
      row.at,
    ]);
    return appended;
  };

  const sweepOnce = async ({ owner, stopped }: SweepGuards): Promise<number> => {
    if (!owner() || leadMs <= 0) return 0;
    // Every session starting within the lead time; the decision tells the due ones from the rest.
    const horizon = new Date(deps.clock().getTime() + leadMs).toISOString();
    let reminded = 0;
    // A cursor on the start: rows left waiting (a read model behind a move) hold no later row back.
    let after: { at: string; id: string } | null = null;
    for (;;) {
      const due: { rows: { id: string; groupId: string; at: string }[] } = await deps.db.query<{
        id: string;
        groupId: string;
        at: string;
      }>(
        `SELECT session_id AS id, group_id AS "groupId", starts_at::text AS at FROM session_reminder_due
         WHERE starts_at <= $1
           AND ($3::timestamptz IS NULL OR (starts_at, session_id) > ($3::timestamptz, $4::uuid))
         ORDER BY starts_at, session_id LIMIT $2`,
        [horizon, batchSize, after?.at ?? null, after?.id ?? null],
      );
      for (const row of due.rows) {
        if (!owner() || stopped()) return reminded;
        try {
          if (await remindOne(row)) reminded++;
        } catch (err) {
          deps.log.error('session reminder failed', { sessionId: row.id, error: String(err) });
        }
      }
      const last = due.rows[due.rows.length - 1];
      if (due.rows.length < batchSize || !last || stopped()) break;
      after = { at: last.at, id: last.id };
    }
    return reminded;
  };

  const periodic = periodicSweep(
    deps,
    { name: 'session reminder', lease: LEASES.sessionReminders, intervalMs },
    sweepOnce,
  );
  // SESSION_REMINDER_LEAD_MS=0: reminders are off (an on-demand sweep finds nothing either).
  return { ...periodic, start: () => (leadMs > 0 ? periodic.start() : undefined) };
}
