import { createHmac, timingSafeEqual } from 'node:crypto';

/** Header carrying `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export const SIGNATURE_HEADER = 'X-Coaching-Signature';

/**
 * A channel's signing secret, derived from the service's key and the channel id: nothing secret is stored
 * (not in the event log, not in a table), every instance derives the same one, and it is shown to the user
 * once, in the answer to the registration.
 */
export function channelSecret(signingKey: string, channelId: string): string {
  const mac = createHmac('sha256', signingKey).update(`webhook-channel:${channelId}`).digest('base64url');
  return `whsec_${mac}`;
}

const mac = (secret: string, timestamp: number, body: string) =>
  createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');

/** The signature header's value for `body` sent at `timestamp` (unix seconds). */
export const signatureHeader = (secret: string, timestamp: number, body: string): string =>
  `t=${timestamp},v1=${mac(secret, timestamp, body)}`;

/**
 * What a receiver does (and the tests do): recompute the MAC over the raw body and compare in constant
 * time; refuse a timestamp older than `toleranceSec` so a captured request cannot be replayed later.
 */
export function verifySignature(
  secret: string,
  header: string,
  body: string,
  nowSec: number,
  toleranceSec = 300,
): boolean {
  const parts = Object.fromEntries(header.split(',').map((p) => p.split('=', 2) as [string, string]));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || !parts.v1 || Math.abs(nowSec - t) > toleranceSec) return false;
  const expected = Buffer.from(mac(secret, t, body), 'hex');
  const given = Buffer.from(parts.v1, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
