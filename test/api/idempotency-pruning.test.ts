import { randomUUID } from 'node:crypto';
import { startTestSystem, type TestSystem } from '../support/system';

const ADDRESSES = '/api/v1/nav/addreses';
const HOME = { lat: 52.52, lng: 13.405, name: 'Home', address: 'Alexanderplatz 1' };

/**
 * Idempotency-Keys are forgotten once their 24 h are over (src/idempotencyPruner.ts): before, a key's row
 * (with the answer it replays) went only when the same key came again, so the table grew for ever. The log
 * still decides afterwards: the same request under a forgotten key answers its first outcome, once.
 */
describe('Idempotency-Keys past their 24 h', () => {
  let t: TestSystem;
  beforeAll(async () => {
    t = await startTestSystem();
  });
  afterAll(() => t.close());

  const keys = async (scope: string) =>
    (
      await t.system.deps.db.query<{ key: string }>(
        'SELECT key FROM idempotency_keys WHERE scope = $1 ORDER BY key',
        [scope],
      )
    ).rows.map((r) => r.key);

  it('are deleted by the pruner, younger ones kept; the same request again is not done twice', async () => {
    const user = randomUUID();
    const token = t.token(user, ['client']);
    const create = (key: string) =>
      t.request('POST', ADDRESSES, { token, body: HOME, headers: { 'Idempotency-Key': key } });
    const first = await create('old');
    expect(first.status).toBe(200);
    expect((await create('young')).status).toBe(200);
    // The database's clock decides a key's age: the older claim is moved back instead.
    await t.system.deps.db.query(
      `UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 minute' WHERE scope = $1 AND key = 'old'`,
      [user],
    );
    expect(await keys(user)).toEqual(['old', 'young']);

    expect(await t.system.pruneIdempotencyKeys()).toBeGreaterThanOrEqual(1);
    expect(await keys(user)).toEqual(['young']);
    expect(await t.system.pruneIdempotencyKeys()).toBe(0);

    // The forgotten key's request again: its outcome is found in the log, no second address is made.
    const again = await create('old');
    expect(again.status).toBe(200);
    const ids = (list: { id: string }[]) => list.map((a) => a.id).sort();
    expect(ids(again.body)).toContain(first.body[0].id);
    const list = await t.request('GET', ADDRESSES, { token });
    expect(list.body).toHaveLength(2);
    expect(ids(list.body)).toEqual(ids(again.body));
  });
});
