/**
 * Rebuild throughput: a generated log of BENCH_REBUILD_EVENTS (default 200,000) events of the real types
 * (profiles, addresses, payments with their status moves, notifications), replayed into shadow tables and
 * swapped in, as `npm run rebuild` does. PostgreSQL only (DATABASE_URL; the target is >= 20,000 events/s);
 * the database is created for the run and dropped after it.
 */
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createPgDatabase } from '../src/db/pg';
import { migrate } from '../src/db/migrate';
import { createSqlEventStore } from '../src/eventstore/sql';
import { allProjections } from '../projections';
import { rebuildReadModels } from '../src/rebuild/rebuild';
import { progressPrinter } from '../src/rebuild/progress';
import { createLogger } from '../src/log';
import { createMailer } from '../src/mail/mailer';

const TOTAL = Number(process.env.BENCH_REBUILD_EVENTS ?? 200_000);
const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();

/** One user's history: 10 events touching profiles, addresses, payments, payment history and notifications. */
function userHistory(i: number): [string, { type: string; data: unknown }[]][] {
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

async function main() {
  const server = process.env.DATABASE_URL;
  if (!server) {
    console.log('rebuild    skipped: set DATABASE_URL to a PostgreSQL server (the figure is for PostgreSQL)');
    return;
  }
  const name = `bench_rebuild_${randomUUID().slice(0, 8)}`;
  const admin = new Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  const db = createPgDatabase(url.toString(), { max: 16 });
  try {
    await migrate(db);
    const store = await createSqlEventStore(db);
    // Written in bulk (the figure measured is the rebuild, not the appends): a few thousand events per
    // INSERT, in the shape and order the store itself writes them.
    let written = 0;
    for (let i = 0; written < TOTAL;) {
      const rows: [string, string, number, string, string, string][] = [];
      for (; rows.length < 5000 && written < TOTAL; i++)
        for (const [stream, events] of userHistory(i))
          for (const [revision, e] of events.entries())
            if (written < TOTAL) {
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
    const log = createLogger({ service: 'bench' });
    const mailer = createMailer({ mailFrom: 'bench@example.com', dataDir: '/tmp' });
    const projections = allProjections({ store, db, mailer, log, clock: () => new Date() });
    const result = await rebuildReadModels({
      db,
      store,
      projections,
      onProgress: progressPrinter(process.stderr),
    });
    const verify = await rebuildReadModels({ db, store, projections, verify: true });
    const rate = (n: number, ms: number) => Math.round(n / (ms / 1000)).toLocaleString('en-US');
    console.log(
      `rebuild    ${result.events.toLocaleString('en-US')} events, ${result.readModels.length} read models: ` +
        `${(result.ms / 1000).toFixed(1)} s, ${rate(result.events, result.ms)} events/s (target >= 20,000) | ` +
        `--verify ${(verify.ms / 1000).toFixed(1)} s, ${verify.differences.length} differences`,
    );
    mailer.close();
    await store.close();
  } finally {
    await db.close();
    if (process.env.BENCH_KEEP) console.log(`kept database ${name}`);
    else await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
