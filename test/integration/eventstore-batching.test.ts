import { randomUUID } from 'node:crypto';
import { createSqlEventStore } from '../../src/eventstore/sql';
import { type EventStore, START, WrongExpectedRevisionError } from '../../src/eventstore/types';
import { freshPglite, freshPostgres, type TestDatabase } from '../support/services';

/**
 * The SQL stores' group commit and multi-stream append: appends that queue up together go to the server as
 * one batch, yet each meets its own fate, and an appendMany lands whole or not at all.
 */
const targets: [string, () => Promise<TestDatabase>][] = [['PGlite', freshPglite]];
if (process.env.DATABASE_URL) targets.push(['PostgreSQL', () => freshPostgres(process.env.DATABASE_URL!)]);

describe.each(targets)('SQL event store batching on %s', (_name, open) => {
  let database: TestDatabase;
  let store: EventStore;
  beforeAll(async () => {
    database = await open();
    store = await createSqlEventStore(database.db);
  });
  afterAll(async () => {
    await store.close();
    await database.drop();
  });
  const ev = (type: string, data: unknown = {}) => ({ type, data });

  it('fails only the stale append of appends sent together, and writes the others', async () => {
    const a = `a-${randomUUID()}`;
    const b = `b-${randomUUID()}`;
    await store.append(a, [ev('A0')]);
    const results = await Promise.allSettled([
      store.append(a, [ev('A1')], { expectedRevision: 0n }),
      store.append(b, [ev('B0')], { expectedRevision: 'no_stream' }),
      store.append(a, [ev('stale')], { expectedRevision: 0n }), // the first one moved a to 1
      store.append(b, [ev('B1')], { expectedRevision: 0n }), // sees the B0 queued before it
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const err = (results[2] as PromiseRejectedResult).reason as WrongExpectedRevisionError;
    expect(err).toBeInstanceOf(WrongExpectedRevisionError);
    expect(err.actual).toBe(1n);
    expect((await store.readStream(a)).events.map((e) => e.type)).toEqual(['A0', 'A1']);
    expect((await store.readStream(b)).events.map((e) => e.type)).toEqual(['B0', 'B1']);
  });

  it('fails only an append the database refuses (a duplicate event id), not its batch mates', async () => {
    const id = randomUUID();
    const s = `dup-${randomUUID()}`;
    await store.append(s, [{ id, type: 'First', data: {} }]);
    const results = await Promise.allSettled([
      store.append(`ok-${randomUUID()}`, [ev('Fine')]),
      store.append(s, [{ id, type: 'Again', data: {} }]),
      store.append(`ok-${randomUUID()}`, [ev('Fine')]),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await store.readStream(s)).events.map((e) => e.type)).toEqual(['First']);
  });

  it('appends to several streams atomically: all or nothing', async () => {
    const hold = `hold-${randomUUID()}`;
    const taken = `taken-${randomUUID()}`;
    await store.append(taken, [ev('Exists')]);
    const head = await store.headPosition();
    const refused = await store.appendMany!([
      { streamName: hold, events: [ev('Hold')], expectedRevision: 'no_stream' },
      { streamName: taken, events: [ev('Second')], expectedRevision: 'no_stream' },
    ]).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WrongExpectedRevisionError);
    expect((refused as WrongExpectedRevisionError).streamName).toBe(taken);
    expect(await store.readAll(head)).toEqual([]);

    const fresh = `fresh-${randomUUID()}`;
    const written = await store.appendMany!([
      { streamName: hold, events: [ev('Hold'), ev('Held')], expectedRevision: 'no_stream' },
      { streamName: fresh, events: [ev('Made')], expectedRevision: 'no_stream' },
      { streamName: taken, events: [ev('Second')], expectedRevision: 0n },
    ]);
    expect(written.map((w) => w.nextRevision)).toEqual([1n, 0n, 1n]);
    const log = await store.readAll(head);
    expect(log.map((e) => [e.streamName, e.type])).toEqual([
      [hold, 'Hold'],
      [hold, 'Held'],
      [fresh, 'Made'],
      [taken, 'Second'],
    ]);
    expect(written[2]!.position).toEqual(log[3]!.position);
  });

  it("writes a group only while its conditions hold, and writes nothing to a condition's stream", async () => {
    const read = `read-${randomUUID()}`;
    const absent = `absent-${randomUUID()}`;
    await store.append(read, [ev('R0'), ev('R1')]);
    const head = await store.headPosition();
    const target = `target-${randomUUID()}`;
    const cond = (streamName: string, expectedRevision: bigint | 'no_stream') =>
      ({ streamName, condition: true, expectedRevision }) as const;

    const written = await store.appendMany!([
      { streamName: target, events: [ev('T0')], expectedRevision: 'no_stream' },
      cond(read, 1n),
      cond(absent, 'no_stream'),
    ]);
    expect(written.map((w) => w.nextRevision)).toEqual([0n, 1n, -1n]);
    let log = await store.readAll(head);
    expect(log.map((e) => [e.streamName, e.type])).toEqual([[target, 'T0']]);
    expect(written[1]!.position).toEqual(log[0]!.position);
    expect((await store.readStream(read)).revision).toBe(1n);
    expect((await store.readStream(absent)).revision).toBe('no_stream');

    // The read stream moved on: the group is refused as a whole, naming the condition's stream.
    await store.append(read, [ev('R2')]);
    const after = await store.headPosition();
    const refused = await store.appendMany!([
      { streamName: target, events: [ev('T1')], expectedRevision: 0n },
      cond(read, 1n),
    ]).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WrongExpectedRevisionError);
    expect(refused).toMatchObject({ streamName: read, actual: 2n });
    log = await store.readAll(after);
    expect(log).toEqual([]);

    // A stream expected absent that now exists refuses too; a group of conditions alone writes nothing.
    await store.append(absent, [ev('A0')]);
    await expect(
      store.appendMany!([
        { streamName: target, events: [ev('T1')], expectedRevision: 0n },
        cond(absent, 'no_stream'),
      ]),
    ).rejects.toMatchObject({ streamName: absent, actual: 0n });
    await expect(store.appendMany!([cond(read, 2n)])).rejects.toThrow(/at least one event/);
    expect((await store.readStream(target)).revision).toBe(0n);
  });

  it('keeps the global log gap-free and each stream contiguous under 200 concurrent appends', async () => {
    const head = await store.headPosition();
    const streams = Array.from({ length: 10 }, () => `c-${randomUUID()}`);
    await Promise.all(
      Array.from({ length: 200 }, (_, i) => store.append(streams[i % 10]!, [ev('N', { i })])),
    );
    const log = await store.readAll(head, 1000);
    expect(log).toHaveLength(200);
    const positions = log.map((e) => e.position.commit);
    expect(positions).toEqual(positions.map((_, i) => positions[0]! + BigInt(i)));
    for (const s of streams) {
      const revs = log.filter((e) => e.streamName === s).map((e) => e.revision);
      expect(revs).toEqual(revs.map((_, i) => BigInt(i)));
    }
    expect(head === START || log[0]!.position.commit > head.commit).toBe(true);
  });

  it('refuses an empty append and an appendMany naming one stream twice', async () => {
    await expect(store.append(`e-${randomUUID()}`, [])).rejects.toThrow(/at least one event/);
    const s = `twice-${randomUUID()}`;
    await expect(
      store.appendMany!([
        { streamName: s, events: [ev('A')] },
        { streamName: s, events: [ev('B')] },
      ]),
    ).rejects.toThrow(/at most once/);
  });
});
