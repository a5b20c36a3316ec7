import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import { loadConfig } from '../../src/config';
import { migrate } from '../../src/db/migrate';
import { createSqlEventStore } from '../../src/eventstore/sql';
import { UPCASTERS, createUpcasterRegistry, withUpcasting } from '../../src/eventstore/upcasting';
import { signToken } from '../../src/http/auth';
import { createHttpServer } from '../../src/http/server';
import { createLogger } from '../../src/log';
import { createMailer } from '../../src/mail/mailer';
import { createFilesystemBlobStore } from '../../src/storage/filesystem';
import { createSystem, type System } from '../../src/system';
import { allProjections } from '../../projections';
import { appendGeneratedLog } from '../support/generatedLog';
import { testDatabase, type TestDatabase } from '../support/services';

/**
 * The history export over real HTTP on a log of 100,000 events: every line, in order, with its fields;
 * resumption with `after`; the window and filters; and memory that stays flat while a slow client reads,
 * which only holds if the server reads the log page by page as the client takes the answer.
 *
 * On PostgreSQL the service is its own OS process (test/support/instance.ts, as src/main.ts runs it), so
 * its memory is measured apart from this test's. PGlite is one process, so there the service runs in this
 * one and the bound is on this process's heap while the client pauses (the test does nothing meanwhile).
 */
const EVENTS = 100_000;
const MB = 1024 * 1024;
const config = loadConfig({ JWT_SECRET: 'test-secret' });
const auditor = signToken(config, randomUUID(), ['auditor']);

let database: TestDatabase;
let baseUrl: string;
let child: ChildProcess | undefined;
let inProcess: { system: System; server: http.Server } | undefined;
let dataDir: string;
let appendMs = 0;

interface Memory {
  rss: number;
  heapUsed: number;
}
/** Memory of the process that serves the export, after a full garbage collection. */
let memory: () => Promise<Memory>;

beforeAll(async () => {
  database = await testDatabase();
  const { db } = database;
  await migrate(db);
  // The log, written through the store's own append path (appendMany, as the service stamps it).
  const store = withUpcasting(await createSqlEventStore(db), createUpcasterRegistry(UPCASTERS));
  const started = performance.now();
  expect(await appendGeneratedLog(store, EVENTS)).toBe(EVENTS);
  appendMs = performance.now() - started;
  // The service starts with every projection at the head: the log was there before it, and what the
  // projections would make of it is not what this file tests (the export reads the log only).
  const head = await store.headPosition();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coaching-export-'));
  const names = allProjections({
    store,
    db,
    mailer: createMailer({ mailFrom: 'x@example.com', dataDir }),
    log: createLogger({ service: 'test' }),
    clock: () => new Date(),
    // With the file storage, the list holds every process manager the service runs (the file clean-up too).
    blobs: await createFilesystemBlobStore(path.join(dataDir, 'blobs')),
  }).map((p) => p.name);
  for (const name of names)
    await db.query(
      `INSERT INTO projection_checkpoints (name, commit_position, prepare_position) VALUES ($1, $2, $2)`,
      [name, head.commit.toString()],
    );
  await store.close();

  if (database.kind === 'postgres') {
    const output: string[] = [];
    child = fork(path.join(__dirname, '../support/instance.ts'), [], {
      // --expose-gc: each memory sample follows a full collection, so heapUsed is what the service retains.
      execArgv: ['--expose-gc', '-r', path.join(__dirname, '../support/register-ts.cjs')],
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: database.url,
        JWT_SECRET: 'test-secret',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    child.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
    child.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
    const port = await new Promise<number>((resolve, reject) => {
      child!.on('message', (m: { type: string; port: number }) => m.type === 'ready' && resolve(m.port));
      child!.once('exit', (code) => reject(new Error(`service exited with ${code}:\n${output.join('')}`)));
    });
    baseUrl = `http://127.0.0.1:${port}`;
    let seq = 0;
    memory = () =>
      new Promise((resolve) => {
        const id = ++seq;
        const onMessage = (m: { type: string; id: number; rss: number; heapUsed: number }) => {
          if (m.type !== 'memory' || m.id !== id) return;
          child!.off('message', onMessage);
          resolve(m);
        };
        child!.on('message', onMessage);
        child!.send({ type: 'memory', id });
      });
  } else {
    const cfg = loadConfig({ JWT_SECRET: 'test-secret', DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    const system = await createSystem(cfg, { db });
    const server = createHttpServer(system.app, cfg.http);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    inProcess = { system, server };
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // This process was not started with --expose-gc; V8 can still hand out its collector.
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    memory = async () => {
      gc();
      return process.memoryUsage();
    };
  }
}, 300_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child!.once('exit', r));
  }
  if (inProcess) {
    inProcess.server.close();
    await inProcess.system.close();
  }
  await database.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

interface Line {
  eventId: string;
  position: string;
  stream: string;
  revision: number;
  type: string;
  data: unknown;
  metadata: { actor: unknown; correlationId: unknown; causationId: unknown };
  recordedAt: string;
}

/**
 * GETs the export and hands each line to `onLine` as it arrives (the answer is never held whole here).
 * `onLine` may return 'stop' to cut the connection, or a promise to hold the reading until it settles.
 */
function readExport(
  query: string,
  onLine: (line: Line, res: http.IncomingMessage) => void | 'stop' | Promise<void>,
): Promise<{ status: number; type: string | undefined; lines: number; bytes: number; cut: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      `${baseUrl}/api/v1/audit/events${query}`,
      { headers: { authorization: `Bearer ${auditor}` } },
      (res) => {
        let rest = '';
        let lines = 0;
        let bytes = 0;
        let cut = false;
        const done = () =>
          resolve({ status: res.statusCode!, type: res.headers['content-type'], lines, bytes, cut });
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          bytes += Buffer.byteLength(chunk);
          const parts = (rest + chunk).split('\n');
          rest = parts.pop()!;
          for (const text of parts) {
            if (cut) return;
            lines++;
            const outcome = onLine(JSON.parse(text) as Line, res);
            if (outcome === 'stop') {
              cut = true;
              req.destroy();
              return done();
            }
            if (outcome instanceof Promise) {
              res.pause();
              void outcome.then(() => res.resume(), reject);
            }
          }
        });
        res.on('end', () => {
          if (rest) reject(new Error(`the export ended inside a line: ${rest.slice(0, 200)}`));
          else done();
        });
        res.on('error', (err) => (cut ? undefined : reject(err)));
      },
    );
    req.on('error', (err) => reject(err));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the full export answered, kept small: one entry per line. */
const full: { position: bigint; id: string; stream: string; type: string; recordedAt: string }[] = [];

describe(`history export of ${EVENTS.toLocaleString('en-US')} events over HTTP`, () => {
  it('streams every event once, in position order, with its fields, at bounded memory for a slow client', async () => {
    console.log(`appended ${EVENTS} events through appendMany in ${(appendMs / 1000).toFixed(1)} s`);
    const samples: Memory[] = [];
    const before = await memory();
    let pause: { start: Memory; end: Memory } | null = null;
    const answer = await readExport('', (line) => {
      full.push({
        position: BigInt(line.position),
        id: line.eventId,
        stream: line.stream,
        type: line.type,
        recordedAt: line.recordedAt,
      });
      if (full.length === 1) {
        expect(Object.keys(line).sort()).toEqual(
          ['data', 'eventId', 'metadata', 'position', 'recordedAt', 'revision', 'stream', 'type'].sort(),
        );
        expect(line.metadata).toMatchObject({ actor: { role: 'client' }, correlationId: expect.any(String) });
        expect(line.metadata).toHaveProperty('causationId', null);
        expect(typeof line.revision).toBe('number');
        expect(line.data).toEqual(expect.any(Object));
        // A client that stops reading for 3 s: a server that kept reading the log would fill its memory
        // with the rest of the export meanwhile.
        return (async () => {
          const start = await memory();
          await sleep(3000);
          pause = { start, end: await memory() };
        })();
      }
      // Then a slow reader: a short stop every 5,000 lines, memory sampled each time.
      if (full.length % 5000 === 0)
        return (async () => {
          samples.push(await memory());
          await sleep(25);
        })();
    });
    expect(answer.status).toBe(200);
    expect(answer.type).toMatch(/^application\/x-ndjson/);
    expect(answer.lines).toBe(EVENTS);
    expect(full).toHaveLength(EVENTS);
    expect(new Set(full.map((l) => l.id)).size).toBe(EVENTS);
    for (let i = 1; i < full.length; i++)
      if (full[i]!.position <= full[i - 1]!.position)
        throw new Error(`line ${i + 1} is at ${full[i]!.position}, not after ${full[i - 1]!.position}`);

    const { start, end } = pause!;
    const all = [before, start, end, ...samples];
    const heapGrowth = Math.max(...all.map((m) => m.heapUsed)) - before.heapUsed;
    const rssGrowth = Math.max(...all.map((m) => m.rss)) - before.rss;
    const mb = (n: number) => `${(n / MB).toFixed(1)} MB`;
    console.log(
      `export ${mb(answer.bytes)}; serving process (${child ? 'its own' : 'this one'}): RSS ${mb(before.rss)} ` +
        `before, peak growth ${mb(rssGrowth)}; heap retained ${mb(before.heapUsed)} before, peak growth ` +
        `${mb(heapGrowth)}; during the 3 s pause ${mb(start.heapUsed)} -> ${mb(end.heapUsed)}`,
    );
    // Holding the export would take at least its text (answer.bytes, 65 MB) and the events behind it;
    // streaming holds a few pages of 500 events whatever the log's size. While the client paused, the
    // server read nothing more.
    expect(end.heapUsed - start.heapUsed).toBeLessThan(Math.min(8 * MB, answer.bytes / 8));
    if (child) {
      // Retained after a full GC, sampled every 5,000 lines: flat. RSS also counts garbage not yet
      // returned to the system and the connections' buffers, hence the wider bound.
      expect(heapGrowth).toBeLessThan(Math.min(16 * MB, answer.bytes / 4));
      expect(rssGrowth).toBeLessThan(Math.min(48 * MB, (answer.bytes * 3) / 4));
    } else {
      // In one process the heap also holds what this test keeps of each line (about 30 MB).
      expect(heapGrowth).toBeLessThan(Math.min(48 * MB, (answer.bytes * 3) / 4));
    }
  }, 240_000);

  it('resumes exactly after the last line received when the connection was cut', async () => {
    const first: bigint[] = [];
    const cut = await readExport('', (line) => {
      first.push(BigInt(line.position));
      if (first.length === 37_123) return 'stop';
    });
    expect(cut.cut).toBe(true);
    const rest: bigint[] = [];
    const resumed = await readExport(`?after=${first[first.length - 1]}`, (line) => {
      rest.push(BigInt(line.position));
    });
    expect(resumed.status).toBe(200);
    expect([...first, ...rest]).toEqual(full.map((l) => l.position));
  }, 120_000);

  it('returns exactly the events of the window (from and to inclusive, on recordedAt) and filters', async () => {
    const from = full[20_000]!.recordedAt;
    const to = full[70_000]!.recordedAt;
    const types = ['PaymentStatusChanged', 'PaymentCreated'];
    const got: string[] = [];
    const q = `?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&stream_prefix=payment-&type=${types.join(',')}`;
    const answer = await readExport(q, (line) => {
      got.push(line.eventId);
    });
    expect(answer.status).toBe(200);
    const expected = full.filter(
      (l) =>
        l.recordedAt >= from &&
        l.recordedAt <= to &&
        l.stream.startsWith('payment-') &&
        types.includes(l.type),
    );
    expect(expected.length).toBeGreaterThan(10_000);
    expect(got).toEqual(expected.map((l) => l.id));
  }, 120_000);
});
