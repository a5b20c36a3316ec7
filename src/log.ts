import pino from 'pino';

/**
 * Structured JSON logs through pino, one line per entry: `{"level":"info","time":"<ISO>","msg":…,…fields}`,
 * info and below to stdout, warn and error to stderr. `LOG_LEVEL` (debug, info, warn, error, silent) sets the
 * threshold; under tests the default is `error` so test output stays readable. `LOG_PRETTY=1` renders
 * human-readable lines through pino-pretty instead (only when asked: production keeps JSON).
 */
type Level = 'debug' | 'info' | 'warn' | 'error';

/** The call sites' interface: a message and flat fields, independent of the library underneath. */
export type Logger = Record<Level, (msg: string, fields?: Record<string, unknown>) => void>;

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']);

function levelFromEnv(env: NodeJS.ProcessEnv): string {
  const wanted = env.LOG_LEVEL?.toLowerCase();
  if (wanted && LEVELS.has(wanted)) return wanted;
  return env.JEST_WORKER_ID ? 'error' : 'info';
}

/** Event positions are bigints; JSON has no such type, so they are written as strings (as before pino). */
function jsonSafe(v: unknown, depth = 0): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (depth > 8 || v === null || typeof v !== 'object' || v instanceof Date) return v;
  if (Array.isArray(v)) return v.map((x) => jsonSafe(x, depth + 1));
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonSafe(x, depth + 1)]));
}

function destination(env: NodeJS.ProcessEnv): pino.DestinationStream {
  if (env.LOG_PRETTY === '1' || env.LOG_PRETTY === 'true') {
    // Loaded only when asked for, so production never needs it.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const pretty = require('pino-pretty') as (o: object) => pino.DestinationStream;
    return pretty({ colorize: !!process.stdout.isTTY, destination: 2, sync: true });
  }
  return pino.multistream(
    [
      { level: 'trace', stream: pino.destination({ dest: 1, sync: true }) },
      { level: 'warn', stream: pino.destination({ dest: 2, sync: true }) },
    ],
    { dedupe: true },
  );
}

/** A pino logger under the project's Logger interface; `base` fields go on every line. */
export function createLogger(
  base: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = process.env,
  stream: pino.DestinationStream = destination(env),
): Logger & { pino: pino.Logger } {
  const logger = pino(
    {
      level: levelFromEnv(env),
      base: null, // no pid/hostname: the same lines as the hand-written logger wrote
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      messageKey: 'msg',
    },
    stream,
  ).child(jsonSafe(base) as Record<string, unknown>);
  const write =
    (level: Level) =>
    (msg: string, fields: Record<string, unknown> = {}) => {
      if (!logger.isLevelEnabled(level)) return;
      logger[level](jsonSafe(fields) as object, msg);
    };
  return {
    pino: logger,
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
  };
}

export const log = createLogger();
