import type { Queryable } from '../db/database';
import type { UserTotals } from '../resources/userProfile';

/** Statuses in which a payment's money has reached us and stays (a refund takes it back out). */
const RECEIVED = ['received', 'delivered'];

/**
 * `totalPayment` of UserProfileOut, from the `payments` read model: the sum of the payments the user took
 * part in (paid as a client, earned as a coach) that are received or delivered, in the currency of the
 * user's latest such payment (amounts in other currencies are not converted, so they are left out),
 * rounded to a whole unit (the interface document types it as an integer). 0 and '' when there is none.
 * A free booking's payment (price 0, created received) took no money: it neither counts nor names the
 * currency, or a free session priced in another currency would hide every payment made.
 */
export async function userPaymentTotal(
  db: Queryable,
  userId: string,
): Promise<Pick<UserTotals, 'totalPayment' | 'totalPaymentCurrency'>> {
  const res = await db.query<{ currency: string; total: string }>(
    `WITH mine AS (
       SELECT price, currency, created_at, seq FROM payments
       WHERE (client_id = $1 OR coach_id = $1) AND status = ANY($2::text[]) AND price > 0),
     latest AS (SELECT currency FROM mine ORDER BY created_at DESC, seq DESC LIMIT 1)
     SELECT latest.currency, sum(mine.price)::text AS total FROM mine JOIN latest USING (currency)
     GROUP BY latest.currency`,
    [userId, RECEIVED],
  );
  const row = res.rows[0];
  return row
    ? { totalPayment: Math.round(Number(row.total)), totalPaymentCurrency: row.currency }
    : { totalPayment: 0, totalPaymentCurrency: '' };
}
