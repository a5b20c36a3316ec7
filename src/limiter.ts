/** Runs the tasks given to it with at most `n` at once, in the order given. */
export function limiter(n: number) {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    // A slot freed is handed to the next waiting task directly, so a newcomer never jumps the queue.
    if (running >= n) await new Promise<void>((r) => waiting.push(r));
    else running++;
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}
