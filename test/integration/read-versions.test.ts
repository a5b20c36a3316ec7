import { migrate } from '../../src/db/migrate';
import { readTokens } from '../../src/readModels/readVersions';
import { testDatabase, type TestDatabase } from '../support/services';

describe('read versions (the tokens of cached answers)', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await testDatabase();
    await migrate(database.db);
  });
  afterAll(async () => {
    await database.drop();
  });

  it('name when the server started: after a crash or a failover no token matches one from before', async () => {
    // A crash can take back asynchronous read-model commits, and their transaction ids can come again.
    const { rows } = await database.db.query<{ s: string }>('SELECT pg_postmaster_start_time()::text AS s');
    const tokens = await readTokens(database.db, ['*']);
    expect(tokens.get('*')).toMatch(/\|epoch=\d+$/);
    expect(tokens.get('*')!.startsWith(`${rows[0]!.s}|`)).toBe(true);
  });
});
