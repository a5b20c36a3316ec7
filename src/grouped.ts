/**
 * Group commit for an idempotent flush (an fsync, say): every caller is answered by a run of `flush` that
 * started after it called, and the callers that arrive while a run is under way share the next one. So a
 * burst of N callers costs two runs, not N, and nobody is told "done" by a run that began before its own
 * write was made.
 */
export function grouped(flush: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  const begin = (): Promise<void> => {
    const run: Promise<void> = flush().finally(() => {
      if (running === run) running = undefined;
    });
    running = run;
    return run;
  };
  return () => {
    if (queued) return queued;
    if (!running) return begin();
    // The next run starts once the current one is over, whatever its outcome (its callers hear of it).
    const next = running
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        return begin();
      });
    queued = next;
    return next;
  };
}
