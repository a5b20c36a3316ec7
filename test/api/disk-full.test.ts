import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { sendForm } from '../support/multipart';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * Uploads while the disk under DATA_DIR is full (many uploads at once, or anything else filling it): the
 * upload's temporary file (DATA_DIR/uploads) or the stored blob (DATA_DIR/blobs) cannot be written. That is
 * the service's state, not the request's fault, and passes once space is freed: 503 to retry, never a 500.
 * Each directory is a small tmpfs, which needs root (mount); elsewhere the suite is skipped, saying why.
 */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coaching-disk-full-'));
const uploads = path.join(dataDir, 'uploads');
const blobs = path.join(dataDir, 'blobs');
const mounted: string[] = [];
const mountTmpfs = (dir: string, size: string) => {
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'ignore' });
  mounted.push(dir);
};
let canMount = true;
try {
  mountTmpfs(uploads, '1m');
  mountTmpfs(blobs, '512k');
} catch {
  canMount = false;
  console.log('disk-full: skipped, mounting a small tmpfs needs root (mount -t tmpfs)');
}
const suite = canMount ? describe : describe.skip;

let t: TestSystem;
beforeAll(async () => {
  if (canMount) t = await startTestSystem({ env: { DATA_DIR: dataDir } });
});
afterAll(async () => {
  await t?.close();
  for (const dir of mounted.reverse()) execFileSync('umount', [dir]);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

suite('uploads on a full disk', () => {
  const video = (bytes: number) => [
    { name: 'file', bytes: Buffer.alloc(bytes, 1), type: 'video/mp4', filename: 'clip.mp4' },
  ];
  const unavailable = {
    status: 503,
    body: { error: 'service_unavailable', message: expect.stringMatching(/disk/), code: 503 },
    retryAfter: '1',
  };

  it('answers 503 with Retry-After when the temporary file or the blob cannot be written, and keeps nothing', async () => {
    const coach = randomUUID();
    const token = t.token(coach, ['coach']);
    // 2 MB into a 1 MB DATA_DIR/uploads: the temporary file; 700 kB into a 512 kB DATA_DIR/blobs: the blob.
    for (const bytes of [2_000_000, 700_000]) {
      const res = await sendForm(t.baseUrl, 'POST', '/api/v1/storage/video', token, video(bytes));
      expect({ status: res.status, body: res.body, retryAfter: res.headers.get('retry-after') }).toEqual(
        unavailable,
      );
    }
    // Nothing half-written is left: no temporary upload, no partial blob, no stored file.
    expect(fs.readdirSync(uploads)).toEqual([]);
    expect(
      ['tmp', 'data'].flatMap((d) =>
        fs.readdirSync(path.join(blobs, d), { recursive: true, encoding: 'utf8' }),
      ),
    ).toEqual([]);
    expect((await t.request('GET', '/api/v1/storage/videos', { token })).body).toEqual([]);
    // A file that fits is taken.
    const small = await sendForm(t.baseUrl, 'POST', '/api/v1/storage/video', token, video(100_000));
    expect(small.status).toBe(200);
  });
});
