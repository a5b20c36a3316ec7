import { createSqlEventStore } from '../../src/eventstore/sql';
import { createEsdbEventStore } from '../../src/eventstore/esdb';
import type { EventStore } from '../../src/eventstore/types';
import { freshPglite, freshPostgres, type TestDatabase } from '../support/services';
import { eventStoreDbPlan, startEventStoreDb, type RunningEventStoreDb } from '../support/eventstoredb';
import { eventStoreContract } from './eventstore.contract';

/** The same contract, once per adapter; PostgreSQL is skipped (and says so) without DATABASE_URL. */

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
describe(`event store contract: EventStoreDB (${esdb.kind === 'double' ? 'wire-level double' : esdb.kind})`, () => {
  let store: EventStore;
  let server: RunningEventStoreDb | undefined;
  beforeAll(async () => {
    server = await startEventStoreDb();
    store = createEsdbEventStore(server.url);
  }, 120_000);
  afterAll(async () => {
    await store?.close();
    await server?.stop();
  });
  eventStoreContract(() => store);
});
