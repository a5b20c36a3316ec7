import fs from 'node:fs';
import path from 'node:path';
import net, { type AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import Koa from 'koa';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { ConfigError, loadConfig } from '../../src/config';
import { DEFAULT_TIMEOUTS, createHttpServer } from '../../src/http/server';
import { eventually, marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * Hostile input below and around the routes: what Node's HTTP parser refuses, clients that stop sending,
 * free-form JSON that is too deep or too large, text PostgreSQL cannot store, tokens that never expire,
 * and the production configuration checks. (test/api/bad-input.test.ts sends most of this to every route.)
 */

let t: TestSystem;
beforeAll(async () => {
  t = await startTestSystem({
    env: { JWT_SECRET: 'test-secret', HEADERS_TIMEOUT_MS: '1000', BODY_IDLE_TIMEOUT_MS: '1000' },
  });
});
afterAll(() => t?.close());

/** Writes raw bytes to the server and resolves with everything it answers until it closes the socket. */
function raw(chunks: string[], opts: { holdOpenMs?: number } = {}): Promise<{ text: string; ms: number }> {
  const { port } = new URL(t.baseUrl);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (d) => (text += d.toString('utf8')));
    socket.on('error', reject);
    let timer: NodeJS.Timeout | undefined;
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, ms: Date.now() - started });
    });
    socket.on('connect', () => {
      for (const c of chunks) socket.write(c);
      // Never ends: the server must give up on its own.
      if (opts.holdOpenMs) timer = setTimeout(() => socket.destroy(), opts.holdOpenMs);
    });
  });
}

const statusAndBody = (text: string) => {
  const [head = '', body = ''] = text.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), head, body: body ? JSON.parse(body) : undefined };
};

describe('transport', () => {
  it('answers headers over the limit with 431 in the error shape', async () => {
    const res = await t.request('GET', '/api/v1/nav/addreses', {
      headers: { authorization: `Bearer ${'x'.repeat(20_000)}` },
    });
    expect(res.status).toBe(431);
    expect(res.body).toEqual({
      error: 'request_header_fields_too_large',
      message: expect.any(String),
      code: 431,
    });
  });

  it('answers a body shorter than its Content-Length with 408 within seconds', async () => {
    const body = '{"name":"short"';
    const { text, ms } = await raw(
      [
        `POST /api/v1/nav/addreses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
          `Authorization: Bearer ${t.token(randomUUID())}\r\nContent-Length: 500\r\n\r\n${body}`,
      ],
      { holdOpenMs: 20_000 },
    );
    const r = statusAndBody(text);
    expect(r.status).toBe(408);
    expect(r.body).toEqual({ error: 'request_timeout', message: expect.any(String), code: 408 });
    expect(ms).toBeLessThan(10_000);
  });

  it('removes the partial file of an upload whose body stops arriving (408), as of one the client drops', async () => {
    const uploads = path.join(t.config.dataDir, 'uploads');
    const leftovers = () => (fs.existsSync(uploads) ? fs.readdirSync(uploads) : []);
    const part =
      '--B\r\nContent-Disposition: form-data; name="file"; filename="v.mp4"\r\nContent-Type: video/mp4\r\n\r\n';
    for (const sent of [10, 200_000]) {
      const { text } = await raw(
        [
          `POST /api/v1/storage/video HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.token(randomUUID(), ['coach'])}\r\n` +
            `Content-Type: multipart/form-data; boundary=B\r\nContent-Length: 5000000\r\n\r\n${part}${'v'.repeat(sent)}`,
        ],
        { holdOpenMs: 20_000 },
      );
      expect(statusAndBody(text).status).toBe(408);
      expect(
        await eventually(
          async () => leftovers(),
          (l) => l.length === 0,
          5_000,
        ),
      ).toEqual([]);
    }
  });

  it('answers headers that stop arriving with 408 in the error shape', async () => {
    const { text, ms } = await raw(['GET /api/v1/nav/addreses HTTP/1.1\r\nHost: x\r\nX-Slow: '], {
      holdOpenMs: 20_000,
    });
    const r = statusAndBody(text);
    expect(r.status).toBe(408);
    expect(r.body).toEqual({ error: 'request_timeout', message: expect.any(String), code: 408 });
    expect(ms).toBeLessThan(10_000);
  });

  it('answers a malformed request line with 400 in the error shape', async () => {
    const { text } = await raw(['NOT HTTP AT ALL\r\n\r\n'], { holdOpenMs: 10_000 });
    const r = statusAndBody(text);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: 'bad_request', code: 400 });
  });

  it('answers an Expect other than 100-continue with 417 in the error shape and closes the connection', async () => {
    const token = t.token(randomUUID());
    const { text } = await raw(
      [
        `POST /api/v1/nav/addreses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
          'Content-Type: application/json\r\nExpect: 999-whatever\r\nContent-Length: 2\r\n\r\n{}',
      ],
      { holdOpenMs: 5_000 },
    );
    const r = statusAndBody(text);
    expect(r.status).toBe(417);
    expect(r.head).toMatch(/content-type: application\/json/i);
    expect(r.body).toEqual({ error: 'expectation_failed', message: expect.any(String), code: 417 });
  });

  it('answers a method the path does not take with 405 and Allow, also one no route takes (TRACE), never 501', async () => {
    for (const method of ['TRACE', 'PROPFIND', 'PATCH', 'DELETE']) {
      const { text } = await raw(
        [`${method} /api/v1/nav/addreses HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`],
        {
          holdOpenMs: 5_000,
        },
      );
      const r = statusAndBody(text);
      expect([method, r.status]).toEqual([method, 405]);
      const allow = /\r\nAllow: ([^\r]*)/i.exec(r.head)?.[1]?.split(', ').sort();
      expect(allow).toEqual(['GET', 'HEAD', 'POST']);
      expect(r.body).toEqual({ error: 'method_not_allowed', message: expect.any(String), code: 405 });
    }
  });

  it('answers CONNECT with 405 in the error shape instead of dropping the connection', async () => {
    for (const target of ['/api/v1/nav/addreses', 'example.com:443']) {
      const { text } = await raw([`CONNECT ${target} HTTP/1.1\r\nHost: x\r\n\r\n`], { holdOpenMs: 5_000 });
      const r = statusAndBody(text);
      expect(r.status).toBe(405);
      expect(r.body).toEqual({ error: 'method_not_allowed', message: expect.any(String), code: 405 });
    }
  });

  it('answers an HTTP/1.1 request without Host with 400 in the error shape (Node sent an empty body)', async () => {
    const { text } = await raw(['GET /api/v1/nav/addreses HTTP/1.1\r\nConnection: close\r\n\r\n'], {
      holdOpenMs: 5_000,
    });
    const r = statusAndBody(text);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: 'bad_request', message: expect.stringMatching(/Host/), code: 400 });
    // HTTP/1.0 needs no Host: served as before (401: the route needs a token).
    const old = statusAndBody(
      (await raw(['GET /api/v1/nav/addreses HTTP/1.0\r\n\r\n'], { holdOpenMs: 5_000 })).text,
    );
    expect(old.status).toBe(401);
  });

  it('gives the answers Node makes itself an X-Request-Id too, as every answer has', async () => {
    const big = await t.request('GET', '/api/v1/nav/addreses', {
      headers: { authorization: `Bearer ${'x'.repeat(20_000)}` },
    });
    expect(big.status).toBe(431);
    expect(big.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const token = t.token(randomUUID());
    for (const [request, status] of [
      ['GET /api/v1/nav/addreses HTTP/1.1\r\nConnection: close\r\n\r\n', 400],
      ['GET /a b c HTTP/1.1\r\nHost: x\r\n\r\n', 400],
      [
        `POST /api/v1/nav/addreses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
          'Content-Type: application/json\r\nExpect: 999-whatever\r\nContent-Length: 2\r\n\r\n{}',
        417,
      ],
      ['CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n', 405],
      [
        'POST /api/v1/nav/addreses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
          `Authorization: Bearer ${token}\r\nContent-Length: 500\r\n\r\n{"name"`,
        408,
      ],
    ] as const) {
      const r = statusAndBody((await raw([request], { holdOpenMs: 5_000 })).text);
      expect({ status: r.status, id: /\r\nX-Request-Id: ([0-9a-f-]{36})\r\n/i.test(r.head) }).toEqual({
        status,
        id: true,
      });
    }
  });

  it('serves several requests on one kept-alive connection (the body timeout ends with the body)', async () => {
    const token = t.token(randomUUID());
    const req = `GET /api/v1/nav/addreses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`;
    const { text } = await raw([req, req], { holdOpenMs: 1500 });
    expect(text.match(/HTTP\/1\.1 200 OK/g)).toHaveLength(2);
  });
});

describe('a request answered before its body has arrived (a 401 or 413 to an upload)', () => {
  // A server of its own with a short request timeout; its one route answers 401 without reading the body,
  // as an upload without a token is. Node then reads the rest of the body and throws it away.
  const app = new Koa();
  app.use((ctx) => {
    ctx.status = 401;
    ctx.body = { error: 'unauthorized', message: 'a valid bearer token is required', code: 401 };
  });
  const server = createHttpServer(app, {
    ...DEFAULT_TIMEOUTS,
    headersTimeoutMs: 1000,
    requestTimeoutMs: 2000,
    bodyIdleTimeoutMs: 1000,
  });
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  /** Sends the head of a request, then `rest` every 200 ms until the server closes; what it answered. */
  const upload = (head: string, rest: () => string) =>
    new Promise<{ text: string; ms: number }>((resolve, reject) => {
      const started = Date.now();
      const socket = net.connect(port, '127.0.0.1', () => socket.write(head));
      let text = '';
      const more = setInterval(() => socket.writable && socket.write(rest()), 200);
      socket.on('data', (d) => (text += d.toString('utf8')));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearInterval(more);
        resolve({ text, ms: Date.now() - started });
      });
      setTimeout(() => reject(new Error(`still open after 10 s; answered ${text}`)), 10_000).unref();
    });
  const answers = (text: string) => text.match(/HTTP\/1\.1 \d{3}/g);

  it('answers once: a body still arriving at REQUEST_TIMEOUT_MS loses its connection, without a second (408) answer', async () => {
    const { text, ms } = await upload(
      'POST /api/v1/storage/video HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=B\r\n' +
        'Content-Length: 100000000\r\n\r\n',
      () => 'x'.repeat(1000),
    );
    expect(answers(text)).toEqual(['HTTP/1.1 401']);
    expect(ms).toBeLessThan(6_000);
  });

  it('answers once: a malformed chunk in the rest of the body closes the connection, without a second (400) answer', async () => {
    let sent = 0;
    const { text } = await upload(
      'POST /api/v1/storage/video HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=B\r\n' +
        'Transfer-Encoding: chunked\r\n\r\n4\r\nxxxx\r\n',
      () => (sent++ < 2 ? '4\r\nxxxx\r\n' : 'not a chunk\r\n'),
    );
    expect(answers(text)).toEqual(['HTTP/1.1 401']);
  });
});

describe('KEEP_ALIVE_TIMEOUT_MS (idle kept-alive connections)', () => {
  // A load balancer that keeps idle connections to its backends longer than the service (Google Cloud's
  // keeps them 600 s) reuses one the service is closing: its request is lost, a 502. It must be settable.
  it('closes idle kept-alive connections after 65 s by default, or after KEEP_ALIVE_TIMEOUT_MS (at least 1)', () => {
    expect(loadConfig({}).http.keepAliveTimeoutMs).toBe(65_000);
    const http = loadConfig({ KEEP_ALIVE_TIMEOUT_MS: '620000' }).http;
    const server = createHttpServer(new Koa(), http);
    expect(server.keepAliveTimeout).toBe(620_000);
    server.close();
    for (const bad of ['0', '-1', 'long'])
      expect(() => loadConfig({ KEEP_ALIVE_TIMEOUT_MS: bad })).toThrow(/KEEP_ALIVE_TIMEOUT_MS/);
  });
});

describe('HEADERS_TIMEOUT_MS=0 (no limit on the headers)', () => {
  it("checks the request timeout once a second, not on a timer of 0 ms (1 ms: a busy loop's CPU)", () => {
    const server = createHttpServer(new Koa(), { ...DEFAULT_TIMEOUTS, headersTimeoutMs: 0 });
    expect((server as unknown as { connectionsCheckingInterval: number }).connectionsCheckingInterval).toBe(
      1000,
    );
    server.close();
  });
});

describe('responses to clients that stop reading', () => {
  // A server of its own with a short response timeout: an endless body (more than any socket buffer holds,
  // as an asset or the audit export is for a client whose window is shut) and a handler slower than it.
  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.path === '/slow') {
      await new Promise((r) => setTimeout(r, 2500));
      ctx.body = { ok: true };
      return;
    }
    const chunk = Buffer.alloc(64 * 1024, 'a');
    ctx.body = new Readable({
      read() {
        this.push(chunk);
      },
    });
  });
  const server = createHttpServer(app, { ...DEFAULT_TIMEOUTS, responseIdleTimeoutMs: 1000 });
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('closes the connection of a client that takes nothing of a response for RESPONSE_IDLE_TIMEOUT_MS', async () => {
    const started = Date.now();
    // Measured at the server: a client that reads nothing does not see the close either.
    const serverClosed = new Promise<number>((resolve) =>
      server.once('connection', (s: net.Socket) => s.once('close', () => resolve(Date.now() - started))),
    );
    let received = 0;
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n');
      // Takes the first bytes, then reads no more (its window stays shut).
      socket.once('data', (d: Buffer) => {
        received += d.length;
        socket.pause();
      });
    });
    socket.on('error', () => undefined);
    const closedAfter = await Promise.race([
      serverClosed,
      new Promise<number>((r) => setTimeout(() => r(Infinity), 12_000)),
    ]);
    socket.destroy();
    expect(received).toBeGreaterThan(0);
    expect(closedAfter).toBeLessThan(10_000);
  });

  it('still answers a handler slower than the timeout (nothing was waiting for the client)', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/slow`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });
});

describe("static files (Swagger UI, the operators' page)", () => {
  it('answers an asset named like a property every object has with 404, not a dropped connection', async () => {
    for (const dir of ['/docs', '/admin/assets'])
      for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
        const res = await fetch(`${t.baseUrl}${dir}/${name}`).catch((e: unknown) => e as Error);
        const answer = res instanceof Response ? { status: res.status, body: await res.json() } : String(res);
        expect({ path: `${dir}/${name}`, answer }).toEqual({
          path: `${dir}/${name}`,
          answer: { status: 404, body: { error: 'not_found', message: expect.any(String), code: 404 } },
        });
      }
  });
});

describe('wide bodies (within the 256 kB limit)', () => {
  // 240 kB of JSON can hold 120,000 array items or 30,000 keys. Each was walked, decoded and answered one
  // issue apiece: 4 s of the event loop (every other client waited) and a 10 MB 422.
  // Timed without the OpenAPI answer check `t.request` runs (its first call compiles the document).
  const timed = async (method: string, url: string, token: string, body: string) => {
    const started = Date.now();
    const res = await fetch(t.baseUrl + url, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body,
    });
    const text = await res.text();
    return { status: res.status, body: JSON.parse(text), ms: Date.now() - started, bytes: text.length };
  };

  it('refuses an array of more than 10,000 items at the array, at once and in a short answer', async () => {
    const order = `{"order":[${Array(120_000).fill('1').join(',')}]}`;
    const res = await timed('PUT', '/api/v1/storage/videos/order', t.token(randomUUID(), ['coach']), order);
    expect({ status: res.status, detail: res.body.detail }).toEqual({
      status: 422,
      detail: [{ loc: ['body', 'order'], msg: 'Input should have at most 10000 items', type: 'too_long' }],
    });
    expect(res.ms).toBeLessThan(2_000);
  });

  it('refuses an object of more than 10,000 keys at the object', async () => {
    const wide = JSON.stringify(
      Object.fromEntries(Array.from({ length: 30_000 }, (_, i) => [i.toString(36), 0])),
    );
    const res = await timed('POST', '/api/v1/nav/addreses', t.token(randomUUID()), wide);
    expect({ status: res.status, detail: res.body.detail }).toEqual({
      status: 422,
      detail: [{ loc: ['body'], msg: 'Input should have at most 10000 items', type: 'too_long' }],
    });
    expect(res.ms).toBeLessThan(2_000);
  });

  it('lists at most 100 issues in a 422 (the first ones)', async () => {
    const order = `{"order":[${Array(9_000).fill('1').join(',')}]}`;
    const res = await timed('PUT', '/api/v1/storage/videos/order', t.token(randomUUID(), ['coach']), order);
    expect(res.status).toBe(422);
    expect(res.body.detail).toHaveLength(100);
    expect(res.body.detail[0]).toEqual({
      loc: ['body', 'order', 0],
      msg: 'Input should be string',
      type: 'invalid_string',
    });
    expect(res.bytes).toBeLessThan(20_000);
  });
});

describe('free-form JSON and text', () => {
  it('refuses a 40,000-deep checkout, a 9-deep one and a 17 kB one at body.checkout', async () => {
    const url = `/api/v1/payment/private/payment/${randomUUID()}/update`;
    const token = t.token(randomUUID(), ['service']);
    const deep = '{"a":'.repeat(40_000) + '1' + '}'.repeat(40_000);
    const deepBody = `{"status":"checkout","checkout":${deep}}`;
    const a = await t.request('POST', url, { token, body: deepBody });
    expect(a.status).toBe(422);
    let nine: unknown = 1;
    for (let i = 0; i < 9; i++) nine = { a: nine };
    const b = await t.request('POST', url, { token, body: { status: 'checkout', checkout: nine } });
    expect(b.status).toBe(422);
    expect(b.body.detail[0].loc).toEqual(['body', 'checkout']);
    expect(b.body.detail[0].msg).toMatch(/8 levels/);
    const c = await t.request('POST', url, {
      token,
      body: { status: 'checkout', checkout: { blob: 'x'.repeat(17_000) } },
    });
    expect(c.status).toBe(422);
    expect(c.body.detail[0]).toMatchObject({
      loc: ['body', 'checkout'],
      msg: expect.stringMatching(/16384 bytes/),
    });
  });

  it('refuses a number no double holds (1e400) in a checkout or a card: it was stored as null', async () => {
    const url = `/api/v1/payment/private/payment/${randomUUID()}/update`;
    const token = t.token(randomUUID(), ['service']);
    for (const checkout of ['{"amount":1e400}', '{"a":[1,-1e999]}']) {
      const res = await t.request('POST', url, {
        token,
        body: `{"status":"checkout","checkout":${checkout}}`,
      });
      expect({ checkout, status: res.status }).toEqual({ checkout, status: 422 });
      expect(res.body.detail[0]).toMatchObject({
        loc: ['body', 'checkout'],
        msg: expect.stringMatching(/1e400/),
      });
    }
    const m = marketplace(t);
    const serviceId = await m.offering(await m.coach());
    const client = await m.client();
    const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: `{"slots":["2030-01-07T10:00:00"],"card":{"n":1e400}}`,
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'card']);
  });

  it('refuses a deep card with an Idempotency-Key (the key hashes the body) without a 500', async () => {
    const m = marketplace(t);
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const deep = '{"a":'.repeat(40_000) + '1' + '}'.repeat(40_000);
    const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      headers: { 'idempotency-key': randomUUID() },
      body: `{"slots":["2026-12-02T10:00:00"],"method":"card","card":${deep}}`,
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].type).toBe('too_deep');
  });

  it('refuses NUL and lone surrogates at the field, and stores a real emoji', async () => {
    const token = t.token(randomUUID());
    const base = { lat: 1, lng: 2, address: 'a', zoom: 3, isDefault: false };
    const nul = await t.request('POST', '/api/v1/nav/addreses', {
      token,
      body: { ...base, name: 'a\u0000b' },
    });
    expect(nul.status).toBe(422);
    expect(nul.body.detail).toEqual([
      { loc: ['body', 'name'], msg: expect.stringMatching(/NUL/), type: 'string_invalid_text' },
    ]);
    // In an object key the type says so (docs/api.md, Conventions).
    const key = await t.request('POST', '/api/v1/nav/addreses', {
      token,
      body: `{"lat":1,"lng":2,"address":"a","name":"n","na\\u0000me":1}`,
    });
    expect(key.status).toBe(422);
    expect(key.body.detail).toEqual([
      { loc: ['body', 'na\u0000me'], msg: expect.stringMatching(/^Key: .*NUL/), type: 'key_invalid_text' },
    ]);
    const lone = await t.request('POST', '/api/v1/nav/addreses', {
      token,
      body: `{"lat":1,"lng":2,"address":"a","zoom":3,"isDefault":false,"name":"x\\ud83d"}`,
    });
    expect(lone.status).toBe(422);
    expect(lone.body.detail[0].loc).toEqual(['body', 'name']);
    const ok = await t.request('POST', '/api/v1/nav/addreses', { token, body: { ...base, name: 'Home 🏠' } });
    expect(ok.status).toBe(200);
    expect(JSON.stringify(ok.body)).toContain('Home 🏠');
  });

  it('refuses dates outside the years 1900 to 2200', async () => {
    const coach = await marketplace(t).coach();
    for (const d of ['0000-01-01', '1899-12-31', '2201-01-01']) {
      const res = await t.request('GET', `/api/v1/coach/${coach.id}/availability?from_date=${d}`, {
        token: t.token(randomUUID()),
      });
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['query', 'from_date']);
    }
  });
});

describe('tokens', () => {
  const secret = 'test-secret';
  const get = (token: string) => t.request('GET', '/api/v1/nav/addreses', { token });

  it('refuses a token without exp', async () => {
    const res = await get(jwt.sign({ sub: randomUUID(), roles: ['client'] }, secret));
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      error: 'unauthorized',
      message: expect.stringMatching(/no expiry/),
      code: 401,
    });
  });

  it('refuses a token expiring further ahead than JWT_MAX_TTL_SECONDS (30 days by default)', async () => {
    const far = jwt.sign({ sub: randomUUID(), roles: ['admin'] }, secret, { expiresIn: 365 * 24 * 3600 });
    const res = await get(far);
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/expires more than/);
    const ok = jwt.sign({ sub: randomUUID(), roles: ['client'] }, secret, { expiresIn: 29 * 24 * 3600 });
    expect((await get(ok)).status).toBe(200);
  });

  it('accepts the tokens the test helpers and npm run token mint', async () => {
    expect((await get(t.token(randomUUID()))).status).toBe(200);
  });
});

describe('production configuration', () => {
  const prod = (env: NodeJS.ProcessEnv) => () => loadConfig({ NODE_ENV: 'production', ...env });

  it('refuses to start without JWT_SECRET or JWT_PUBLIC_KEY', () => {
    expect(prod({})).toThrow(ConfigError);
    expect(prod({ JWT_SECRET: '' })).toThrow(/JWT_SECRET/);
  });

  it('refuses known development secrets and short ones', () => {
    for (const s of [
      'dev-only-secret-change-me',
      'change-me-in-production',
      'CHANGE-ME-IN-PRODUCTION',
      'secret',
    ])
      expect(prod({ JWT_SECRET: s })).toThrow(ConfigError);
    expect(prod({ JWT_SECRET: 'x'.repeat(31) })).toThrow(/32 bytes/);
    // White space is not secret: 32 spaces, or a short value padded to 32 bytes, are refused.
    expect(prod({ JWT_SECRET: ' '.repeat(32) })).toThrow(/32 bytes/);
    expect(prod({ JWT_SECRET: `abc${' '.repeat(29)}\n` })).toThrow(/32 bytes/);
    expect(prod({ JWT_SECRET: `\t${'k'.repeat(32)}\n` })().jwt.secret).toBe(`\t${'k'.repeat(32)}\n`);
  });

  it('starts with a 32-byte secret or a public key', () => {
    expect(prod({ JWT_SECRET: 'k'.repeat(32) })().jwt.secret).toBe('k'.repeat(32));
    const { publicKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    expect(prod({ JWT_PUBLIC_KEY: publicKey })().jwt.publicKey).toBe(publicKey);
  });

  it('keeps the development default outside production', () => {
    expect(loadConfig({}).jwt.usingDevSecret).toBe(true);
  });

  it('takes DATABASE_POOL_SIZE as a count of at least 1 (default 10)', () => {
    expect(loadConfig({}).databasePoolSize).toBe(10);
    expect(loadConfig({ DATABASE_POOL_SIZE: '24' }).databasePoolSize).toBe(24);
    for (const bad of ['0', '-1', '2.5', 'many'])
      expect(() => loadConfig({ DATABASE_POOL_SIZE: bad })).toThrow(/DATABASE_POOL_SIZE/);
  });
});
