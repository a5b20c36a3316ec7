import { randomUUID } from 'node:crypto';
import { startTestSystem, type TestSystem } from '../support/system';

const APP = 'https://app.example.com';

/** A raw call, as a browser makes it (t.request's answer check does not apply to a preflight). */
const call = (t: TestSystem, method: string, path: string, headers: Record<string, string>, body?: string) =>
  fetch(t.baseUrl + path, { method, headers, body });

describe('CORS with CORS_ORIGINS set', () => {
  let t: TestSystem;
  beforeAll(async () => {
    t = await startTestSystem({ env: { CORS_ORIGINS: `${APP}, http://localhost:5173` } });
  });
  afterAll(async () => t.close());

  it('lets an allowed origin read answers and the headers it needs, errors included', async () => {
    const ok = await t.request('GET', '/healthz', { headers: { Origin: APP } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(APP);
    expect(ok.headers.get('vary')).toMatch(/Origin/);
    expect(ok.headers.get('access-control-expose-headers')?.split(', ')).toEqual(
      expect.arrayContaining(['X-Request-Id', 'Idempotent-Replayed', 'X-Media-Id', 'Content-Range']),
    );
    expect(ok.headers.get('access-control-allow-credentials')).toBeNull();
    const denied = await t.request('GET', '/api/v1/notifications', {
      headers: { Origin: 'http://localhost:5173' },
    });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    const token = t.token(randomUUID(), ['client']);
    const invalid = await t.request('POST', '/api/v1/nav/addreses', {
      token,
      body: {},
      headers: { Origin: APP },
    });
    expect(invalid.status).toBe(422);
    expect(invalid.headers.get('access-control-allow-origin')).toBe(APP);
    const unknown = await t.request('GET', '/api/v1/nope', { headers: { Origin: APP } });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('access-control-allow-origin')).toBe(APP);
  });

  it('lets an app read the headers the docs tell it to act on: Retry-After (503, 409 conflict) and 405 Allow', async () => {
    // Neither is CORS-safelisted: unless exposed, a browser app sees them as absent.
    const wrong = await call(t, 'PATCH', '/api/v1/nav/addreses', { Origin: APP });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toContain('POST');
    const exposed = wrong.headers.get('access-control-expose-headers')?.toLowerCase().split(', ');
    expect(exposed).toEqual(expect.arrayContaining(['retry-after', 'allow']));
  });

  it('answers an allowed preflight with the methods and headers a call may use', async () => {
    const res = await call(t, 'OPTIONS', '/api/v1/service/' + randomUUID(), {
      Origin: APP,
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization, content-type, idempotency-key',
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
    expect(res.headers.get('access-control-allow-methods')?.split(', ')).toEqual(
      expect.arrayContaining(['GET', 'POST', 'PUT', 'DELETE']),
    );
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase().split(', ')).toEqual(
      expect.arrayContaining([
        'authorization',
        'content-type',
        'idempotency-key',
        'x-request-id',
        'x-correlation-id',
      ]),
    );
    expect(res.headers.get('access-control-max-age')).toBe('600');
    expect(await res.text()).toBe('');
  });

  it('gives another origin nothing to read by, preflight or call', async () => {
    for (const origin of [
      'https://evil.example.com',
      'https://app.example.com.evil.com',
      'null',
      'https://APP.example.com',
    ]) {
      const get = await t.request('GET', '/healthz', { headers: { Origin: origin } });
      expect(get.status).toBe(200);
      expect(get.headers.get('access-control-allow-origin')).toBeNull();
      const pre = await call(t, 'OPTIONS', '/api/v1/nav/addreses', {
        Origin: origin,
        'Access-Control-Request-Method': 'POST',
      });
      expect(pre.headers.get('access-control-allow-origin')).toBeNull();
      expect(pre.headers.get('access-control-allow-methods')).toBeNull();
    }
  });

  it('leaves a plain OPTIONS (no preflight) to the router: 200 with Allow', async () => {
    const res = await call(t, 'OPTIONS', '/api/v1/nav/addreses', { Origin: APP });
    expect(res.status).toBe(200);
    expect(res.headers.get('allow')).toContain('POST');
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
  });
});

describe('CORS_ORIGINS=*', () => {
  let t: TestSystem;
  beforeAll(async () => {
    t = await startTestSystem({ env: { CORS_ORIGINS: '*' } });
  });
  afterAll(async () => t.close());

  it('lets any origin read answers (tokens travel in a header, never in cookies)', async () => {
    const res = await t.request('GET', '/healthz', { headers: { Origin: 'https://anyone.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('CORS without CORS_ORIGINS', () => {
  let t: TestSystem;
  beforeAll(async () => {
    t = await startTestSystem();
  });
  afterAll(async () => t.close());

  it('adds no CORS header: browsers keep other origins from reading answers', async () => {
    const res = await t.request('GET', '/healthz', { headers: { Origin: APP } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const pre = await call(t, 'OPTIONS', '/healthz', { Origin: APP, 'Access-Control-Request-Method': 'GET' });
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
  });
});
