import { fork, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPgliteDatabase } from '../../src/db/pglite';

/** Embedded PGlite opens in one process at a time: a second one would write the same files. */
describe('the embedded database directory is locked to one process', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'coaching-lock-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('refuses a second open while the first is open (here or in a live process), and opens once it is closed', async () => {
    const dir = path.join(root, 'pglite');
    const first = await createPgliteDatabase(dir);
    await first.query('CREATE TABLE kept (n int)');
    await expect(createPgliteDatabase(dir)).rejects.toThrow(/already open in this process/);
    await first.close();
    expect(fs.existsSync(`${dir}.lock`)).toBe(false);

    // Another process holds it: a live process named in the lock file.
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      fs.writeFileSync(`${dir}.lock`, JSON.stringify({ pid: other.pid, host: os.hostname() }));
      await expect(createPgliteDatabase(dir)).rejects.toThrow(new RegExp(`in use by process ${other.pid}`));
    } finally {
      other.kill('SIGKILL');
      await new Promise((r) => other.once('exit', r));
    }
    // Its holder died without releasing it (a crash, kill -9): the lock is taken over, the data is there.
    const again = await createPgliteDatabase(dir);
    try {
      expect((await again.query('SELECT count(*)::int AS n FROM kept')).rows).toEqual([{ n: 0 }]);
      expect(JSON.parse(fs.readFileSync(`${dir}.lock`, 'utf8'))).toMatchObject({ pid: process.pid });
    } finally {
      await again.close();
    }
  });

  it('a rebuild beside a running holder says so in one line and exits 3 (busy), not with a stack trace', async () => {
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      fs.writeFileSync(
        path.join(root, 'pglite.lock'),
        JSON.stringify({ pid: other.pid, host: os.hostname() }),
      );
      const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: root, EVENTSTORE_URL: '', SMTP_URL: '' };
      delete env.DATABASE_URL;
      const child = fork(path.join(__dirname, '../../src/cli/rebuild.ts'), [], {
        execArgv: ['-r', path.join(__dirname, '../support/register-ts.cjs')],
        env,
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      });
      let err = '';
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).toBe(3);
      expect(err.trim().split('\n')).toEqual([
        expect.stringMatching(
          new RegExp(`^rebuild: the embedded database .* is in use by process ${other.pid} `),
        ),
      ]);
    } finally {
      other.kill('SIGKILL');
      await new Promise((r) => other.once('exit', r));
    }
  }, 60_000);

  it('takes over a lock left by an earlier life of its own process number, or one that cannot be read', async () => {
    const dir = path.join(root, 'pglite');
    fs.mkdirSync(dir);
    for (const leftover of [JSON.stringify({ pid: process.pid, host: os.hostname() }), 'garbage']) {
      fs.writeFileSync(`${dir}.lock`, leftover);
      const db = await createPgliteDatabase(dir);
      await db.close();
    }
    // Another host's lock (a shared volume) cannot be checked: refused, naming the file to remove if stale.
    fs.writeFileSync(`${dir}.lock`, JSON.stringify({ pid: 1, host: 'elsewhere' }));
    await expect(createPgliteDatabase(dir)).rejects.toThrow(/on elsewhere/);
  });
});
