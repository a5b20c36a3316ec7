import { randomUUID } from 'node:crypto';
import { handleCommand, readState } from '../../src/commandHandler';
import { right } from 'fp-ts/Either';
import type { Decider } from '../../src/decider';
import { createSqlEventStore } from '../../src/eventstore/sql';
import type { EventStore } from '../../src/eventstore/types';
import { forget, keptState, limits, loadState, loadStateThrough } from '../../src/foldedStates';
import { left } from 'fp-ts/Either';
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
  let streamReads = 0;
  beforeAll(async () => {
    database = await testDatabase();
    inner = await createSqlEventStore(database.db);
    store = {
      ...inner,
      kind: inner.kind,
      readStream: async (s, o) => {
        const r = await inner.readStream(s, o);
        eventsRead += r.events.length;
        streamReads++;
        return r;
      },
    };
  });
  afterAll(async () => {
    await inner.close();
    await database.drop();
  });

  it('keeps a stream without events only when asked (keepEmpty), as the empty state at no_stream', async () => {
    const stream = `counter-${randomUUID()}`;
    await loadState(store, stream, counter);
    expect(keptState(store, stream, counter)).toBeUndefined();
    await loadState(store, stream, counter, { keepEmpty: true });
    expect(keptState(store, stream, counter)).toEqual({
      state: { total: 0, seen: 0 },
      revision: 'no_stream',
      observed: null,
      recorded: [],
    });
    // Its first event is folded onto it by the next load.
    await inner.append(stream, [{ type: 'Added', data: { n: 5 } }]);
    const loaded = await loadState(store, stream, counter);
    expect(loaded).toMatchObject({ state: { total: 5, seen: 1 }, revision: 0n });
    expect(keptState(store, stream, counter)).toMatchObject({ revision: 0n });
  });

  it('folds through a revision from the kept state without a read when it reaches that far, else reads', async () => {
    const stream = `counter-${randomUUID()}`;
    streamReads = 0;
    // Nothing before the first event: the empty state, unread.
    expect(await loadStateThrough(store, stream, counter, -1n)).toEqual({ total: 0, seen: 0 });
    expect(streamReads).toBe(0);
    for (let i = 1; i <= 3; i++)
      await handleCommand(store, stream, counter, { n: i }, {}, 8, undefined, 'new');
    streamReads = 0; // revisions 0..2 are kept as this process wrote them
    expect(await loadStateThrough(store, stream, counter, 2n)).toEqual({ total: 6, seen: 3 });
    expect(await loadStateThrough(store, stream, counter, 1n)).toEqual({ total: 6, seen: 3 });
    expect(streamReads).toBe(0);
    // Written past the kept state by another instance: a revision beyond it is read.
    await inner.append(stream, [{ type: 'Added', data: { n: 10 } }], { expectedRevision: 2n });
    expect(await loadStateThrough(store, stream, counter, 3n)).toEqual({ total: 16, seen: 4 });
    expect(streamReads).toBe(1);
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

  /** A one-seat register: the first Take wins, a Take of a taken seat is refused. */
  type Taken = { type: 'Taken'; data: { by: string } } | { type: 'Freed'; data: { by: string } };
  const seat: Decider<{ by: string }, Taken, { holder: string | null }> = {
    initialState: () => ({ holder: null }),
    evolve: (_, e) => ({ holder: e.type === 'Taken' ? e.data.by : null }),
    decide: (c, s) =>
      s.holder
        ? left({ code: 'taken', message: `held by ${s.holder}` })
        : right([{ type: 'Taken', data: { by: c.by } }]),
  };

  it("a 'kept' guess decides without reading when this process is the stream's only writer", async () => {
    const stream = `counter-${randomUUID()}`;
    await handleCommand(store, stream, counter, { n: 1 }, {});
    streamReads = 0;
    const outcome = await handleCommand(store, stream, counter, { n: 2 }, {}, 8, undefined, 'kept');
    expect(outcome.ok && outcome.state).toEqual({ total: 3, seen: 2 });
    expect(streamReads).toBe(0);
    expect(keptState(store, stream, counter)?.revision).toBe(1n);
  });

  it("a stale 'kept' guess never wins: its append is refused and the command is decided on the stream as read", async () => {
    const stream = `counter-${randomUUID()}`;
    await handleCommand(store, stream, counter, { n: 1 }, {});
    await inner.append(stream, [{ type: 'Added', data: { n: 10 } }], { expectedRevision: 0n }); // another instance
    const outcome = await handleCommand(store, stream, counter, { n: 100 }, {}, 0, undefined, 'kept');
    expect(outcome.ok && outcome.state).toEqual({ total: 111, seen: 3 }); // not a conflict, even with 0 retries
    expect((await inner.readStream(stream)).events.map((e) => (e.data as { n: number }).n)).toEqual([
      1, 10, 100,
    ]);
  });

  it("a refusal on a stale 'kept' guess is not answered: the command is decided again on the stream as read", async () => {
    const stream = `seat-${randomUUID()}`;
    await handleCommand(store, stream, seat, { by: 'ann' }, {});
    // Freed by another instance: this process's kept state still says ann holds the seat.
    await inner.append(stream, [{ type: 'Freed', data: { by: 'ann' } }], { expectedRevision: 0n });
    const outcome = await handleCommand(store, stream, seat, { by: 'bob' }, {}, 8, undefined, 'kept');
    expect(outcome.ok && outcome.state).toEqual({ holder: 'bob' });
    // And a true refusal is still a refusal once read.
    const refused = await handleCommand(store, stream, seat, { by: 'cy' }, {}, 8, undefined, 'kept');
    expect(refused).toEqual({ ok: false, error: { code: 'taken', message: 'held by bob' } });
  });

  it("a 'new' guess writes a new stream without reading it, and reads an existing one instead of overwriting it", async () => {
    const fresh = `seat-${randomUUID()}`;
    streamReads = 0;
    const first = await handleCommand(store, fresh, seat, { by: 'ann' }, {}, 8, undefined, 'new');
    expect(first.ok).toBe(true);
    expect(streamReads).toBe(0);
    forget(store, seat, fresh);
    expect(keptState(store, fresh, seat)).toBeUndefined();
    const second = await handleCommand(store, fresh, seat, { by: 'bob' }, {}, 8, undefined, 'new');
    expect(second).toEqual({ ok: false, error: { code: 'taken', message: 'held by ann' } });
    expect(streamReads).toBe(1);
    expect((await inner.readStream(fresh)).events).toHaveLength(1);
  });

  it('counts a decision on a kept state (keptState) as a use: it is not the next one forgotten', async () => {
    const saved = { ...limits };
    limits.streams = 2;
    try {
      const folder = { initialState: counter.initialState, evolve: counter.evolve };
      const [a, b, c] = Array.from({ length: 3 }, () => `counter-${randomUUID()}`);
      for (const s of [a, b, c]) await inner.append(s!, [{ type: 'Added', data: { n: 1 } }]);
      await readState(store, a!, folder);
      await readState(store, b!, folder);
      expect(keptState(store, a!, folder)).toBeDefined(); // a used again, without a read
      await readState(store, c!, folder); // the third stream pushes out the least recently used: b
      expect(keptState(store, a!, folder)).toBeDefined();
      expect(keptState(store, b!, folder)).toBeUndefined();
    } finally {
      Object.assign(limits, saved);
    }
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
