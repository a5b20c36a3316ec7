import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Database } from '../../src/db/database';
import { migrate } from '../../src/db/migrate';
import type { EventStore } from '../../src/eventstore/types';
import { createSqlEventStore } from '../../src/eventstore/sql';
import { createLogger } from '../../src/log';
import { createMailer } from '../../src/mail/mailer';
import { allProjections } from '../../projections';
import { RebuildBusyError, rebuildReadModels } from '../../src/rebuild/rebuild';
import { READ_MODEL_TABLES } from '../../src/rebuild/tables';
import { insertGeneratedLog } from '../support/generatedLog';
import { eventually } from '../support/marketplace';
import { freshPostgres, type TestDatabase } from '../support/services';

/**
 * `npm run rebuild` as real processes (src/cli/rebuild.ts in a child, as the built CLI runs it) on one
 * PostgreSQL database: two at once, and one killed with SIGKILL in the middle of its replay.
 *
 * PostgreSQL only: a child process cannot open the test's in-memory PGlite, and embedded PGlite opens in
 * one process at a time anyway, so there the lock is an in-process flag (test/integration/rebuild.test.ts
 * covers it on whichever database the run uses).
 */
const EVENTS = 40_000;
const describePg = process.env.DATABASE_URL ? describe : describe.skip;
let database: TestDatabase;
let db: Database;
let store: EventStore;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rebuild-processes-'));

interface Run {
  child: ChildProcess;
  out: string[];
  exit: Promise<number | null>;
}
/** The rebuild CLI as a process on the test database; `env` overrides its settings. */
function startRebuild(args: string[], env: NodeJS.ProcessEnv = {}): Run {
  const out: string[] = [];
  const child = fork(path.join(__dirname, '../../src/cli/rebuild.ts'), args, {
    execArgv: ['-r', path.join(__dirname, '../support/register-ts.cjs')],
    env: {
      ...process.env,
      DATABASE_URL: database.url!,
      EVENTSTORE_URL: '',
      DATA_DIR: tmp,
      SMTP_URL: '',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  child.stdout!.on('data', (d: Buffer) => out.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => out.push(d.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, out, exit };
}

const projections = () =>
  allProjections({
    store,
    db,
    mailer: createMailer({ mailFrom: 'test@example.com', dataDir: tmp }),
    log: createLogger({ service: 'test' }),
    clock: () => new Date(),
  });

/** Shadow (or retired) schemas in the database. */
const shadows = async () =>
  (
    await db.query<{ n: string }>(
      `SELECT nspname AS n FROM pg_namespace WHERE nspname ~ '^(rebuild|retired)_' ORDER BY 1`,
    )
  ).rows.map((r) => r.n);

/** Every live read-model table's rows (as a digest) and every checkpoint: what the service serves. */
const liveState = async () => {
  const tables: Record<string, unknown> = {};
  for (const t of [...new Set(Object.values(READ_MODEL_TABLES).flat())].sort()) {
    const r = await db.query<{ n: string; digest: string | null }>(
      `SELECT count(*)::text AS n, md5(string_agg(to_jsonb(x)::text, E'\\n' ORDER BY to_jsonb(x)::text)) AS digest
       FROM public.${t} x`,
    );
    tables[t] = r.rows[0];
  }
  const checkpoints = await db.query(
    `SELECT name, commit_position::text AS c FROM projection_checkpoints ORDER BY name`,
  );
  return { tables, checkpoints: checkpoints.rows };
};

beforeAll(async () => {
  if (!process.env.DATABASE_URL) return;
  database = await freshPostgres(process.env.DATABASE_URL);
  db = database.db;
  await migrate(db);
  store = await createSqlEventStore(db);
  await insertGeneratedLog(db, EVENTS);
  // The live read models: the fold of that log, as a service would have built it.
  await rebuildReadModels({ db, store, projections: projections() });
}, 120_000);
afterAll(async () => {
  if (!process.env.DATABASE_URL) return;
  await store.close();
  await database.drop();
});

describePg('npm run rebuild as processes (skipped without DATABASE_URL: PGlite is one process)', () => {
  it('runs one at a time: a second rebuild exits 3 at once, naming the running one, and harms nothing', async () => {
    const before = await liveState();
    // Small pages make the first one last while the second starts.
    const first = startRebuild(['--page-size=20']);
    await eventually(shadows, (s) => s.length === 1, 60_000);
    const second = startRebuild([]);
    expect(await second.exit).toBe(3);
    expect(first.child.exitCode).toBe(null); // still running when the second gave up
    expect(second.out.join('')).toMatch(
      /rebuild: another rebuild or verify is running on this database \(schema public, PostgreSQL backend \d+ since /,
    );
    // In process too, and a verify as well as a rebuild.
    await expect(rebuildReadModels({ db, store, projections: projections(), verify: true })).rejects.toThrow(
      RebuildBusyError,
    );
    // The one running was left alone (its shadow schema was not taken for a leftover) and finishes.
    expect(await first.exit).toBe(0);
    expect(first.out.join('')).toMatch(/rebuilt .*: \d+ events in/);
    expect(await shadows()).toEqual([]);
    expect((await liveState()).tables).toEqual(before.tables);
  }, 180_000);

  it('a rebuild killed mid-replay leaves the live read models untouched; the next one drops its shadow and succeeds', async () => {
    const before = await liveState();
    const killed = startRebuild(['--page-size=50']);
    // Mid-replay: its shadow tables have rows.
    const [shadow] = await eventually(shadows, (s) => s.length === 1, 60_000);
    await eventually(
      async () =>
        db
          .query<{ n: string }>(`SELECT count(*)::text AS n FROM "${shadow}".payments`)
          .then((r) => Number(r.rows[0]!.n))
          .catch(() => 0), // the schema is there a moment before its tables
      (n) => n > 0,
      60_000,
    );
    killed.child.kill('SIGKILL');
    expect(await killed.exit).toBe(null);
    expect(await shadows()).toEqual([shadow]);
    expect(await liveState()).toEqual(before);

    const next = startRebuild([]);
    expect(await next.exit).toBe(0);
    const out = next.out.join('');
    expect(out).toContain(`dropped what an interrupted rebuild left behind: schema ${shadow}`);
    expect(out).toMatch(/rebuilt .*: 40000 events in/);
    expect(await shadows()).toEqual([]);
    expect((await liveState()).tables).toEqual(before.tables);

    const verify = startRebuild(['--verify']);
    expect(await verify.exit).toBe(0);
    expect(verify.out.join('')).toContain('live read models match the log');
    // Progress on a non-terminal: plain lines.
    expect(verify.out.join('')).toMatch(/rebuild replay: [\d,]+\/[\d,]+ events/);
  }, 180_000);

  it('rebuilds and verifies with DATABASE_POOL_SIZE=1 (a setting the service takes): the rebuild opens the connections it needs', async () => {
    const before = await liveState();
    // A short connect wait: before, the rebuild waited for a second connection the pool could not give,
    // then said the database could not be reached (exit 2).
    const env = { DATABASE_POOL_SIZE: '1', DATABASE_CONNECT_TIMEOUT_MS: '2000' };
    const rebuild = startRebuild(['sessions', 'payments'], env);
    expect(await rebuild.exit).toBe(0);
    expect(rebuild.out.join('')).toMatch(/rebuilt sessions, payments: \d+ events in/);
    const verify = startRebuild(['--verify'], env);
    expect(await verify.exit).toBe(0);
    expect(verify.out.join('')).toContain('live read models match the log');
    expect((await liveState()).tables).toEqual(before.tables);
  }, 180_000);

  it('says in one line that the database cannot be reached: exit 2, no stack trace', async () => {
    const run = startRebuild(['--verify'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });
    expect(await run.exit).toBe(2);
    expect(run.out.join('').trim()).toBe(
      'rebuild: the database cannot be reached (connect ECONNREFUSED 127.0.0.1:1); is it running, and is DATABASE_URL right?',
    );
  }, 60_000);

  it('says in one line that the database named does not exist: exit 2, no stack trace', async () => {
    const url = new URL(database.url!);
    url.pathname = '/zz_no_such_database';
    const run = startRebuild(['--verify'], { DATABASE_URL: url.toString() });
    expect(await run.exit).toBe(2);
    expect(run.out.join('').trim()).toBe(
      'rebuild: the database cannot be reached (database "zz_no_such_database" does not exist); is it running, and is DATABASE_URL right?',
    );
  }, 60_000);

  it('says in one line that the event store cannot be reached: exit 2, no stack trace', async () => {
    const run = startRebuild(['--verify'], { EVENTSTORE_URL: 'esdb://127.0.0.1:1?tls=false' });
    expect(await run.exit).toBe(2);
    const lines = run.out.join('').trim().split('\n');
    expect(lines.filter((l) => !l.startsWith('rebuild replay:'))).toEqual([
      expect.stringMatching(
        /^rebuild: the event store cannot be reached \(the event store is not answering .*\); is it running, and is EVENTSTORE_URL right\?$/,
      ),
    ]);
  }, 60_000);

  it('says in one line that a DATA_DIR that is a file cannot hold the embedded database: exit 2, no stack trace', async () => {
    const file = path.join(tmp, 'a-file');
    fs.writeFileSync(file, '');
    const run = startRebuild(['--verify'], { DATABASE_URL: '', DATA_DIR: file });
    expect(await run.exit).toBe(2);
    expect(run.out.join('').trim()).toBe(
      `rebuild: DATA_DIR ${file} cannot be used as the data directory: it is a file, not a directory`,
    );
  }, 60_000);

  it('says in one line which setting it refuses (a JWT_PUBLIC_KEY that is no key): exit 2, no stack trace', async () => {
    const run = startRebuild(['--verify'], { JWT_PUBLIC_KEY: 'garbage' });
    expect(await run.exit).toBe(2);
    expect(run.out.join('').trim()).toBe(
      'rebuild: JWT_PUBLIC_KEY is not a public key in PEM ("-----BEGIN PUBLIC KEY-----" ... "-----END PUBLIC KEY-----")',
    );
  }, 60_000);

  it('reads the .env the service reads: verifies the database named there, not an embedded one', async () => {
    // The operator's project folder: DATABASE_URL and the rest only in .env, as the service has them.
    const project = fs.mkdtempSync(path.join(os.tmpdir(), 'rebuild-dotenv-'));
    fs.writeFileSync(
      path.join(project, '.env'),
      `DATABASE_URL=${database.url!}\nEVENTSTORE_URL=\nSMTP_URL=\nDATA_DIR=${path.join(project, 'data')}\n`,
    );
    const env = { ...process.env };
    for (const k of ['DATABASE_URL', 'EVENTSTORE_URL', 'SMTP_URL', 'DATA_DIR']) delete env[k];
    const child = fork(path.join(__dirname, '../../src/cli/rebuild.ts'), ['--verify'], {
      execArgv: ['-r', path.join(__dirname, '../support/register-ts.cjs')],
      env,
      cwd: project,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const out: string[] = [];
    child.stdout!.on('data', (d: Buffer) => out.push(d.toString()));
    child.stderr!.on('data', (d: Buffer) => out.push(d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(out.join('')).toMatch(/verified .*: 40000 events in/);
    expect(code).toBe(0);
    expect(fs.existsSync(path.join(project, 'data'))).toBe(false); // no embedded database was opened
    fs.rmSync(project, { recursive: true, force: true });
  }, 120_000);
});
