import type { RebuildProgress } from './rebuild';

/**
 * Progress of a rebuild on a stream: on a terminal one bar redrawn in place (events done / total,
 * events/s, ETA); otherwise a plain line at most every `everyMs` and at each phase change, so logs stay
 * readable. The total is estimated from the log position reached (exact on the SQL stores, whose positions
 * count events; proportional on EventStoreDB, whose positions are byte offsets).
 */
export function progressPrinter(
  out: NodeJS.WriteStream | { isTTY?: boolean; write(s: string): boolean },
  opts: { everyMs?: number; now?: () => number } = {},
) {
  const now = opts.now ?? (() => performance.now());
  const everyMs = opts.everyMs ?? (out.isTTY ? 100 : 2000);
  const startedAt = now();
  let lastAt = -Infinity;
  let lastPhase = '';
  return (p: RebuildProgress) => {
    const t = now();
    const phaseChanged = p.phase !== lastPhase;
    if (!phaseChanged && t - lastAt < everyMs) return;
    lastAt = t;
    lastPhase = p.phase;
    // Positions count from the first event read, inclusive (on the SQL stores, one position per event).
    const span = p.first ? Number(p.target.commit - p.first.commit) + 1 : 0;
    // Between 0 and 1 whatever the figures (a position before the first event read is 0): the bar is
    // drawn with String.repeat, which throws on a negative count and would end the rebuild.
    const fraction = Math.min(
      1,
      Math.max(
        0,
        !p.first || span <= 0 ? (p.events ? 1 : 0) : (Number(p.position.commit - p.first.commit) + 1) / span,
      ),
    );
    const total = fraction > 0 ? Math.max(p.events, Math.round(p.events / fraction)) : p.events;
    const seconds = (t - startedAt) / 1000;
    const rate = seconds > 0 ? p.events / seconds : 0;
    const eta = rate > 0 ? Math.max(0, (total - p.events) / rate) : 0;
    const n = (x: number) => x.toLocaleString('en-US');
    const figures = `${n(p.events)}/${n(total)} events  ${n(Math.round(rate))} ev/s  ETA ${eta.toFixed(0)}s`;
    if (out.isTTY) {
      const width = 30;
      const filled = Math.round(fraction * width);
      const bar = `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
      out.write(`\r\x1b[2K${p.phase.padEnd(8)} ${bar} ${(fraction * 100).toFixed(0)}%  ${figures}`);
      if (p.phase === 'done') out.write('\n');
    } else out.write(`rebuild ${p.phase}: ${figures}\n`);
  };
}
