import { randomUUID } from 'node:crypto';
import { handleCommand, readState } from '../../src/commandHandler';
import { right } from 'fp-ts/Either';
import type { Decider } from '../../src/decider';
import { createSqlEventStore } from '../../src/eventstore/sql';
import type { EventStore } from '../../src/eventstore/types';
import { limits, loadState } from '../../src/foldedStates';
import { testDatabase, type TestDatabase } from '../support/services';

/** A counter: Added events sum up; the command adds its amount. */
type Added = { type: 'Added'; data: { n: number } };
const counter: Decider<{ n: number }, Added, { total: number; seen: number }> = {
  initialState: () => ({ total: 0, seen: 0 }),
  evolve: (s, e) => ({ total: s.total + e.data.n, seen: s.seen + 1 }),
  decide: (c) => right([{ type: 'Added', data: { n: c.n } }]),
};

describe('folded states kept between commands', () => {
  let database: TestDatabase;
  let inner: EventStore;
  /** The store, counting the events each stream read hands back. */
  let store: EventStore;
  let eventsRead = 0;
  beforeAll(async () => {
    database = await testDatabase();
    inner = await createSqlEventStore(database.db);
    store = {
      ...inner,
      kind: inner.kind,
      readStream: async (s, o) => {
        const r = await inner.readStream(s, o);
        eventsRead += r.events.length;
        return r;
      },
    };
  });
  afterAll(async () => {
    await inner.close();
    await database.drop();
  });

  it('reads only the tail after the first fold, and folds to what a whole read folds to', async () => {
    const stream = `counter-${randomUUID()}`;
    for (let i = 1; i <= 50; i++) await handleCommand(store, stream, counter, { n: i }, {});
    eventsRead = 0;
    const outcome = await handleCommand(store, stream, counter, { n: 1000 }, {});
    expect(outcome.ok && outcome.state).toEqual({ total: 1275 + 1000, seen: 51 });
    expect(eventsRead).toBe(0); // its own appends are kept: nothing to read but an empty tail
    const whole = await loadState(inner, stream, counter, { whole: true });
    expect(whole.state).toEqual({ total: 2275, seen: 51 });
    expect(whole.revision).toBe(50n);
  });

  it('folds in what another writer (another instance) appended meanwhile before deciding', async () => {
    const stream = `counter-${randomUUID()}`;
    await handleCommand(store, stream, counter, { n: 1 }, {});
    // Written past this process's kept state, as another instance of the service would.
    await inner.append(stream, [{ type: 'Added', data: { n: 10 } }], { expectedRevision: 0n });
    await inner.append(stream, [{ type: 'Added', data: { n: 100 } }], { expectedRevision: 1n });
    eventsRead = 0;
    expect(await readState(store, stream, counter)).toEqual({ total: 111, seen: 3 });
    expect(eventsRead).toBe(2);
    // And an append decided on a kept state that another writer overtook is decided again, not lost.
    await inner.append(stream, [{ type: 'Added', data: { n: 1000 } }], { expectedRevision: 2n });
    const outcome = await handleCommand(store, stream, counter, { n: 5 }, {});
    expect(outcome.ok && outcome.state).toEqual({ total: 1116, seen: 5 });
    expect((await inner.readStream(stream)).events.map((e) => (e.data as { n: number }).n)).toEqual([
      1, 10, 100, 1000, 5,
    ]);
  });

  it('a keyed command reads the whole stream to find what an earlier run stored', async () => {
    const stream = `counter-${randomUUID()}`;
    const first = await handleCommand(store, stream, counter, { n: 7 }, { idempotencyTag: 'k1' });
    await handleCommand(store, stream, counter, { n: 8 }, {});
    const again = await handleCommand(store, stream, counter, { n: 7 }, { idempotencyTag: 'k1' });
    expect(again.ok && again.events).toEqual(first.ok && first.events);
    expect((await inner.readStream(stream)).events).toHaveLength(2);
  });

  it('keeps a bounded number of streams and events per decider, forgetting the least recently used (all deciders together)', async () => {
    const saved = { ...limits };
    limits.streams = 3;
    limits.events = 10;
    try {
      const folder = { initialState: counter.initialState, evolve: counter.evolve };
      const [a, b, c, d, long] = Array.from({ length: 5 }, () => `counter-${randomUUID()}`);
      for (const s of [a, b, c, d]) await inner.append(s!, [{ type: 'Added', data: { n: 1 } }]);
      const kept = async (s: string) => {
        eventsRead = 0;
        await readState(store, s, folder);
        return eventsRead === 0;
      };
      for (const s of [a, b, c]) await readState(store, s!, folder);
      expect(await kept(a!)).toBe(true); // a is now the most recently used
      await readState(store, d!, folder); // the fourth stream pushes out the least recently used: b
      expect(await kept(b!)).toBe(false);
      expect(await kept(a!)).toBe(true);
      // Events: a stream of 8 events and the others (1 each) exceed 10 events: the oldest go first.
      await inner.append(
        long!,
        Array.from({ length: 8 }, () => ({ type: 'Added', data: { n: 1 } })),
      );
      expect((await readState(store, long!, folder)).total).toBe(8);
      expect(await kept(long!)).toBe(true);
      // A stream longer than the whole budget is folded every time, never kept.
      await inner.append(
        long!,
        Array.from({ length: 3 }, () => ({ type: 'Added', data: { n: 1 } })),
      );
      expect((await readState(store, long!, folder)).total).toBe(11);
      expect(await kept(long!)).toBe(false);
    } finally {
      Object.assign(limits, saved);
    }
  });
});
