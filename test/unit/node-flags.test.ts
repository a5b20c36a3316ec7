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

describe('npm start', () => {
  it('hands a SIGTERM sent to npm to the service itself (a supervisor stopping `npm start` stops the service)', async () => {
    // The real start line, run by npm, on a stand-in main.js that reports its pid and the signal it gets.
    // Before, npm passed the signal to the `sh -c` between them, which died and left the service running.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coaching-npm-start-'));
    const start = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'x', scripts: { start } }));
    fs.mkdirSync(path.join(dir, 'dist/src'), { recursive: true });
    fs.writeFileSync(
      path.join(dir, 'dist/src/main.js'),
      `process.on('SIGTERM', () => { console.log('SIGTERM'); process.exit(0); });
       console.log('pid ' + process.pid); setInterval(() => {}, 1000);`,
    );
    const npm = spawn('npm', ['start', '--silent'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
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
  }, 30_000);
});
