/**
 * The service under test, in a process of its own (so the HTTP client does not share its event loop), on
 * the PostgreSQL of DATABASE_URL or embedded PGlite, with a fixed clock. It also measures live projection
 * lag: every append's acknowledgement time, then the time every read model has applied that position.
 * Talks to the benchmark over IPC: sends {port} once listening; answers 'lag' with the lags since the
 * last 'lag' and its RSS.
 */
import fs from 'node:fs';
import http from 'node:http';
import inspector from 'node:inspector';
import v8 from 'node:v8';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config';
import { createSqlEventStore } from '../../src/eventstore/sql';
import type { EventStore, Position } from '../../src/eventstore/types';
import { openDatabase, createSystem } from '../../src/system';
import { allProjections } from '../../projections';
import { Client as PgClient } from 'pg';

/** BENCH_COUNT_QUERIES=1: counts the statements sent to PostgreSQL, by text, answered on 'queries'. */
const queryCounts = new Map<string, number>();
if (process.env.BENCH_COUNT_QUERIES) {
  const original = PgClient.prototype.query as (...args: unknown[]) => unknown;
  PgClient.prototype.query = function (this: PgClient, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string })?.text);
    const key = text.replace(/\s+/g, ' ').slice(0, 90);
    queryCounts.set(key, (queryCounts.get(key) ?? 0) + 1);
    return original.apply(this, args);
  } as typeof PgClient.prototype.query;
}

async function main() {
  const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'error' });
  const db = await openDatabase(config);
  const inner = await createSqlEventStore(db);
  const lags: number[] = [];
  let readModels: string[] = [];
  /** Set once the system runs: times one acknowledged append until the read models have it. */
  const probe: { on?: (p: Position, at: number) => void } = {};
  const observe = async <T extends { position: Position }>(result: Promise<T>): Promise<T> => {
    const r = await result;
    probe.on?.(r.position, performance.now());
    return r;
  };
  // The store as the service sees it, with every acknowledged append timed.
  const store: EventStore = {
    ...inner,
    kind: inner.kind,
    append: (s, e, o) => observe(inner.append(s, e, o)),
    appendMany: inner.appendMany
      ? async (appends) => {
          const results = await inner.appendMany!(appends);
          probe.on?.(results[results.length - 1]!.position, performance.now());
          return results;
        }
      : undefined,
  };
  const clock = () => new Date(process.env.BENCH_NOW ?? '2026-12-01T08:00:00Z');
  const system = await createSystem(config, { db, store, clock });
  readModels = allProjections({ ...system.deps, store, clock })
    .filter((p) => p.apply)
    .map((p) => p.name);
  probe.on = (position, at) => {
    void system.runner.waitFor(position, 10_000, readModels).then((ok) => {
      lags.push(ok ? performance.now() - at : 10_000);
    });
  };
  const server = http.createServer(system.app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // Since the last 'lag': the event loop's delays and the GC pauses (what a lag's tail waits behind).
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
  let gcPauses: number[] = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcPauses.push(e.duration);
  }).observe({ entryTypes: ['gc'] });
  // BENCH_ALLOC=file: a sampling profile of everything allocated (collected or not) until 'stop'.
  let allocSession = process.env.BENCH_ALLOC ? new inspector.Session() : null;
  if (allocSession) {
    allocSession.connect();
    allocSession.post('HeapProfiler.startSampling', {
      samplingInterval: 16384,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    } as object);
  }
  process.on('message', (msg: { cmd: string }) => {
    if (msg.cmd === 'queries') {
      process.send!({ queries: Object.fromEntries(queryCounts) });
      queryCounts.clear();
    } else if (msg.cmd === 'settle') {
      // Waits (at most 30 s) until every projection, process managers included, has what the log holds now:
      // the work a burst of bookings caused is then done. Answers the milliseconds waited.
      const t0 = performance.now();
      void inner.headPosition().then(async (head) => {
        while (performance.now() - t0 < 30_000) {
          const behind = system.runner
            .status()
            .filter(
              (p) =>
                p.state !== 'standby' && (p.position === null || BigInt(p.position.commit) < head.commit),
            );
          if (!behind.length) break;
          await new Promise((r) => setTimeout(r, 5));
        }
        process.send!({ settledMs: performance.now() - t0 });
      });
    } else if (msg.cmd === 'lag') {
      const m = process.memoryUsage();
      // With --expose-gc (BENCH_NODE_ARGS): what the heap holds once its garbage is collected.
      const gc = (globalThis as { gc?: () => void }).gc;
      if (gc) {
        gc();
        console.log(`after a full GC: heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MB`);
      }
      const spaces = Object.fromEntries(
        v8.getHeapSpaceStatistics().map((s) => [s.space_name, Math.round(s.space_size / 2 ** 20)]),
      );
      process.send!({
        lags: lags.splice(0),
        rss: m.rss,
        heapUsed: m.heapUsed,
        heapTotal: m.heapTotal,
        external: m.external,
        spaces,
        loop: { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
        gc: {
          count: gcPauses.length,
          total: gcPauses.reduce((a, b) => a + b, 0),
          max: Math.max(0, ...gcPauses),
        },
      });
      loopDelay.reset();
      gcPauses = [];
    } else if (msg.cmd === 'stop' && allocSession) {
      const session = allocSession;
      allocSession = null;
      session.post('HeapProfiler.stopSampling', (err, res) => {
        if (!err) fs.writeFileSync(process.env.BENCH_ALLOC!, JSON.stringify(res.profile));
        session.disconnect();
        process.emit('message', { cmd: 'stop' }, undefined);
      });
      return;
    } else if (msg.cmd === 'stop') {
      server.close();
      void system
        .close()
        .then(() => inner.close())
        .then(() => db.close())
        .then(() => process.exit(0));
    }
  });
  process.send!({ port: (server.address() as AddressInfo).port });
}

void main();
