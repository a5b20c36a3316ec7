import type { Queryable } from '../db/database';

/**
 * The `email_deliveries` read model (projections/emailDeliveries.ts) as the admin endpoints show it. For
 * display and lookups only: every decision to send is taken on the delivery's ledger stream.
 */
export interface DeliveryRow {
  stream: string;
  recipient: string;
  address: string;
  subject: string;
  template: string;
  status: 'sending' | 'sent' | 'deferred' | 'failed';
  attempts: number;
  message_id: string;
  error: string | null;
  next_attempt_at: Date | string | null;
  created_at: Date | string;
  sent_at: Date | string | null;
  updated_at: Date | string;
}
const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
export const deliveryOut = (r: DeliveryRow) => ({
  id: r.stream,
  recipient: r.recipient,
  to: r.address,
  subject: r.subject,
  template: r.template,
  status: r.status,
  attempts: r.attempts,
  messageId: r.message_id,
  error: r.error,
  nextAttemptAt: iso(r.next_attempt_at),
  createdAt: iso(r.created_at)!,
  sentAt: iso(r.sent_at),
  updatedAt: iso(r.updated_at)!,
});
export type EmailDeliveryOut = ReturnType<typeof deliveryOut>;
export const DELIVERY_COLUMNS = `stream, recipient, address, subject, template, status, attempts, message_id, error,
  next_attempt_at, created_at, sent_at, updated_at`;

/** One e-mail delivery (the `email_deliveries` read model), or null. */
export async function emailDeliveryById(db: Queryable, id: string): Promise<EmailDeliveryOut | null> {
  const res = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM email_deliveries WHERE stream = $1`,
    [id],
  );
  return res.rows[0] ? deliveryOut(res.rows[0]) : null;
}

/** The most e-mails one notification's view shows (a cause mails each recipient once, see below). */
export const CAUSE_EMAILS_SHOWN = 20;

/**
 * The e-mail deliveries one event caused to one user (by their index, migration 113), oldest first: those of
 * the notification the same event made for that user. The ledger claims one delivery per (cause, recipient),
 * so there is one at most; the bound only keeps the answer small should that ever change.
 */
export async function emailDeliveriesOfCause(
  db: Queryable,
  causeEventId: string,
  recipient: string,
): Promise<EmailDeliveryOut[]> {
  const res = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM email_deliveries WHERE cause_event_id = $1 AND recipient = $2
      ORDER BY created_at, stream LIMIT ${CAUSE_EMAILS_SHOWN}`,
    [causeEventId, recipient],
  );
  return res.rows.map(deliveryOut);
}
