import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config';
import { createSystem } from '../../src/system';

/**
 * One service instance as its own OS process, for tests that run several and kill one (`SIGKILL` is only
 * honest on a real process). Configured from the environment like `src/main.ts`; listens on an ephemeral
 * port and tells the parent over IPC. The clock is the wall clock plus an offset the parent can move
 * (`{type: 'advance', ms}`), so a test can let payment deadlines pass without waiting for them;
 * `{type: 'memory'}` answers its `process.memoryUsage()` (after a full GC under `--expose-gc`).
 */
let offsetMs = 0;

async function main() {
  const system = await createSystem(loadConfig(), { clock: () => new Date(Date.now() + offsetMs) });
  const server = http.createServer(system.app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.on('message', (m: { type: string; ms?: number; id?: number }) => {
    if (m.type === 'advance') {
      offsetMs += m.ms ?? 0;
      process.send?.({ type: 'advanced', id: m.id });
    }
    // What the process holds in memory, for tests that bound it (e.g. a streamed export); after a full
    // garbage collection when started with --expose-gc, so heapUsed is what is retained.
    if (m.type === 'memory') {
      (globalThis as { gc?: () => void }).gc?.();
      process.send?.({ type: 'memory', id: m.id, ...process.memoryUsage() });
    }
  });
  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void system.close().then(() => process.exit(0));
  });
  process.send?.({
    type: 'ready',
    port: (server.address() as AddressInfo).port,
    instance: system.deps.leases.instanceId,
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
