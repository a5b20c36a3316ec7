import { fork } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../support/serviceProcess';

/** `src/main.ts` as `npm start` runs it, until it exits: its exit code and what it wrote. */
async function runMain(env: Record<string, string>) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coaching-start-'));
  const port = await freePort();
  const child = fork(path.join(__dirname, '../../src/main.ts'), [], {
    cwd: dir,
    execArgv: ['-r', path.join(__dirname, '../support/register-ts.cjs')],
    env: { PATH: process.env.PATH, PORT: String(port), DATA_DIR: dir, JWT_SECRET: 'x'.repeat(32), ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  fs.rmSync(dir, { recursive: true, force: true });
  return {
    code,
    lines: output
      .trim()
      .split('\n')
      .filter((l) => !l.includes('"level":"warn"')),
  };
}

describe('a database that does not answer at start', () => {
  it('is named in one log line without a stack trace, and the service exits 1', async () => {
    const port = await freePort();
    const { code, lines } = await runMain({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/x` });
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!);
    expect(line).toMatchObject({ level: 'error', msg: 'cannot reach the database, refusing to start' });
    expect(line.error).toBe(`connect ECONNREFUSED 127.0.0.1:${port}`);
    expect(lines[0]).not.toMatch(/\\n\s+at /);
  }, 60_000);

  it('says so for a database the server does not have, too', async () => {
    const { code, lines } = await runMain({
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/no_such_database_here',
    });
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      msg: 'cannot reach the database, refusing to start',
      error: 'database "no_such_database_here" does not exist',
      code: '3D000',
    });
  }, 60_000);

  it('and for a login the server refuses', async () => {
    const { code, lines } = await runMain({
      DATABASE_URL: 'postgres://no_such_role_here@127.0.0.1:5432/postgres',
    });
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      msg: 'cannot reach the database, refusing to start',
      error: 'role "no_such_role_here" does not exist',
      code: '28000',
    });
  }, 60_000);
});

describe('a DATA_DIR the service cannot use', () => {
  it('is named in one log line without a stack trace (a file, or a path under a file), and the service exits 1', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'coaching-data-')), 'a-file');
    fs.writeFileSync(file, '');
    for (const [dir, reason] of [
      [file, 'it is a file, not a directory'],
      [path.join(file, 'data'), `ENOTDIR: not a directory, mkdir '${path.join(file, 'data')}'`],
    ] as const) {
      const { code, lines } = await runMain({ DATA_DIR: dir });
      expect(code).toBe(1);
      const errors = lines.map((l) => JSON.parse(l)).filter((l) => l.level === 'error');
      expect(errors).toEqual([
        expect.objectContaining({
          msg: 'refusing to start',
          error: `DATA_DIR ${dir} cannot be used as the data directory: ${reason}`,
        }),
      ]);
    }
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }, 60_000);
});

describe('a PORT another process listens on', () => {
  it('is named in one log line without a stack trace, and the service exits 1', async () => {
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, r));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const { code, lines } = await runMain({ PORT: String(port) });
      expect(code).toBe(1);
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({
        level: 'error',
        msg: 'refusing to start',
        error: `PORT ${port} is in use by another process`,
      });
    } finally {
      await new Promise((r) => taken.close(r));
    }
  }, 60_000);
});

describe('an S3 that does not answer at start', () => {
  it('is named as the file storage (not as the database) in one log line, and the service exits 1', async () => {
    const port = await freePort();
    const { code, lines } = await runMain({ S3_ENDPOINT: `http://127.0.0.1:${port}` });
    expect(code).toBe(1);
    const errors = lines.map((l) => JSON.parse(l)).filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      msg: 'cannot reach the file storage (S3_ENDPOINT), refusing to start',
      error: `the file storage is not answering (connect ECONNREFUSED 127.0.0.1:${port})`,
    });
  }, 60_000);
});

describe('an event store that does not answer at start', () => {
  it('is named in one log line without a stack trace, and the service exits 1', async () => {
    const port = await freePort();
    const { code, lines } = await runMain({ EVENTSTORE_URL: `esdb://127.0.0.1:${port}?tls=false` });
    expect(code).toBe(1);
    const errors = lines.map((l) => JSON.parse(l)).filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0].msg).toBe('cannot reach the event store, refusing to start');
    expect(errors[0].error).toContain(`ECONNREFUSED 127.0.0.1:${port}`);
    expect(errors[0].error).not.toMatch(/\n\s+at /);
  }, 60_000);

  it('a postgres:// EVENTSTORE_URL with its scheme in capitals is that store, as the check at start took it', async () => {
    const port = await freePort();
    const { code, lines } = await runMain({ EVENTSTORE_URL: `POSTGRES://u:hunter2@127.0.0.1:${port}/x` });
    expect(code).toBe(1);
    // Before: "failed to start", a stack, and the URL with its password ("must start with esdb:// or postgres://").
    expect(lines.join('\n')).not.toContain('hunter2');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      msg: 'cannot reach the database, refusing to start',
      error: `connect ECONNREFUSED 127.0.0.1:${port}`,
    });
  }, 60_000);

  it('an EVENTSTORE_URL the EventStoreDB client cannot read, or would print with its password, is refused in one line', async () => {
    const port = await freePort();
    for (const url of [
      `esdb://admin:hunter2@127.0.0.1:${port}?tls=maybe`,
      `esdb://admin:hunter2@127.0.0.1:${port}?tls=true&tlsVerifyCert=false`,
    ]) {
      const { code, lines } = await runMain({ EVENTSTORE_URL: url });
      expect(code).toBe(1);
      // Before: the client's own lines (the URL, password and all) or a stack, and "failed to start".
      expect(lines.join('\n')).not.toContain('hunter2');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({
        level: 'error',
        msg: 'refusing to start',
        error: expect.stringMatching(/^EVENTSTORE_URL /),
      });
    }
  }, 60_000);
});
