import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually } from './marketplace';
import { freePort } from './services';

export { freePort };

export interface ServiceProcess {
  child: ChildProcess;
  port: number;
  base: string;
  dataDir: string;
  /** What the process wrote to stdout and stderr, so far. */
  output: () => string;
  /** Its exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** Kills it if it still runs, waits for it, and removes its data directory. */
  cleanUp(): Promise<void>;
}

/**
 * `src/main.ts` as `npm start` runs it, in a child process (compiled on load by the Jest transformer's swc),
 * with its own data directory (as cwd and DATA_DIR) and port; resolves once `/healthz` answers 200.
 */
export async function startServiceProcess(
  env: Record<string, string>,
  name: string,
): Promise<ServiceProcess> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `coaching-${name}-`));
  const port = await freePort();
  const chunks: string[] = [];
  const child = fork(path.join(__dirname, '../../src/main.ts'), [], {
    cwd: dataDir,
    execArgv: ['-r', path.join(__dirname, 'register-ts.cjs')],
    env: { PATH: process.env.PATH, PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  child.stdout!.on('data', (d: Buffer) => chunks.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => chunks.push(d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const service: ServiceProcess = {
    child,
    port,
    base: `http://127.0.0.1:${port}`,
    dataDir,
    output: () => chunks.join(''),
    exited,
    async cleanUp() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  try {
    const up = await eventually(
      () =>
        fetch(`${service.base}/healthz`).then(
          (r) => r.status,
          () => 0,
        ),
      (s) => s === 200,
      60_000,
    );
    expect({ up, output: up === 200 ? '' : service.output() }).toEqual({ up: 200, output: '' });
  } catch (err) {
    await service.cleanUp();
    throw err;
  }
  return service;
}
