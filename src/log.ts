/** Structured JSON logs, one line per entry, to stdout. Quiet under tests unless LOG_LEVEL says otherwise. */
type Level = 'debug' | 'info' | 'warn' | 'error';
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const threshold = (): number =>
  order[(process.env.LOG_LEVEL as Level) ?? (process.env.JEST_WORKER_ID ? 'error' : 'info')] ?? 20;

export type Logger = Record<Level, (msg: string, fields?: Record<string, unknown>) => void>;

export function createLogger(base: Record<string, unknown> = {}): Logger {
  const write =
    (level: Level) =>
    (msg: string, fields: Record<string, unknown> = {}) => {
      if (order[level] < threshold()) return;
      const line = JSON.stringify(
        { time: new Date().toISOString(), level, msg, ...base, ...fields },
        (_k, v) => (typeof v === 'bigint' ? v.toString() : v),
      );
      (level === 'error' || level === 'warn' ? process.stderr : process.stdout).write(line + '\n');
    };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}

export const log = createLogger();
