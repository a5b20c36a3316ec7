import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { migrate } from '../../src/db/migrate';
import { createEsdbEventStore } from '../../src/eventstore/esdb';
import type { EventStore } from '../../src/eventstore/types';
import { createLogger } from '../../src/log';
import { createProjectionRunner, type Projection } from '../../projections/runner';
import { startEsdbDouble, type EsdbDouble } from '../support/esdbDouble';
import { testDatabase, type TestDatabase } from '../support/services';

const log = createLogger({ test: 'runner-esdb' });

/** The projection runner on EventStoreDB (the wire-level double) through the faults a real node shows. */
describe('projection runner on EventStoreDB faults', () => {
  let database: TestDatabase;
  let double: EsdbDouble;
  let store: EventStore;
  beforeAll(async () => {
    database = await testDatabase();
    await migrate(database.db);
    await database.db.query('CREATE TABLE seen (event_id uuid PRIMARY KEY, n int)');
  });
  afterAll(async () => {
    await database.drop();
  });
  beforeEach(async () => {
    double = await startEsdbDouble();
    store = createEsdbEventStore(double.url);
    await database.db.query('TRUNCATE seen');
    await database.db.query('DELETE FROM projection_checkpoints');
  });
  afterEach(async () => {
    await store.close();
    await double.close();
  });

  /** One row per event: the primary key refuses an event applied twice. */
  const recorder: Projection = {
    name: 'recorder',
    handles: ['Numbered'],
    async apply(tx, e) {
      await tx.query('INSERT INTO seen (event_id, n) VALUES ($1, $2)', [e.id, (e.data as { n: number }).n]);
    },
  };
  const append = async (from: number, to: number) => {
    let last;
    for (let n = from; n <= to; n++)
      last = await store.append(`num-${randomUUID()}`, [{ type: 'Numbered', data: { n } }]);
    return last!.position;
  };
  const numbers = async () =>
    (await database.db.query<{ n: number }>('SELECT n FROM seen ORDER BY n')).rows.map((r) => r.n);
  const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

  /** Runs `fault` between two bursts of events; the second burst must land with nothing lost or doubled. */
  const survives = async (fault: () => Promise<unknown>) => {
    const runner = createProjectionRunner(store, database.db, [recorder], log, { baseBackoffMs: 20 });
    await runner.start();
    expect(await runner.waitFor(await append(1, 10), 5000)).toBe(true);
    await fault();
    // Appends right after a drop may meet the dead connection once; the command path retries, so do we.
    let pos;
    for (let attempt = 1; !pos; attempt++)
      pos = await append(11, 20).catch((err: unknown) => {
        if (attempt > 5) throw err;
        return null;
      });
    expect(await runner.waitFor(pos, 5000)).toBe(true);
    expect(runner.status().map((s) => s.state)).toEqual(['running']);
    await runner.stop();
    expect(await numbers()).toEqual(range(1, 20));
  };

  it('resubscribes when the server ends its subscription with OK', async () => {
    await survives(async () => expect(double.endSubscriptions()).toBe(1));
  });

  it('resubscribes when the server ends its subscription with an error', async () => {
    await survives(async () => expect(double.failSubscription(status.UNAVAILABLE)).toBe(true));
  });

  it('resubscribes after the node restarts, from the last event it applied', async () => {
    await survives(() => double.restart({ downMs: 500 }));
    expect(double.stats().calls.subscribe).toBeGreaterThanOrEqual(2);
  });
});
