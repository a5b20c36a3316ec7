import type { Logger } from './log';
import type { Leases } from './leases';

/** A sweep the service runs on a timer, on the instance holding its lease, and on demand. */
export interface PeriodicSweep {
  /** One sweep now (after the one running, if any); resolves to how many items it acted on. */
  sweep(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

/** What a sweep checks between its items: whether this instance still holds the lease, and is stopping. */
export interface SweepGuards {
  owner(): boolean;
  stopped(): boolean;
}

/**
 * The timing shared by the sweepers over due-tables (payment expiry, session reminders): `sweepOnce` runs at
 * `start()` and then `intervalMs` after each sweep ends, and at once when this instance takes `lease` over
 * (its owner died or stopped) rather than at the next tick. Sweeps never overlap: a caller arriving during
 * one waits for it and then sweeps again. A failed sweep is logged and the timer goes on.
 */
export function periodicSweep(
  deps: { log: Logger; leases?: Leases },
  opts: { name: string; lease: string; intervalMs: number },
  sweepOnce: (guards: SweepGuards) => Promise<number>,
): PeriodicSweep {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<number> | null = null;
  let stopped = false;
  let unwatch: (() => void) | undefined;
  // With several instances one sweeps (the holder of the lease), and stops at once when it loses it.
  const guards: SweepGuards = {
    owner: () => !deps.leases || deps.leases.holds(opts.lease),
    stopped: () => stopped,
  };

  const sweep = async (): Promise<number> => {
    while (running) await running.catch(() => 0);
    running = sweepOnce(guards);
    try {
      return await running;
    } finally {
      running = null;
    }
  };

  const tick = () => {
    if (stopped) return;
    sweep()
      .catch((err: unknown) => deps.log.error(`${opts.name} sweep failed`, { error: String(err) }))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, opts.intervalMs);
      });
  };

  return {
    sweep,
    start() {
      stopped = false;
      tick();
      unwatch = deps.leases?.watch(opts.lease, (held) => {
        if (held && !stopped) void sweep().catch(() => 0);
      });
    },
    async stop() {
      stopped = true;
      unwatch?.();
      if (timer) clearTimeout(timer);
      timer = null;
      await running?.catch(() => 0);
    },
  };
}
