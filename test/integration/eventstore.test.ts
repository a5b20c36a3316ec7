import { createSqlEventStore } from '../../src/eventstore/sql';
import { createEsdbEventStore } from '../../src/eventstore/esdb';
import type { EventStore } from '../../src/eventstore/types';
import { freshPglite, freshPostgres, type TestDatabase } from '../support/services';
import { eventStoreDbPlan, startEventStoreDbContainer } from '../support/eventstoredb';
import { eventStoreContract } from './eventstore.contract';

/** The same contract, once per reachable adapter; an unreachable one is reported as skipped, with why. */

describe('event store contract: PGlite (embedded)', () => {
  let database: TestDatabase;
  let store: EventStore;
  beforeAll(async () => {
    database = await freshPglite();
    store = await createSqlEventStore(database.db);
  });
  afterAll(async () => {
    await store.close();
    await database.drop();
  });
  eventStoreContract(() => store);
});

const pgServer = process.env.DATABASE_URL;
const describePg = pgServer ? describe : describe.skip;
describePg(
  pgServer
    ? 'event store contract: PostgreSQL'
    : 'event store contract: PostgreSQL (skipped: DATABASE_URL is not set)',
  () => {
    let database: TestDatabase;
    let store: EventStore;
    beforeAll(async () => {
      database = await freshPostgres(pgServer!);
      store = await createSqlEventStore(database.db);
    });
    afterAll(async () => {
      await store.close();
      await database.drop();
    });
    eventStoreContract(() => store);
  },
);

const esdb = eventStoreDbPlan();
if (esdb.skipReason) console.warn(`EventStoreDB contract suite ${esdb.skipReason}`);
const describeEsdb = esdb.skipReason ? describe.skip : describe;
describeEsdb(`event store contract: EventStoreDB${esdb.skipReason ? ` (${esdb.skipReason})` : ''}`, () => {
  let store: EventStore;
  let stop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    let url = esdb.url;
    if (!url) ({ url, stop } = await startEventStoreDbContainer());
    store = createEsdbEventStore(url);
  }, 120_000);
  afterAll(async () => {
    await store?.close();
    await stop?.();
  });
  eventStoreContract(() => store);
});
