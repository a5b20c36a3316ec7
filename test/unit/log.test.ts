import { Writable } from 'node:stream';
import { createLogger } from '../../src/log';

/** Collects what the logger writes, one parsed JSON object per line. */
function sink() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { lines, stream };
}

describe('logger (pino)', () => {
  it('writes one JSON line per entry: ISO time, level name, msg, base and call fields', () => {
    const { lines, stream } = sink();
    const log = createLogger({ service: 'coaching' }, { LOG_LEVEL: 'info' }, stream);
    log.info('request', { requestId: 'abc-1', status: 200, position: 12n });
    expect(lines).toHaveLength(1);
    const [line] = lines;
    expect(line).toEqual({
      level: 'info',
      time: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      msg: 'request',
      service: 'coaching',
      requestId: 'abc-1',
      status: 200,
      position: '12',
    });
    expect(Object.keys(line!)).not.toContain('pid');
  });

  it('honours LOG_LEVEL', () => {
    const { lines, stream } = sink();
    const log = createLogger({}, { LOG_LEVEL: 'warn' }, stream);
    log.debug('d');
    log.info('i');
    log.warn('w');
    log.error('e', { error: 'boom' });
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'w'],
      ['error', 'e'],
    ]);
    const { lines: all, stream: s2 } = sink();
    createLogger({}, { LOG_LEVEL: 'DEBUG' }, s2).debug('d');
    expect(all.map((l) => l.msg)).toEqual(['d']);
  });

  it('an unknown LOG_LEVEL falls back to info', () => {
    const { lines, stream } = sink();
    const log = createLogger({}, { LOG_LEVEL: 'loud' }, stream);
    log.debug('hidden');
    log.info('shown');
    expect(lines.map((l) => l.msg)).toEqual(['shown']);
  });
});
