import { randomUUID } from 'node:crypto';
import { createSqlEventStore } from '../../src/eventstore/sql';
import { EventStoreUnavailableError, type EventStore, isCondition } from '../../src/eventstore/types';
import { marketplace } from '../support/marketplace';
import { testDatabase, type TestDatabase } from '../support/services';
import { startTestSystem, testEventStoreOnEsdb, type TestSystem } from '../support/system';

/**
 * An answer that only says "not now" is not the request's outcome: a 409 `conflict` that asks to retry
 * (contention) and a 503 (the event store away) are not replayed to a retry with the same Idempotency-Key,
 * which runs the request again and books. An outcome (201/200, or a 409 `slot_unavailable`) still is.
 * Found by review: the retry used to get the stored 409 back for 24 hours. SQL stores (the contention is
 * made through the booking's multi-stream write).
 */
const describeSql = testEventStoreOnEsdb() ? describe.skip : describe;
const NOW = new Date('2026-12-01T08:00:00Z');

describeSql('Idempotency-Key and answers that ask for a retry', () => {
  let database: TestDatabase;
  let inner: EventStore;
  let t: TestSystem;
  let m: ReturnType<typeof marketplace>;
  /** Services changed right before the hold's write, this many times; appends failing as unavailable. */
  const trouble = { serviceChanges: 0, unavailable: 0 };

  beforeAll(async () => {
    database = await testDatabase();
    inner = await createSqlEventStore(database.db);
    const store: EventStore = {
      ...inner,
      kind: inner.kind,
      appendMany: async (appends) => {
        if (trouble.unavailable > 0) {
          trouble.unavailable--;
          throw new EventStoreUnavailableError(new Error('connection refused'));
        }
        const service = appends.find((a) => isCondition(a) && a.streamName.startsWith('service-'));
        if (service && trouble.serviceChanges > 0) {
          trouble.serviceChanges--;
          const serviceId = service.streamName.slice('service-'.length);
          const { events } = await inner.readStream(service.streamName);
          const coachId = (events[0]!.data as { coachId: string }).coachId;
          await inner.append(service.streamName, [
            {
              type: 'ServiceUpdated',
              data: { serviceId, coachId, changes: {}, updatedAt: NOW.toISOString() },
            },
          ]);
        }
        return inner.appendMany!(appends);
      },
    };
    t = await startTestSystem({ clock: () => NOW, db: database.db, store });
    m = marketplace(t);
  });
  afterAll(async () => {
    await t?.close();
    await inner?.close();
    await database?.drop();
  });

  /** A booking by a new client of a new coach's service, with one Idempotency-Key for all its attempts. */
  const booking = async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const keyedBy = async () => {
      const client = await m.client();
      const key = randomUUID();
      return () =>
        t.request('POST', `/api/v1/service/${serviceId}`, {
          token: client.token,
          body: { slots: ['2026-12-02T10:00:00'] },
          headers: { 'idempotency-key': key },
        });
    };
    return { book: await keyedBy(), keyedBy };
  };

  it('runs the request again after a 409 conflict that asked for a retry, and then replays the booking', async () => {
    const { book } = await booking();
    trouble.serviceChanges = 100;
    const first = await book();
    trouble.serviceChanges = 0;
    expect(first.status).toBe(409);
    expect(first.body).toMatchObject({ error: 'conflict', message: expect.stringMatching(/retry/) });
    const retry = await book();
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    const again = await book();
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(retry.body);
  });

  it('runs the request again after a 503', async () => {
    const { book } = await booking();
    trouble.unavailable = 1;
    const first = await book();
    expect(first.status).toBe(503);
    const retry = await book();
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  it('still replays an outcome: 409 slot_unavailable', async () => {
    const { book, keyedBy } = await booking();
    expect((await book()).status).toBe(200);
    const late = await keyedBy(); // another client, the same slot
    const refused = await late();
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('slot_unavailable');
    const replayed = await late();
    expect(replayed.status).toBe(409);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
  });
});
