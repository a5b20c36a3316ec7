import { grouped } from '../../src/grouped';

/** A flush whose runs the test ends by hand, recording when each started. */
function manualFlush() {
  const runs: { started: number; end: (err?: Error) => void }[] = [];
  let clock = 0;
  const flush = () =>
    new Promise<void>((resolve, reject) => {
      runs.push({ started: clock++, end: (err) => (err ? reject(err) : resolve()) });
    });
  return { runs, flush, tick: () => clock++ };
}
const settle = () => new Promise((r) => setImmediate(r));

describe('grouped (group commit of a flush)', () => {
  it('given no run under way, when one caller flushes, then one run starts at once and answers it', async () => {
    const f = manualFlush();
    const flush = grouped(f.flush);
    let done = false;
    void flush().then(() => (done = true));
    expect(f.runs).toHaveLength(1);
    await settle();
    expect(done).toBe(false);
    f.runs[0]!.end();
    await settle();
    expect(done).toBe(true);
  });

  it('given a run under way, when ten callers flush, then they share one next run, begun after the first ended', async () => {
    const f = manualFlush();
    const flush = grouped(f.flush);
    const first = flush();
    const answered: number[] = [];
    const later = Array.from({ length: 10 }, (_, i) => flush().then(() => answered.push(i)));
    expect(f.runs).toHaveLength(1); // nobody is answered by the run that began before they called
    f.runs[0]!.end();
    await first;
    await settle();
    expect(f.runs).toHaveLength(2);
    expect(answered).toEqual([]);
    f.runs[1]!.end();
    await Promise.all(later);
    expect(answered).toHaveLength(10);
    expect(f.runs).toHaveLength(2);
  });

  it('given a run that fails, then its callers hear the error and the next caller gets a run of its own', async () => {
    const f = manualFlush();
    const flush = grouped(f.flush);
    const failing = flush();
    const queued = flush();
    f.runs[0]!.end(new Error('EIO'));
    await expect(failing).rejects.toThrow('EIO');
    await settle();
    f.runs[1]!.end(); // the queued caller's run starts despite the failure before it
    await expect(queued).resolves.toBeUndefined();
    const again = flush();
    expect(f.runs).toHaveLength(3);
    f.runs[2]!.end();
    await expect(again).resolves.toBeUndefined();
  });

  it('given callers one after another, then each gets a run that started after its call', async () => {
    const f = manualFlush();
    const flush = grouped(f.flush);
    for (let i = 0; i < 3; i++) {
      const calledAt = f.tick();
      const p = flush();
      await settle();
      const last = f.runs[f.runs.length - 1]!;
      expect(last.started).toBeGreaterThan(calledAt);
      last.end();
      await p;
    }
    expect(f.runs).toHaveLength(3);
  });
});
