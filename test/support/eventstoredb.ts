import { dockerAvailable } from './services';
import { startEsdbDouble, type EsdbDouble } from './esdbDouble';

/**
 * Where the EventStoreDB suites run, decided without I/O: EVENTSTORE_URL (an esdb:// URL) first, then an
 * EventStoreDB container where a Docker engine answers, then the wire-level double (test/support/esdbDouble).
 */
export function eventStoreDbPlan():
  { kind: 'url'; url: string } | { kind: 'container' } | { kind: 'double' } {
  const url = process.env.EVENTSTORE_URL;
  if (url?.startsWith('esdb')) return { kind: 'url', url };
  if (dockerAvailable()) return { kind: 'container' };
  return { kind: 'double' };
}

export interface RunningEventStoreDb {
  url: string;
  /** What answers: a server named by EVENTSTORE_URL, a container, or the double (with its fault switches). */
  kind: 'url' | 'container' | 'double';
  double?: EsdbDouble;
  stop(): Promise<void>;
}

/** An EventStoreDB to test against, per the plan. */
export async function startEventStoreDb(): Promise<RunningEventStoreDb> {
  const plan = eventStoreDbPlan();
  if (plan.kind === 'url') return { kind: 'url', url: plan.url, stop: async () => undefined };
  if (plan.kind === 'container') {
    const c = await startEventStoreDbContainer();
    return { kind: 'container', url: c.url, stop: c.stop };
  }
  const double = await startEsdbDouble();
  return { kind: 'double', url: double.url, double, stop: () => double.close() };
}

/** Starts EventStoreDB with testcontainers; returns its URL and a stop function. */
export async function startEventStoreDbContainer(): Promise<{ url: string; stop: () => Promise<void> }> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const c = await new GenericContainer('eventstore/eventstore:24.10')
    .withEnvironment({
      EVENTSTORE_INSECURE: 'true',
      EVENTSTORE_RUN_PROJECTIONS: 'None',
      EVENTSTORE_MEM_DB: 'true',
    })
    .withExposedPorts(2113)
    .withWaitStrategy(Wait.forHttp('/health/live', 2113).forStatusCode(204))
    .start();
  return {
    url: `esdb://${c.getHost()}:${c.getMappedPort(2113)}?tls=false`,
    stop: async () => {
      await c.stop();
    },
  };
}
