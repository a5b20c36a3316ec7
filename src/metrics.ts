import client from 'prom-client';
import type { Middleware } from 'koa';
import type { EventStore, Position } from './eventstore/types';
import { START } from './eventstore/types';
import { isPermanentMailError, type Mailer } from './mail/mailer';
import type { ProjectionRunner } from '../projections/runner';
import type { ReadCacheStats } from './readModels/readCache';

/**
 * Prometheus metrics of one service instance (served at `GET /metrics`, see src/http/metricsRoute.ts).
 * Each system owns its registry (tests run several systems in one process; the global one would mix them).
 * Wrappers measure at the ports (HTTP, event store, mailer), so no domain code knows about metrics.
 */
export interface Metrics {
  registry: client.Registry;
  /** Times every request; the route label is the router's pattern, never the raw path (bounded labels). */
  http: Middleware;
  /**
   * How the app finds the pattern of a request refused before it reached its route (a token that is not
   * valid, a body that is not JSON); without it such a request is `(unmatched)`, like an unknown path.
   */
  routesFrom(patternOf: (method: string, path: string) => string | undefined): void;
  instrumentStore(store: EventStore): EventStore;
  instrumentMailer(mailer: Mailer): Mailer;
  /** Projection lag is measured at scrape time against the store's head. */
  watchProjections(store: EventStore, runner: ProjectionRunner): void;
  /** A cache of computed reads (src/readModels/readCache.ts), read at scrape time. */
  watchReadCache(name: string, stats: () => ReadCacheStats): void;
}

/** Request durations in seconds: 5 ms to 10 s. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const APPEND_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Beyond this, `projection_lag_events` of an EventStoreDB store (no dense positions) stops counting. */
const LAG_COUNT_CAP = 10_000;

/** The booking route (endpoint 8): its 409s are the conflicts an operator watches. */
const BOOKING_ROUTE = '/api/v1/service/:service_id';

export function createMetrics(): Metrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });

  const httpDuration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  const appendDuration = new client.Histogram({
    name: 'eventstore_append_duration_seconds',
    help: 'Event store append duration (one call, any number of events) by store kind and outcome',
    labelNames: ['store', 'outcome'] as const,
    buckets: APPEND_BUCKETS,
    registers: [registry],
  });
  const emailDeliveries = new client.Counter({
    name: 'email_deliveries_total',
    help: 'E-mail send attempts by outcome: sent, deferred (temporary refusal, retried later), failed (permanent refusal, or a temporary one on the last try)',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const bookingConflicts = new client.Counter({
    name: 'booking_conflicts_total',
    help: "Bookings refused with 409, by the answer's error code: slot_unavailable (taken or outside the schedule), conflict (calendar busy, or a keyed retry still running), package_exhausted, package_expired, package_canceled, package_unpaid",
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  for (const status of ['sent', 'deferred', 'failed']) emailDeliveries.inc({ status }, 0);
  for (const reason of ['slot_unavailable', 'conflict']) bookingConflicts.inc({ reason }, 0);

  let patternOf: (method: string, path: string) => string | undefined = () => undefined;
  const http: Middleware = async (ctx, next) => {
    const end = httpDuration.startTimer();
    try {
      await next();
    } finally {
      const route = (ctx as unknown as { _matchedRoute?: unknown })._matchedRoute;
      const pattern = typeof route === 'string' ? route : (patternOf(ctx.method, ctx.path) ?? '(unmatched)');
      end({ method: ctx.method, route: pattern, status: String(ctx.status) });
      if (pattern === BOOKING_ROUTE && ctx.method === 'POST' && ctx.status === 409) {
        const reason = (ctx.body as { error?: unknown } | undefined)?.error;
        bookingConflicts.inc({ reason: typeof reason === 'string' ? reason : 'conflict' });
      }
    }
  };

  /** One append call (single- or multi-stream) timed, by its outcome. */
  const timed = async <T>(kind: EventStore['kind'], call: () => Promise<T>): Promise<T> => {
    const end = appendDuration.startTimer({ store: kind });
    try {
      const result = await call();
      end({ outcome: 'ok' });
      return result;
    } catch (err) {
      end({ outcome: (err as Error)?.name === 'WrongExpectedRevisionError' ? 'conflict' : 'error' });
      throw err;
    }
  };
  // Wrappers inherit every other member from the wrapped object, so a port that grows a method stays whole.
  // Multi-stream appends are timed too: on the SQL stores every booking is one (before, the histogram missed
  // them, and their conflicts, entirely). A store without them keeps none (callers test for it).
  const instrumentStore = (store: EventStore): EventStore =>
    Object.assign(Object.create(store) as EventStore, {
      append: (...args: Parameters<EventStore['append']>) => timed(store.kind, () => store.append(...args)),
      ...(store.appendMany
        ? {
            appendMany: (...args: Parameters<NonNullable<EventStore['appendMany']>>) =>
              timed(store.kind, () => store.appendMany!(...args)),
          }
        : {}),
    });

  const instrumentMailer = (mailer: Mailer): Mailer =>
    Object.assign(Object.create(mailer) as Mailer, {
      async send(...args: Parameters<Mailer['send']>) {
        try {
          const sent = await mailer.send(...args);
          emailDeliveries.inc({ status: 'sent' });
          return sent;
        } catch (err) {
          // The last try's temporary refusal fails the e-mail like a permanent one: nothing retries it.
          const failed = isPermanentMailError(err) || args[1]?.last === true;
          emailDeliveries.inc({ status: failed ? 'failed' : 'deferred' });
          throw err;
        }
      },
    });

  const watchProjections = (store: EventStore, runner: ProjectionRunner) => {
    // Both gauges are filled by one measurement per scrape (the first collect() call of a scrape does it).
    // An event store that does not answer leaves the lag out (no samples) rather than failing the scrape:
    // a rejected collect() made `/metrics` a 500, and the process and HTTP metrics were lost with it.
    let pending: Promise<Map<string, { events: number; seconds: number }>> | null = null;
    const measure = () => {
      pending ??= measureLag(store, runner)
        .catch(() => new Map<string, { events: number; seconds: number }>())
        .finally(() => setTimeout(() => (pending = null), 0));
      return pending;
    };
    new client.Gauge({
      name: 'projection_lag_events',
      help: 'Events in the global log after the projection checkpoint (all types, also those it skips)',
      labelNames: ['projection'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const [projection, lag] of await measure()) this.set({ projection }, lag.events);
      },
    });
    new client.Gauge({
      name: 'projection_lag_seconds',
      help: 'Age of the oldest event the projection has not processed yet (0 when caught up)',
      labelNames: ['projection'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const [projection, lag] of await measure()) this.set({ projection }, lag.seconds);
      },
    });
  };

  // Read caches: their counters live in the caches; the samples are read from them at scrape time.
  const caches = new Map<string, () => ReadCacheStats>();
  const cacheMetric = <T extends 'Counter' | 'Gauge'>(
    kind: T,
    name: string,
    help: string,
    field: keyof ReadCacheStats,
  ) =>
    new client[kind]({
      name,
      help,
      labelNames: ['cache'] as const,
      registers: [registry],
      collect(this: client.Counter | client.Gauge) {
        this.reset();
        for (const [cache, stats] of caches) (this as client.Gauge).inc({ cache }, stats()[field]);
      },
    });
  cacheMetric('Counter', 'read_cache_hits_total', 'Reads answered from the cache, by cache', 'hits');
  cacheMetric(
    'Counter',
    'read_cache_misses_total',
    'Reads computed (no entry, another version, out of date)',
    'misses',
  );
  cacheMetric(
    'Counter',
    'read_cache_evictions_total',
    'Entries dropped to stay within the bounds',
    'evictions',
  );
  cacheMetric('Gauge', 'read_cache_entries', 'Entries held', 'entries');
  cacheMetric('Gauge', 'read_cache_bytes', 'Approximate bytes held (answers, keys and tokens)', 'bytes');
  const watchReadCache = (name: string, stats: () => ReadCacheStats) => {
    caches.set(name, stats);
  };

  const routesFrom = (find: typeof patternOf) => {
    patternOf = find;
  };
  return { registry, http, routesFrom, instrumentStore, instrumentMailer, watchProjections, watchReadCache };
}

/** Lag of every projection the runner reports, against the store's head. */
export async function measureLag(
  store: EventStore,
  runner: ProjectionRunner,
  // Wall time, not the injected domain clock: `createdAt` is the store's wall time of the append.
  now: () => number = Date.now,
): Promise<Map<string, { events: number; seconds: number }>> {
  const head = await store.headPosition();
  const out = new Map<string, { events: number; seconds: number }>();
  for (const p of runner.status()) {
    // A process manager on standby runs on another instance: its lag is measured there.
    if (p.state === 'standby') continue;
    const at: Position = p.position
      ? { commit: BigInt(p.position.commit), prepare: BigInt(p.position.prepare) }
      : START;
    if (at.commit >= head.commit) {
      out.set(p.name, { events: 0, seconds: 0 });
      continue;
    }
    const next = await store.readAll(at, 1);
    const oldest = next[0];
    const seconds = oldest ? Math.max(0, (now() - oldest.createdAt.getTime()) / 1000) : 0;
    // SQL stores number the log from 1 by a sequence (a rolled-back append leaves a gap, so this is an upper
    // bound); EventStoreDB positions are byte offsets, so there the events are counted, up to a cap.
    const events =
      store.kind === 'esdb'
        ? (await store.readAll(at, LAG_COUNT_CAP)).length
        : Number(head.commit - (at.commit < 0n ? 0n : at.commit));
    out.set(p.name, { events: oldest ? events : 0, seconds });
  }
  return out;
}
