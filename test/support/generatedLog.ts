import { randomUUID } from 'node:crypto';
import type { Database } from '../../src/db/database';
import type { EventStore } from '../../src/eventstore/types';

/**
 * A generated event log of the real types, for the rebuild benchmark and for tests that need a large log
 * (rebuild interrupted by SIGKILL, export of 100,000 events). Each "user" contributes 10 events over four
 * streams: a profile, two addresses, a payment with three status moves, three notifications.
 */
const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();

export function userHistory(i: number): [string, { type: string; data: unknown }[]][] {
  const userId = randomUUID();
  const coachId = randomUUID();
  const paymentId = randomUUID();
  const groupId = randomUUID();
  const profile = { type: 'client', firstName: `User ${i}`, lastName: 'Bench', email: `u${i}@example.com` };
  const fields = {
    lat: 52.5,
    lng: 13.4,
    zoom: 10,
    name: 'Home',
    address: 'Alexanderplatz 1',
    country: 'DE',
    state: '',
    city: 'Berlin',
    line1: 'Alexanderplatz 1',
    line2: '',
    zip: '10178',
    details: '',
  };
  const move = (from: string, to: string, n: number) => ({
    type: 'PaymentStatusChanged',
    data: { paymentId, groupId, from, to, at: at(i + n), reason: 'provider' },
  });
  const notification = (n: number) => ({
    type: 'NotificationCreated',
    data: {
      notificationId: randomUUID(),
      userId,
      type: 'session',
      contentType: 'session',
      contentId: randomUUID(),
      message: `Notice ${n}`,
      causationEventId: randomUUID(),
      createdAt: at(i + n),
    },
  });
  return [
    [
      `profile-${userId}`,
      [
        {
          type: 'UserProfileUpserted',
          data: { userId, profile, changed: Object.keys(profile), created: true, upsertedAt: at(i) },
        },
      ],
    ],
    [
      `addresses-${userId}`,
      [
        { type: 'AddressAdded', data: { addressId: randomUUID(), userId, fields, addedAt: at(i) } },
        { type: 'AddressAdded', data: { addressId: randomUUID(), userId, fields, addedAt: at(i + 1) } },
      ],
    ],
    [
      `payment-${paymentId}`,
      [
        {
          type: 'PaymentCreated',
          data: {
            paymentId,
            groupId,
            status: 'awaiting',
            price: 40,
            currency: 'EUR',
            methodId: 1,
            method: 'card',
            coachId,
            clientId: userId,
            serviceId: randomUUID(),
            expiresAt: at(i + 600),
            createdAt: at(i),
          },
        },
        move('awaiting', 'checkout', 2),
        move('checkout', 'received', 3),
        move('received', 'delivered', 4),
      ],
    ],
    [`notifications-${userId}`, [notification(1), notification(2), notification(3)]],
  ];
}

/**
 * Writes `total` generated events straight into the SQL store's tables, a few thousand per INSERT, in the
 * shape and order the store itself writes them (for when the appends are not what is measured).
 */
export async function insertGeneratedLog(db: Database, total: number): Promise<void> {
  let written = 0;
  for (let i = 0; written < total;) {
    const rows: [string, string, number, string, string, string][] = [];
    for (; rows.length < 5000 && written < total; i++)
      for (const [stream, events] of userHistory(i))
        for (const [revision, e] of events.entries())
          if (written < total) {
            rows.push([randomUUID(), stream, revision, e.type, JSON.stringify(e.data), '{}']);
            written++;
          }
    const column = (k: number) => rows.map((r) => r[k]);
    await db.query(
      `INSERT INTO es_events (event_id, stream_name, revision, type, data, metadata)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::bigint[], $4::text[], $5::jsonb[], $6::jsonb[])`,
      [0, 1, 2, 3, 4, 5].map(column),
    );
    await db.query(
      `INSERT INTO es_streams (stream_name, revision)
       SELECT stream_name, max(revision) FROM es_events WHERE stream_name = ANY($1::text[]) GROUP BY 1
       ON CONFLICT (stream_name) DO UPDATE SET revision = EXCLUDED.revision`,
      [[...new Set(column(1))]],
    );
  }
}

/**
 * Appends `total` generated events through the store's own path (`appendMany`, each user's four streams
 * as one group, `perCall` events at a time), with the metadata a request would give them (actor,
 * correlation). Returns how many were appended.
 */
export async function appendGeneratedLog(
  store: EventStore,
  total: number,
  opts: { perCall?: number } = {},
): Promise<number> {
  const perCall = opts.perCall ?? 2000;
  let written = 0;
  for (let i = 0; written < total;) {
    const calls: Promise<unknown>[] = [];
    for (let inCall = 0; inCall < perCall && written < total; i++) {
      const correlationId = randomUUID();
      const history = userHistory(i);
      const actor = { userId: history[0]![0].replace(/^profile-/, ''), role: 'client' };
      const group = [];
      for (const [streamName, events] of history) {
        const take = events.slice(0, total - written);
        if (!take.length) break;
        written += take.length;
        inCall += take.length;
        group.push({
          streamName,
          expectedRevision: 'no_stream' as const,
          events: take.map((e) => ({
            ...e,
            metadata: { actor, correlationId },
          })),
        });
      }
      // Each group on its own: the store batches the groups of one turn into one statement.
      calls.push(store.appendMany ? store.appendMany(group) : appendOneByOne(store, group));
    }
    await Promise.all(calls);
  }
  return written;
}

async function appendOneByOne(
  store: EventStore,
  group: { streamName: string; events: { type: string; data: unknown }[] }[],
) {
  for (const a of group) await store.append(a.streamName, a.events);
}
