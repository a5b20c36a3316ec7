import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SERVICE_NODE_FLAGS } from '../../src/nodeFlags';

/**
 * The service runs with the same Node flags wherever it is started for real (`npm start`, the image), and
 * the bench measures it so (bench/http.ts takes them from src/nodeFlags.ts): a figure the README prints
 * must be one an operator gets.
 */
const root = path.join(__dirname, '..', '..');

describe("the service's Node flags", () => {
  it('are on the npm start line', () => {
    const start = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts
      .start as string;
    expect(start).toBe(`exec node ${SERVICE_NODE_FLAGS.join(' ')} dist/src/main.js`);
  });

  it("are on the image's CMD", () => {
    const cmd = /^CMD (.*)$/m.exec(fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8'))?.[1];
    expect(JSON.parse(cmd ?? 'null')).toEqual(['node', ...SERVICE_NODE_FLAGS, 'dist/src/main.js']);
  });
});

describe('npm start, npm run rebuild, npm run seed', () => {
  it.each([
    ['start', 'dist/src/main.js'],
    ['rebuild', 'dist/src/cli/rebuild.js'],
    ['seed', 'dist/src/cli/seed.js'],
  ])(
    'npm run %s hands a SIGTERM sent to npm to the program itself (a supervisor stopping npm stops it)',
    async (script, file) => {
      // The real script line, run by npm, on a stand-in program that reports its pid and the signal it gets
      // (a build that does nothing). Before, npm passed the signal to the `sh -c` between them, which died
      // and left the program running (the service: its port, leases and PGlite's lock).
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coaching-npm-run-'));
      const line = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts[script];
      fs.writeFileSync(
        path.join(dir, 'package.json'),
        JSON.stringify({ name: 'x', scripts: { [script]: line, build: 'true' } }),
      );
      fs.mkdirSync(path.join(dir, path.dirname(file)), { recursive: true });
      fs.writeFileSync(
        path.join(dir, file),
        `process.on('SIGTERM', () => { console.log('SIGTERM'); process.exit(0); });
         console.log('pid ' + process.pid); setInterval(() => {}, 1000);`,
      );
      const npm = spawn('npm', ['run', script, '--silent', '--ignore-scripts'], {
        cwd: dir,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      const pid = await new Promise<number>((resolve) =>
        npm.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /pid (\d+)/.exec(out);
          if (m) resolve(Number(m[1]));
        }),
      );
      const alive = (p: number) => {
        try {
          process.kill(p, 0);
          return true;
        } catch {
          return false;
        }
      };
      try {
        npm.kill('SIGTERM');
        await new Promise((r) => npm.once('exit', r));
        for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
        expect(alive(pid)).toBe(false);
        expect(out).toContain('SIGTERM');
      } finally {
        if (alive(pid)) process.kill(pid, 'SIGKILL');
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
    30_000,
  );
});
