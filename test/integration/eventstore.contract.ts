import { randomUUID } from 'node:crypto';
import { right } from 'fp-ts/Either';
import { handleCommand } from '../../src/commandHandler';
import type { Decider } from '../../src/decider';
import {
  type EventStore,
  type Position,
  type RecordedEvent,
  EmptyAppendError,
  START,
  WrongExpectedRevisionError,
  comparePositions,
} from '../../src/eventstore/types';

/**
 * The behaviour every event store adapter must show. Stream names are unique per case, and log reads
 * start from the head seen at the start of a case, so the suite also runs against a shared server.
 */
export function eventStoreContract(getStore: () => EventStore) {
  const stream = (prefix = 'contract') => `${prefix}-${randomUUID()}`;
  const ev = (type: string, data: unknown = {}) => ({ type, data });

  const collect = (
    store: EventStore,
    from: Position,
    until: (seen: RecordedEvent[]) => boolean,
    timeoutMs = 5000,
  ) =>
    new Promise<RecordedEvent[]>((resolve, reject) => {
      const seen: RecordedEvent[] = [];
      const timer = setTimeout(() => {
        void sub.stop();
        reject(new Error(`subscription saw ${seen.length} events before the timeout`));
      }, timeoutMs);
      const sub = store.subscribe({
        from,
        onError: reject,
        handler: async (batch) => {
          seen.push(...batch);
          if (until(seen)) {
            clearTimeout(timer);
            await Promise.resolve();
            void sub.stop();
            resolve(seen);
          }
        },
      });
    });

  it('appends to a new stream with no_stream and reads it back with 0-based revisions', async () => {
    const store = getStore();
    const s = stream();
    const res = await store.append(s, [ev('A', { n: 1 }), ev('B', { n: 2 })], {
      expectedRevision: 'no_stream',
    });
    expect(res.nextRevision).toBe(1n);
    const read = await store.readStream(s);
    expect(read.revision).toBe(1n);
    expect(read.events.map((e) => [e.type, e.revision, e.data, e.streamName])).toEqual([
      ['A', 0n, { n: 1 }, s],
      ['B', 1n, { n: 2 }, s],
    ]);
    expect(comparePositions(read.events[0]!.position, read.events[1]!.position)).toBeLessThan(0);
  });

  it('reads a stream from a revision on: the tail a kept fold needs, empty past the end', async () => {
    const store = getStore();
    const s = stream();
    await store.append(s, [ev('A', { n: 0 }), ev('B', { n: 1 }), ev('C', { n: 2 })]);
    const tail = await store.readStream(s, { fromRevision: 1n });
    expect(tail.events.map((e) => [e.type, e.revision])).toEqual([
      ['B', 1n],
      ['C', 2n],
    ]);
    expect(tail.revision).toBe(2n);
    expect((await store.readStream(s, { fromRevision: 3n })).events).toEqual([]);
  });

  it('answers reads of many streams made at once each with its own stream from its own revision', async () => {
    const store = getStore();
    const names = Array.from({ length: 12 }, () => stream());
    await Promise.all(
      names.map((s, i) =>
        store.append(
          s,
          Array.from({ length: (i % 4) + 1 }, (_, n) => ev(`E${n}`, { s, n })),
        ),
      ),
    );
    // Same turn: the SQL stores answer these in one statement; the same stream twice, from two revisions.
    const asked = [
      ...names.map((s, i) => ({ s, from: BigInt(i % 3) })),
      { s: names[0]!, from: 0n },
      { s: stream(), from: 0n },
    ];
    const reads = await Promise.all(asked.map((a) => store.readStream(a.s, { fromRevision: a.from })));
    reads.forEach((read, i) => {
      const { s, from } = asked[i]!;
      const length = names.includes(s) ? (names.indexOf(s) % 4) + 1 : 0;
      const expected = Array.from({ length }, (_, n) => n).filter((n) => n >= Number(from));
      expect(read.events.map((e) => [e.streamName, e.revision, e.data])).toEqual(
        expected.map((n) => [s, BigInt(n), { s, n }]),
      );
      expect(read.revision).toBe(length && expected.length ? BigInt(length - 1) : 'no_stream');
    });
    // Each caller owns its array: changing one answer changes no other.
    reads[0]!.events.length = 0;
    expect(reads[12]!.events.length).toBe(1);
  });

  it('reads a stream that does not exist as empty with revision no_stream', async () => {
    expect(await getStore().readStream(stream())).toEqual({ events: [], revision: 'no_stream' });
  });

  it('refuses no_stream on an existing stream with a typed conflict naming the actual revision', async () => {
    const store = getStore();
    const s = stream();
    await store.append(s, [ev('A')]);
    const err = await store.append(s, [ev('B')], { expectedRevision: 'no_stream' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WrongExpectedRevisionError);
    expect((err as WrongExpectedRevisionError).actual).toBe(0n);
    expect((await store.readStream(s)).events).toHaveLength(1);
  });

  it('appends at the exact revision read and refuses a stale one', async () => {
    const store = getStore();
    const s = stream();
    await store.append(s, [ev('A')], { expectedRevision: 'no_stream' });
    await store.append(s, [ev('B')], { expectedRevision: 0n });
    const err = await store.append(s, [ev('C')], { expectedRevision: 0n }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WrongExpectedRevisionError);
    expect((err as WrongExpectedRevisionError).actual).toBe(1n);
    const missing = await store
      .append(stream(), [ev('X')], { expectedRevision: 3n })
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(WrongExpectedRevisionError);
    expect((await store.readStream(s)).events.map((e) => e.type)).toEqual(['A', 'B']);
  });

  it('refuses an append of no events, whatever the expected revision, and writes nothing', async () => {
    const store = getStore();
    const s = stream();
    for (const expectedRevision of ['any', 'no_stream', 0n] as const) {
      const err = await store.append(s, [], { expectedRevision }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EmptyAppendError);
    }
    await store.append(s, [ev('A')]);
    expect(await store.append(s, []).catch((e: unknown) => e)).toBeInstanceOf(EmptyAppendError);
    expect(await store.readStream(s)).toMatchObject({ revision: 0n, events: [{ type: 'A' }] });
  });

  it('appends with any regardless of the revision', async () => {
    const store = getStore();
    const s = stream();
    await store.append(s, [ev('A')], { expectedRevision: 'any' });
    await store.append(s, [ev('B')], { expectedRevision: 'any' });
    expect((await store.readStream(s)).revision).toBe(1n);
  });

  it('lets exactly one of many concurrent writers at one revision win', async () => {
    const store = getStore();
    const s = stream();
    await store.append(s, [ev('Opened')]);
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => store.append(s, [ev('Wrote', { i })], { expectedRevision: 0n })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(rejected.every((r) => r.reason instanceof WrongExpectedRevisionError)).toBe(true);
    expect((await store.readStream(s)).events).toHaveLength(2);
  });

  it('round-trips event ids, metadata and creation time', async () => {
    const store = getStore();
    const s = stream();
    const id = randomUUID();
    const before = Date.now();
    const metadata = {
      correlationId: randomUUID(),
      causationId: randomUUID(),
      requestId: 'req-1',
      actor: { userId: randomUUID(), role: 'client' },
    };
    await store.append(s, [{ id, type: 'WithMeta', data: { nested: { a: [1, 'two', null] } }, metadata }]);
    const [e] = (await store.readStream(s)).events;
    expect(e!.id).toBe(id);
    expect(e!.metadata).toEqual(metadata);
    expect(e!.data).toEqual({ nested: { a: [1, 'two', null] } });
    expect(e!.createdAt).toBeInstanceOf(Date);
    expect(e!.createdAt.getTime()).toBeGreaterThanOrEqual(before - 5000);
    expect(e!.createdAt.getTime()).toBeLessThanOrEqual(Date.now() + 5000);
  });

  it('hands a command the stored ids of its events, and a keyed repeat the ids of the first run', async () => {
    const store = getStore();
    const s = stream();
    const pair: Decider<{ n: number }, { type: 'Added'; data: { n: number } }, number> = {
      initialState: () => 0,
      evolve: (total, e) => total + e.data.n,
      decide: (c) =>
        right([
          { type: 'Added', data: { n: c.n } },
          { type: 'Added', data: { n: c.n + 1 } },
        ]),
    };
    const first = await handleCommand(store, s, pair, { n: 1 }, { idempotencyTag: 'key-1' });
    const stored = (await store.readStream(s)).events.map((e) => e.id);
    expect(first.ok && first.eventIds).toEqual(stored);
    expect(stored).toHaveLength(2);
    // The request run again under its key: nothing new is written, and the answer names what the first stored.
    const again = await handleCommand(store, s, pair, { n: 1 }, { idempotencyTag: 'key-1' });
    expect(again.ok && again.eventIds).toEqual(stored);
    expect((await store.readStream(s)).events).toHaveLength(2);
  });

  it('reads the global log in order, strictly after a position, up to a limit', async () => {
    const store = getStore();
    const head = await store.headPosition();
    const a = stream();
    const b = stream();
    await store.append(a, [ev('A1')]);
    await store.append(b, [ev('B1'), ev('B2')]);
    await store.append(a, [ev('A2')]);
    const all = (await store.readAll(head, 1000)).filter((e) => e.streamName === a || e.streamName === b);
    expect(all.map((e) => e.type)).toEqual(['A1', 'B1', 'B2', 'A2']);
    for (let i = 1; i < all.length; i++)
      expect(comparePositions(all[i - 1]!.position, all[i]!.position)).toBeLessThan(0);
    const after = await store.readAll(all[1]!.position, 2);
    expect(after.map((e) => e.type)).toEqual(['B2', 'A2']);
    expect(await store.readAll(all[3]!.position, 10)).toEqual([]);
  });

  it('subscribes from a checkpoint: catches up, then delivers live appends promptly', async () => {
    const store = getStore();
    const head = await store.headPosition();
    const s = stream('sub');
    await store.append(s, [ev('E0'), ev('E1')]);
    const seen = collect(store, head, (events) => events.filter((e) => e.streamName === s).length >= 4);
    await new Promise((r) => setTimeout(r, 300));
    const liveAppendedAt = Date.now();
    await store.append(s, [ev('E2'), ev('E3')]);
    const events = (await seen).filter((e) => e.streamName === s);
    const latency = Date.now() - liveAppendedAt;
    expect(events.map((e) => e.type)).toEqual(['E0', 'E1', 'E2', 'E3']);
    // Generous bound against a loaded CI machine; bench/ measures the real figure.
    expect(latency).toBeLessThan(1000);
  });

  it('subscribes strictly after a given position', async () => {
    const store = getStore();
    const s = stream('from');
    await store.append(s, [ev('Old1'), ev('Old2')]);
    const { events } = await store.readStream(s);
    const seen = collect(store, events[1]!.position, (got) => got.some((e) => e.streamName === s));
    await store.append(s, [ev('New')]);
    expect((await seen).filter((e) => e.streamName === s).map((e) => e.type)).toEqual(['New']);
  });

  it('starts a subscription from START with the very first event of the log', async () => {
    const store = getStore();
    await store.append(stream(), [ev('Any')]);
    const [first] = await store.readAll(START, 1);
    const seen = await collect(store, START, (got) => got.length >= 1);
    expect(seen[0]!.id).toBe(first!.id);
  });

  it('finds an event by its id, and the events of one correlation in log order', async () => {
    const store = getStore();
    const s = stream('audit');
    const correlationId = randomUUID();
    const causeId = randomUUID();
    await store.append(s, [
      { id: causeId, type: 'Cause', data: { n: 1 }, metadata: { correlationId } },
      { type: 'Unrelated', data: {}, metadata: { correlationId: randomUUID() } },
    ]);
    await store.append(stream('audit'), [
      { type: 'Effect', data: { n: 2 }, metadata: { correlationId, causationId: causeId } },
    ]);
    const found = await store.readEvent(causeId);
    expect([found?.id, found?.type, found?.data, found?.streamName]).toEqual([causeId, 'Cause', { n: 1 }, s]);
    expect(await store.readEvent(randomUUID())).toBeNull();
    expect(await store.readEvent('not-a-uuid')).toBeNull();
    const chain = await store.readCorrelated(correlationId);
    expect(chain.map((e) => [e.type, e.metadata.causationId ?? null])).toEqual([
      ['Cause', null],
      ['Effect', causeId],
    ]);
    expect(await store.readCorrelated(randomUUID())).toEqual([]);
  });
}
