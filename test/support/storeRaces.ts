import { createSqlEventStore } from '../../src/eventstore/sql';
import { type EventStore, isCondition } from '../../src/eventstore/types';
import { marketplace } from './marketplace';
import { testDatabase, type TestDatabase } from './services';
import { startTestSystem, type TestSystem } from './system';

/**
 * A system on a SQL event store whose calls a test steps into (`wrap` replaces some of them, calling the
 * real store, `inner`, itself), to make another writer act at an exact moment of a request.
 */
export async function systemOnSteppedStore(
  now: Date,
  wrap: (inner: EventStore) => Partial<EventStore>,
): Promise<{
  t: TestSystem;
  m: ReturnType<typeof marketplace>;
  inner: EventStore;
  close: () => Promise<void>;
}> {
  const database: TestDatabase = await testDatabase();
  const inner = await createSqlEventStore(database.db);
  const store: EventStore = { ...inner, kind: inner.kind, ...wrap(inner) };
  const t = await startTestSystem({ clock: () => now, database, store });
  return {
    t,
    m: marketplace(t),
    inner,
    close: async () => {
      await t.close();
      await inner.close(); // a store passed in is the caller's to close
      await database.drop();
    },
  };
}

/**
 * `appendMany` that touches the service (an edit that changes nothing, as a coach saving the service form
 * at that moment would) right before a booking's hold is written, while `race.left` says so.
 */
export const touchServiceBeforeHold =
  (inner: EventStore, now: Date, race: { left: number }): EventStore['appendMany'] =>
  async (appends) => {
    const service = appends.find((a) => isCondition(a) && a.streamName.startsWith('service-'));
    if (service && race.left > 0) {
      race.left--;
      const serviceId = service.streamName.slice('service-'.length);
      const { events } = await inner.readStream(service.streamName);
      const coachId = (events[0]!.data as { coachId: string }).coachId;
      await inner.append(service.streamName, [
        { type: 'ServiceUpdated', data: { serviceId, coachId, changes: {}, updatedAt: now.toISOString() } },
      ]);
    }
    return inner.appendMany!(appends);
  };
