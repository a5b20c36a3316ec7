import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { EventStoreDBClient, binaryEvent, jsonEvent } from '@eventstore/db-client';
import { createEsdbEventStore } from '../../src/eventstore/esdb';
import {
  EventStoreUnavailableError,
  START,
  type EventStore,
  type RecordedEvent,
} from '../../src/eventstore/types';
import { isTransient } from '../../projections/runner';
import { startEsdbDouble, type EsdbDouble } from '../support/esdbDouble';

/**
 * The EventStoreDB adapter against the wire-level double: what only a gRPC server can show (leaked calls,
 * server-ended subscriptions, a restarted node, answers past their deadline, system events in $all).
 */
describe('EventStoreDB adapter on the wire (double)', () => {
  let double: EsdbDouble;
  let store: EventStore;
  beforeEach(async () => {
    double = await startEsdbDouble();
    store = createEsdbEventStore(double.url);
  });
  afterEach(async () => {
    await within(store.close(), 2000);
    await double.close();
  });

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** 'done' when `p` settles within `ms`, else 'hung' (the timer is cleared either way). */
  const within = async (p: Promise<unknown>, ms: number) => {
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<string>((r) => (timer = setTimeout(() => r('hung'), ms)));
    const result = await Promise.race([p.then(() => 'done'), hung]);
    clearTimeout(timer);
    return result;
  };
  const ev = (type: string, data: unknown = {}) => ({ type, data });

  // BatchAppend in the client crashed the process (see the next test) and its calls have no deadline: every
  // append goes on its own Append call, with the client's deadline, whatever the server advertises.
  it('sends appends through Append, also when the server advertises BatchAppend; none is left for a proxy to end', async () => {
    const first = `s-${randomUUID()}`;
    await store.append(first, [ev('A')]);
    expect(double.stats().calls).toMatchObject({ batchAppend: 0, append: 1 });
    // A proxy (or a node shutting down) ending BatchAppend calls with OK finds none of ours: the appends after
    // it are answered as before (the one long-lived BatchAppend call kept them waiting for ever).
    expect(double.endBatchAppends()).toBe(0);
    await store.append(first, [ev('B')], { expectedRevision: 0n });
    expect(double.stats().calls).toMatchObject({ batchAppend: 0, append: 2 });
    const plain = await startEsdbDouble({ batchAppend: false });
    const other = createEsdbEventStore(plain.url);
    const s = `s-${randomUUID()}`;
    await other.append(s, [ev('A')], { expectedRevision: 'no_stream' });
    const err = await other.append(s, [ev('B')], { expectedRevision: 'no_stream' }).catch((e: unknown) => e);
    expect((err as { actual?: unknown }).actual).toBe(0n);
    expect(plain.stats().calls).toMatchObject({ batchAppend: 0, append: 2 });
    await other.close();
    await plain.close();
  });

  // @eventstore/db-client 6.2.1 keeps the appends waiting on BatchAppend calls in one module-wide map: an
  // "error" on any client's call rejected and forgot every client's pending appends, and their answers, when
  // they came on a healthy call, threw a TypeError inside the client's gRPC handler: an uncaught exception,
  // the process down. A renewed client left beside the old one (or a second store) was enough, the old call
  // erroring later (a node restart, a keepalive timeout on a half-open connection, a dispose).
  it("an append waiting for its answer while another client's call fails: answered once, nothing thrown", async () => {
    const other = createEsdbEventStore(double.url);
    const s = `s-${randomUUID()}`;
    await store.append(s, [ev('A')]);
    await other.append(`o-${randomUUID()}`, [ev('A')]);
    const sent = () => double.stats().calls.append + double.stats().calls.batchAppend;
    const before = sent();
    double.delayAnswers(300);
    const id = randomUUID();
    const pending = store.append(s, [{ id, ...ev('B') }], { expectedRevision: 0n });
    await waitUntil(() => sent() > before);
    // Closing the other store cancels its calls: its BatchAppend call, if it had one, emits "error".
    await other.close();
    const res = await pending;
    double.delayAnswers(0);
    const { events } = await store.readStream(s);
    expect(events.map((e) => e.type)).toEqual(['A', 'B']);
    expect(res.nextRevision).toBe(events.find((e) => e.id === id)!.revision);
    await store.append(s, [ev('C')], { expectedRevision: 1n });
  });

  it('reads that stop early release their gRPC calls, so close() returns', async () => {
    const s = `s-${randomUUID()}`;
    for (let i = 0; i < 6; i++) await store.append(s, [ev('A', { i }), ev('B', { i })]);
    for (let i = 0; i < 20; i++) await store.ping();
    for (let i = 0; i < 5; i++) await store.headPosition();
    for (let i = 0; i < 5; i++) expect(await store.readAll({ commit: -1n, prepare: -1n }, 2)).toHaveLength(2);
    expect(await within(store.close(), 5000)).toBe('done');
  });

  it('headPosition is the last event a subscriber sees, never a system event after it', async () => {
    const { position } = await store.append(`s-${randomUUID()}`, [ev('A')]);
    double.writeSystemEvent();
    double.writeSystemEvent();
    expect(await store.headPosition()).toEqual(position);
  });

  it('readStream reports the revision of the last event in the stream, also one it does not return', async () => {
    const s = `s-${randomUUID()}`;
    await store.append(s, [ev('A')]);
    // Another writer (an operator's tool) appends a binary event the adapter does not hand out.
    const raw = EventStoreDBClient.connectionString(double.url);
    await raw.appendToStream(s, [binaryEvent({ type: 'Blob', data: Buffer.from([1, 2, 3]) })]);
    await raw.appendToStream(s, [jsonEvent({ type: '$internal', data: {} })]);
    await raw.dispose();
    const read = await store.readStream(s);
    expect(read.events.map((e) => e.type)).toEqual(['A']);
    expect(read.revision).toBe(2n);
    await store.append(s, [ev('B')], { expectedRevision: read.revision });
  });

  /** A subscription from the current head whose errors are collected. */
  const watch = async () => {
    const seen: RecordedEvent[] = [];
    const errors: unknown[] = [];
    const sub = store.subscribe({
      from: await store.headPosition(),
      handler: async (batch) => void seen.push(...batch),
      onError: (err) => errors.push(err),
    });
    await waitUntil(() => double.stats().subscriptions === 1);
    return { seen, errors, sub };
  };
  const waitUntil = async (cond: () => boolean, ms = 5000) => {
    const end = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > end) throw new Error('condition not reached');
      await sleep(10);
    }
  };

  it('a subscription the server ends with OK is reported as a transient error, not a silent stop', async () => {
    const { errors, sub } = await watch();
    expect(double.endSubscriptions()).toBe(1);
    await waitUntil(() => errors.length > 0);
    expect(isTransient(errors[0])).toBe(true);
    await sub.stop();
  });

  it('a subscription the server ends with an error is reported as transient', async () => {
    const { errors, sub } = await watch();
    expect(double.failSubscription(status.UNAVAILABLE)).toBe(true);
    await waitUntil(() => errors.length > 0);
    expect(isTransient(errors[0])).toBe(true);
    await sub.stop();
  });

  it('stopping a subscription is not an error', async () => {
    const { errors, seen, sub } = await watch();
    const s = `s-${randomUUID()}`;
    await store.append(s, [ev('A')]);
    await waitUntil(() => seen.length === 1);
    await sub.stop();
    await sleep(50);
    expect(errors).toEqual([]);
    expect(double.stats().subscriptions).toBe(0);
  });

  it('a node restart: subscriptions fail with a transient error, the data is kept, the client reconnects', async () => {
    const s = `s-${randomUUID()}`;
    await store.append(s, [ev('Before')]);
    const { errors, sub } = await watch();
    await double.restart({ downMs: 200 });
    await waitUntil(() => errors.length > 0);
    expect(isTransient(errors[0])).toBe(true);
    await sub.stop();
    // The first call after the drop may still meet the dead connection; the next one reconnects.
    await store.ping().catch((err: unknown) => expect(isTransient(err)).toBe(true));
    await store.append(s, [ev('After')], { expectedRevision: 0n });
    expect((await store.readStream(s)).events.map((e) => e.type)).toEqual(['Before', 'After']);
  });

  it('an append that meets a restarting node is tried again and lands once', async () => {
    const s = `s-${randomUUID()}`;
    await store.append(s, [ev('Before')]);
    const restarted = double.restart({ downMs: 400 });
    await store.append(s, [ev('During')], { expectedRevision: 0n });
    await restarted;
    expect((await store.readStream(s)).events.map((e) => e.type)).toEqual(['Before', 'During']);
  });

  it('a node back up but not ready yet (or too busy) is waited for: an append lands once it is ready', async () => {
    const s = `s-${randomUUID()}`;
    await store.append(s, [ev('Before')]);
    // A real node accepts connections while it opens its database and becomes leader; Append answers
    // UNAVAILABLE "Server Is Not Ready" (BatchAppend, a bare status the client reports as an UnknownError).
    await double.restart({ downMs: 100, notReadyMs: 700 });
    await store.append(s, [ev('During')], { expectedRevision: 0n });
    double.notReady(500, { busy: true });
    await store.append(s, [ev('Busy')], { expectedRevision: 1n });
    expect((await store.readStream(s)).events.map((e) => e.type)).toEqual(['Before', 'During', 'Busy']);
  });

  it('a node that stays not ready: appends and reads fail with EventStoreUnavailableError (transient)', async () => {
    const s = `s-${randomUUID()}`;
    await store.append(s, [ev('A')]);
    double.notReady(5000);
    const append = await store.append(s, [ev('B')]).catch((e: unknown) => e);
    expect(append).toBeInstanceOf(EventStoreUnavailableError);
    expect(isTransient(append)).toBe(true);
    expect(await store.readStream(s).catch((e: unknown) => e)).toBeInstanceOf(EventStoreUnavailableError);
    double.notReady(0);
    expect((await store.readStream(s)).events.map((e) => e.type)).toEqual(['A']);
  });

  it('a node that stays down: calls fail with EventStoreUnavailableError (transient), health says down', async () => {
    const s = `s-${randomUUID()}`;
    await store.append(s, [ev('A')]);
    const restarted = double.restart({ downMs: 4000 });
    const err = await store.append(s, [ev('B')]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EventStoreUnavailableError);
    expect(isTransient(err)).toBe(true);
    expect(await store.ping().catch((e: unknown) => e)).toBeInstanceOf(EventStoreUnavailableError);
    await restarted;
    await store.append(s, [ev('C')]);
    expect((await store.readStream(s)).events.map((e) => e.type)).toEqual(['A', 'C']);
  });

  it('connections the node closes mid-call (GOAWAY with an error code): only transient errors, each append once', async () => {
    // Calls cut this way end without a gRPC status: the client reports INTERNAL "Received RST_STREAM ...
    // (Call ended without gRPC status)", which is a lost connection like UNAVAILABLE, not a broken request.
    const { errors, sub } = await watch();
    let running = true;
    let dropped = 0;
    const dropper = (async () => {
      while (running) {
        await sleep(10 + Math.random() * 40);
        dropped += double.dropConnections();
      }
    })();
    const landed: string[] = [];
    const other: string[] = [];
    await Promise.all(
      Array.from({ length: 100 }, async (_, k) => {
        const s = `cut-${k}-${randomUUID()}`;
        for (let i = 0; i < 6; i++) {
          const id = randomUUID();
          const call = i % 2 ? store.readStream(s) : store.append(s, [{ id, ...ev('A', { i }) }]);
          try {
            await call;
            if (i % 2 === 0) landed.push(id);
          } catch (err) {
            if (!(err instanceof EventStoreUnavailableError)) other.push(String(err));
          }
        }
      }),
    );
    running = false;
    await dropper;
    expect(dropped).toBeGreaterThan(0);
    expect(other).toEqual([]);
    await waitUntil(() => errors.length > 0 || double.stats().subscriptions === 0);
    await sub.stop();
    expect(errors.filter((e) => !isTransient(e))).toEqual([]);
    // Whatever was answered as written is in the log once; nothing is there twice.
    const ids = (await store.readAll({ commit: -1n, prepare: -1n }, 10_000)).map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(landed.filter((id) => !ids.includes(id))).toEqual([]);
  }, 60_000);

  it('a stalled node: ping says down within its short deadline (the client gives reads none), close() returns', async () => {
    await store.ping();
    double.delayAnswers(15_000);
    const started = Date.now();
    const errors = await Promise.all([1, 2, 3].map(() => store.ping().catch((e: unknown) => e)));
    expect(errors.every((e) => e instanceof EventStoreUnavailableError)).toBe(true);
    expect(Date.now() - started).toBeLessThan(4000);
    double.delayAnswers(0);
    await store.ping();
    // The reads that timed out were cancelled: nothing is left for dispose() to wait for.
    double.delayAnswers(15_000);
    await store.ping().catch(() => undefined);
    expect(await within(store.close(), 3000)).toBe('done');
    double.delayAnswers(0);
  });

  // The option as the client reads it: its key in any case, with `_` or `-` (it read 10 s for the reads then).
  it.each(['defaultDeadline', 'default_deadline'])(
    'a stalled node: reads fail past the deadline appends have (transient), instead of waiting for ever (%s)',
    async (option) => {
      const quick = createEsdbEventStore(`${double.url}&${option}=400`);
      const s = `s-${randomUUID()}`;
      await quick.append(s, [ev('A')]);
      double.delayAnswers(15_000);
      const started = Date.now();
      const errors = await Promise.all([
        quick.readStream(s).catch((e: unknown) => e),
        quick.readAll({ commit: -1n, prepare: -1n }).catch((e: unknown) => e),
        quick.headPosition().catch((e: unknown) => e),
      ]);
      expect(errors.map((e) => (e instanceof EventStoreUnavailableError ? 'unavailable' : e))).toEqual([
        'unavailable',
        'unavailable',
        'unavailable',
      ]);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(await within(quick.close(), 3000)).toBe('done');
      double.delayAnswers(0);
      expect((await store.readStream(s)).events.map((e) => e.type)).toEqual(['A']);
    },
  );

  it('an append answered past its deadline fails with a transient error and writes nothing', async () => {
    const quick = createEsdbEventStore(`${double.url}&defaultDeadline=300`);
    const s = `s-${randomUUID()}`;
    await quick.append(s, [ev('A')]);
    double.delayAnswers(1000);
    const err = await quick.append(s, [ev('B')]).catch((e: unknown) => e);
    // On failure, the error itself is shown.
    expect(isTransient(err) ? 'transient' : err).toBe('transient');
    double.delayAnswers(0);
    expect((await quick.readStream(s)).events.map((e) => e.type)).toEqual(['A']);
    await quick.close();
  });

  /** A store whose EventStoreDB clients the test can reach (to close the channel under one, say). */
  const reachable = () => {
    const clients: EventStoreDBClient[] = [];
    const own = createEsdbEventStore(double.url, { onClient: (c) => clients.push(c) });
    /** Closes the current client's gRPC channel, as the client does to a channel it gives up on. */
    const closeChannel = async () => {
      const client = clients[clients.length - 1] as unknown as { getChannel(): Promise<{ close(): void }> };
      (await client.getChannel()).close();
    };
    return { own, clients, closeChannel };
  };

  // grpc-js throws a plain Error "Channel has been shut down" for a call started on a closed channel (the
  // client closes a channel it reconnects from, under calls about to start on it); the client then keeps
  // handing out that channel to reads. Was a raw error (500) on every read until the service restarted.
  it.each(['append', 'readStream', 'readAll', 'headPosition', 'ping', 'subscribe'] as const)(
    'a call started on a closed gRPC channel (%s first) is a transient error at worst, and a new client serves every call after it',
    async (first) => {
      const { own, clients, closeChannel } = reachable();
      const s = `s-${randomUUID()}`;
      await own.append(s, [ev('A')]);
      await own.readStream(s);
      await closeChannel();
      const errors: unknown[] = [];
      if (first === 'append') await own.append(s, [ev('B')], { expectedRevision: 0n });
      if (first === 'readStream') expect((await own.readStream(s)).revision).toBe(0n);
      if (first === 'readAll') expect((await own.readAll({ commit: -1n, prepare: -1n })).length).toBe(1);
      if (first === 'headPosition') await own.headPosition();
      if (first === 'ping') await own.ping().catch((e: unknown) => errors.push(e));
      if (first === 'subscribe') {
        const sub = own.subscribe({
          from: START,
          handler: async () => undefined,
          onError: (e) => errors.push(e),
        });
        await waitUntil(() => errors.length > 0 || double.stats().subscriptions === 1);
        await sub.stop();
      }
      expect(errors.filter((e) => !(e instanceof EventStoreUnavailableError))).toEqual([]);
      // Every kind of call works again, with no new store (no service restart).
      const next = first === 'append' ? 1n : 0n;
      await own.append(s, [ev('C')], { expectedRevision: next });
      expect((await own.readStream(s)).events.map((e) => e.type)).toEqual(
        first === 'append' ? ['A', 'B', 'C'] : ['A', 'C'],
      );
      await own.ping();
      const seen: RecordedEvent[] = [];
      const sub = own.subscribe({ from: START, handler: async (b) => void seen.push(...b) });
      await waitUntil(() => seen.length === Number(next) + 2);
      await sub.stop();
      expect(clients).toHaveLength(2);
      expect(await within(own.close(), 3000)).toBe('done');
    },
  );

  // Whether an append whose answer did not come was written is not known: its call's deadline passed (a
  // stalled node, a half-open connection), or a proxy ended the call with OK and no answer. The log says.
  it.each([
    ['written', 'stalled'],
    ['dropped', 'stalled'],
    ['written', 'ended'],
    ['dropped', 'ended'],
  ] as const)(
    'an append whose call gets no answer (%s, call %s): looked up again with the same ids, answered, in the log once',
    async (next, how) => {
      const quick = createEsdbEventStore(`${double.url}&defaultDeadline=500`);
      const s = `s-${randomUUID()}`;
      await quick.append(s, [ev('A')]);
      for (const expectedRevision of [0n, 'any'] as const) {
        double.leaveAppendsUnanswered({ next, end: how === 'ended' });
        const started = Date.now();
        const sent = double.stats().calls.append;
        const id = randomUUID();
        const res = await quick.append(s, [{ id, ...ev('B') }], { expectedRevision });
        expect(Date.now() - started).toBeLessThan(4000);
        // Written: found in the log, not sent again; dropped: not there, so sent again.
        expect(double.stats().calls.append - sent).toBe(next === 'written' ? 1 : 2);
        const { events } = await quick.readStream(s);
        expect(events.filter((e) => e.id === id)).toHaveLength(1);
        expect(res.nextRevision).toBe(events.find((e) => e.id === id)!.revision);
      }
      expect((await quick.readStream(s)).events.map((e) => e.type)).toEqual(['A', 'B', 'B']);
      expect(await within(quick.close(), 3000)).toBe('done');
    },
  );

  it('an append the server never answers fails within about twice its deadline, transient, and writes nothing', async () => {
    const quick = createEsdbEventStore(`${double.url}&defaultDeadline=500`);
    const s = `s-${randomUUID()}`;
    await quick.append(s, [ev('A')]);
    double.leaveAppendsUnanswered({ next: 'dropped', count: 10 });
    const started = Date.now();
    const sent = double.stats().calls.append;
    const err = await quick.append(s, [ev('B')]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EventStoreUnavailableError);
    expect(isTransient(err)).toBe(true);
    expect(Date.now() - started).toBeLessThan(5000);
    // Sent, looked up, sent once more: then given up.
    expect(double.stats().calls.append - sent).toBe(2);
    double.leaveAppendsUnanswered({ next: 'dropped', count: 0 });
    await quick.append(s, [ev('C')], { expectedRevision: 0n });
    expect((await quick.readStream(s)).events.map((e) => e.type)).toEqual(['A', 'C']);
    expect(await within(quick.close(), 3000)).toBe('done');
  });

  it("an append over the node's 1 MiB MaxAppendSize is refused as the server does, writing nothing", async () => {
    const plain = await startEsdbDouble({ batchAppend: false });
    const other = createEsdbEventStore(plain.url);
    for (const s of [store, other]) {
      const stream = `s-${randomUUID()}`;
      const big = { x: 'a'.repeat(1024 * 1024) };
      const err = await s.append(stream, [ev('Big', big)]).catch((e: unknown) => e);
      expect((err as { type?: unknown }).type).toBe('maximum-append-size-exceeded');
      expect((await s.readStream(stream)).revision).toBe('no_stream');
      await s.append(stream, [ev('Fits', { x: 'a'.repeat(1000 * 1024) })]);
    }
    await other.close();
    await plain.close();
  });

  it('system events are in $all on the server and never reach readAll or subscribers', async () => {
    const s = `s-${randomUUID()}`;
    for (let i = 0; i < 4; i++) await store.append(s, [ev('A', { i })]);
    double.writeSystemEvent();
    const all = await store.readAll({ commit: -1n, prepare: -1n }, 100);
    expect(all.every((e) => !e.type.startsWith('$') && !e.streamName.startsWith('$'))).toBe(true);
    expect(all.filter((e) => e.streamName === s)).toHaveLength(4);
    expect(double.stats().events).toBeGreaterThan(all.length);
  });
});
