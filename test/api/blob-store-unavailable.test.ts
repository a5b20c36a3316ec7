import net from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { eventually } from '../support/marketplace';
import { sendForm, type FormPart } from '../support/multipart';
import { startTestSystem, type TestSystem } from '../support/system';
import { tempDataDir, testS3, type TestS3 } from '../support/s3';

/**
 * S3 (real HTTP: s3rver, or S3_ENDPOINT) behind a proxy that can stop passing requests on: refusing
 * connections, answering 503 as a throttled or starting S3 does, or accepting and never answering. Each
 * is "retry shortly" (503 in the error shape), never a 500 or a request held for minutes, and the stored
 * events never name a file that is not there.
 */
type Mode = 'pass' | 'refuse' | 'busy' | 'stall';
let mode: Mode = 'pass';
let proxy: net.Server;
const sockets = new Set<net.Socket>();
let s3: TestS3;
let dataDir: { dir: string; close(): Promise<void> };
let t: TestSystem;
const TIMEOUT_MS = 1000;

function setMode(m: Mode) {
  mode = m;
  // Connections the client keeps alive were opened in the previous mode.
  for (const s of sockets) s.destroy();
}

beforeAll(async () => {
  dataDir = await tempDataDir();
  s3 = await testS3();
  const target = new URL(s3.env.S3_ENDPOINT!);
  proxy = net.createServer((c) => {
    sockets.add(c);
    c.on('close', () => sockets.delete(c));
    c.on('error', () => undefined);
    if (mode === 'refuse') return c.destroy();
    if (mode === 'stall') return;
    if (mode === 'busy') {
      c.once('data', () => {
        const body =
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>' +
          '<Message>Please reduce your request rate.</Message></Error>';
        c.end(
          `HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\n` +
            `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        );
      });
      return;
    }
    const u = net.connect(Number(target.port || 80), target.hostname);
    u.on('error', () => c.destroy());
    c.on('close', () => u.destroy());
    c.pipe(u).pipe(c);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const { port } = proxy.address() as net.AddressInfo;
  t = await startTestSystem({
    env: {
      DATA_DIR: dataDir.dir,
      ...s3.env,
      S3_ENDPOINT: `http://127.0.0.1:${port}`,
      S3_TIMEOUT_MS: String(TIMEOUT_MS),
    },
  });
});
afterAll(async () => {
  setMode('pass');
  await t?.close();
  await new Promise((r) => proxy?.close(r));
  await s3?.close();
  await dataDir?.close();
});

const coach = () => t.token(randomUUID(), ['coach']);
const send = (method: string, url: string, token: string, parts: FormPart[]) =>
  sendForm(t.baseUrl, method, url, token, parts).then(({ status, body }) => ({ status, body }));
const mp4 = () => ({ bytes: randomBytes(2000), type: 'video/mp4', filename: 'clip.mp4' });
const unavailable = {
  status: 503,
  body: { error: 'service_unavailable', message: expect.any(String), code: 503 },
};
const served = async (url: string) => {
  const res = await fetch(t.baseUrl + url);
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
};
const list = async (token: string) =>
  (await t.request('GET', '/api/v1/storage/videos', { token })).body as { id: string; url: string }[];

it.each<Mode>(['busy', 'refuse', 'stall'])(
  'S3 %s: upload, replace and file download answer 503 soon; nothing is listed that does not serve',
  async (m) => {
    const token = coach();
    const first = mp4();
    const up = await send('POST', '/api/v1/storage/video', token, [{ name: 'file', ...first }]);
    expect(up.status).toBe(200);

    setMode(m);
    try {
      const started = Date.now();
      expect(await send('POST', '/api/v1/storage/video', token, [{ name: 'file', ...mp4() }])).toEqual(
        unavailable,
      );
      expect(
        await send('PUT', `/api/v1/storage/video/${up.body.id}`, token, [{ name: 'file', ...mp4() }]),
      ).toEqual(unavailable);
      const download = await fetch(t.baseUrl + up.body.url, { headers: { range: 'bytes=0-9' } });
      expect({ status: download.status, body: await download.json() }).toEqual(unavailable);
      // Was a 500 (S3 answering 503), or held for two minutes (S3 silent).
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      setMode('pass');
    }

    // The video and its file are as before: the refused replace named nothing.
    expect(await list(token)).toEqual([up.body]);
    const after = await served(up.body.url);
    expect(after.status).toBe(200);
    expect(after.body.equals(first.bytes)).toBe(true);
  },
);

it('S3 busy during a delete: the delete is stored (200) and its files are removed once S3 is back, without a repeat', async () => {
  const token = coach();
  const up = await send('POST', '/api/v1/storage/video', token, [{ name: 'file', ...mp4() }]);
  expect(up.status).toBe(200);
  setMode('busy');
  try {
    expect(await t.request('DELETE', `/api/v1/storage/video/${up.body.id}`, { token })).toMatchObject({
      status: 200,
      body: { id: up.body.id, status: 'deleted' },
    });
  } finally {
    setMode('pass');
  }
  expect(await list(token)).toEqual([]);
  // S3 refused the route's removal; the clean-up process manager, trying again, removes the file.
  const gone = await eventually(
    async () => (await served(up.body.url)).status,
    (status) => status === 404,
    10_000,
  );
  expect(gone).toBe(404);
  expect((await t.request('DELETE', `/api/v1/storage/video/${up.body.id}`, { token })).status).toBe(404);
});
