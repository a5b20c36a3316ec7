import { dockerAvailable } from './services';

/** Where an EventStoreDB can be had, or why not. Decided without I/O so suites can choose describe/skip. */
export function eventStoreDbPlan(): { url?: string; container?: true; skipReason?: string } {
  const url = process.env.EVENTSTORE_URL;
  if (url?.startsWith('esdb')) return { url };
  if (dockerAvailable()) return { container: true };
  return {
    skipReason:
      'skipped: no EventStoreDB reachable (EVENTSTORE_URL is not an esdb:// URL and no Docker engine for testcontainers)',
  };
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
