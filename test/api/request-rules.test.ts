import { randomUUID } from 'node:crypto';
import http from 'node:http';
import zlib from 'node:zlib';
import jwt from 'jsonwebtoken';
import { guardOf } from '../../src/http/auth';
import { routers } from '../../src/routes';
import { marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

const now = new Date('2026-12-01T08:00:00Z');
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
beforeAll(async () => {
  t = await startTestSystem({ clock: () => now });
  m = marketplace(t);
});
afterAll(() => t.close());

/** `Content-Type: application/json` and no body at all, as the interface document's callers send it. */
const emptyJson = (method: string, path: string, token: string) =>
  t.request(method, path, { token, headers: { 'content-type': 'application/json' } });

async function booking(slots: string[]) {
  const coach = await m.coach();
  const serviceId = await m.offering(coach, { numberOfSessions: slots.length });
  const client = await m.client();
  const res = await t.request('POST', `/api/v1/service/${serviceId}`, {
    token: client.token,
    body: { slots },
  });
  expect(res.status).toBe(200);
  return { coach, client, serviceId, sessions: res.body as { id: string; groupId: string }[] };
}

describe('an empty JSON body reads as {}', () => {
  it('on the e-mail endpoints 18 to 23', async () => {
    const { coach, client, sessions } = await booking(['2026-12-02T10:00:00']);
    const s = sessions[0]!;
    const base = '/api/v1/notification/private/email';
    const calls: [string, string][] = [
      [`${base}/${client.id}/session/${s.groupId}/booking`, 'booking'],
      [`${base}/${client.id}/session/${s.id}/approve`, 'approve'],
      [`${base}/${client.id}/session/${s.id}/cancel`, 'cancel'],
      [`${base}/${client.id}/session/${s.id}/decline`, 'decline'],
      [`${base}/${coach.id}/session/${s.id}/dispute`, 'dispute'],
    ];
    for (const [path, template] of calls) {
      const res = await emptyJson('POST', path, m.service());
      expect({ path, status: res.status, body: res.body }).toEqual({
        path,
        status: 200,
        body: { id: expect.any(String), status: 'queued', to: expect.any(String), template },
      });
    }
    // 18's body is required (a code or a link): read as {}, it is 422, not an e-mail with nothing to verify.
    const verification = await emptyJson('POST', `${base}/${client.id}/verification`, m.service());
    expect([verification.status, verification.body.detail[0].loc]).toEqual([422, ['body']]);
  });

  it('on session decline and cancel, service reject and update, and the profile upsert', async () => {
    const { coach, client, serviceId, sessions } = await booking([
      '2026-12-02T10:00:00',
      '2026-12-03T10:00:00',
    ]);
    const declined = await emptyJson('POST', `/api/v1/session/${sessions[0]!.id}/decline`, coach.token);
    expect(declined.status).toBe(200);
    expect(declined.body.state).toBe('declined');
    const canceled = await emptyJson('POST', `/api/v1/session/${sessions[1]!.id}/cancel`, client.token);
    expect(canceled.status).toBe(200);
    expect(canceled.body.state).toBe('canceled');

    const updated = await emptyJson('PUT', `/api/v1/coach/services/${serviceId}`, coach.token);
    expect(updated.status).toBe(200);
    expect(updated.body.id).toBe(serviceId);
    const rejected = await emptyJson('POST', `/api/v1/admin/services/${serviceId}/reject`, m.admin());
    expect(rejected.status).toBe(200);
    expect(rejected.body.status).toBe('rejected');
    const upsert = await emptyJson('PUT', `/api/v1/users/${client.id}`, m.service());
    expect(upsert.status).toBe(200);
    expect(upsert.body.id).toBe(client.id);
  });

  it('a body of only white space (a newline, CRLF) is empty too; other text is still 400', async () => {
    const { coach, client, sessions } = await booking(['2026-12-02T10:00:00']);
    const bookingEmail = `/api/v1/notification/private/email/${client.id}/session/${sessions[0]!.groupId}/booking`;
    for (const body of [' ', '\n', '\r\n', ' \t\r\n ']) {
      const res = await t.request('POST', bookingEmail, {
        token: m.service(),
        body,
        headers: { 'content-type': 'application/json' },
      });
      expect({ body, status: res.status, template: res.body.template }).toEqual({
        body,
        status: 200,
        template: 'booking',
      });
    }
    const declined = await t.request('POST', `/api/v1/session/${sessions[0]!.id}/decline`, {
      token: coach.token,
      body: '\r\n',
      headers: { 'content-type': 'application/json' },
    });
    expect([declined.status, declined.body.state]).toEqual([200, 'declined']);
    const garbage = await t.request('POST', bookingEmail, {
      token: m.service(),
      body: ' x ',
      headers: { 'content-type': 'application/json' },
    });
    expect([garbage.status, garbage.body.error]).toEqual([400, 'bad_request']);
  });

  it('a JSON body that is not an object (null, [], 42, "x", true) is 422 where the body is optional, and changes nothing', async () => {
    const { coach, client, serviceId, sessions } = await booking(['2026-12-02T10:00:00']);
    const s = sessions[0]!;
    const base = '/api/v1/notification/private/email';
    const calls: [string, string, string][] = [
      ['POST', `${base}/${client.id}/verification`, m.service()],
      ['POST', `${base}/${client.id}/session/${s.groupId}/booking`, m.service()],
      ['POST', `${base}/${client.id}/session/${s.id}/approve`, m.service()],
      ['POST', `${base}/${client.id}/session/${s.id}/cancel`, m.service()],
      ['POST', `${base}/${client.id}/session/${s.id}/decline`, m.service()],
      ['POST', `${base}/${coach.id}/session/${s.id}/dispute`, m.service()],
      ['POST', `/api/v1/session/${s.id}/decline`, coach.token],
      ['POST', `/api/v1/session/${s.id}/cancel`, client.token],
      ['PUT', `/api/v1/coach/services/${serviceId}`, coach.token],
      ['POST', `/api/v1/admin/services/${serviceId}/reject`, m.admin()],
      ['PUT', `/api/v1/users/${client.id}`, m.service()],
    ];
    for (const [method, path, token] of calls)
      for (const body of ['null', '[]', '42', '"x"', 'true']) {
        const res = await t.request(method, path, {
          token,
          body,
          headers: { 'content-type': 'application/json' },
        });
        // `null` was read as an empty body: the session declined, the service rejected, the e-mail sent.
        expect({ path, body, status: res.status, detail: res.body.detail }).toEqual({
          path,
          body,
          status: 422,
          detail: [
            { loc: ['body'], msg: 'Input should be an object', type: expect.stringMatching(/^invalid_/) },
          ],
        });
      }
    const session = await t.request('GET', `/api/v1/session/${s.id}`, { token: client.token });
    expect(session.body.state).toBe('new'); // neither declined nor canceled
    const service = await t.request('GET', `/api/v1/service/${serviceId}`, { token: m.admin() });
    expect(service.body.status).not.toBe('rejected');
  });

  it('a route whose body is required answers 422 naming the missing fields', async () => {
    const client = await m.client();
    const res = await emptyJson('POST', '/api/v1/nav/addreses', client.token);
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(
      expect.arrayContaining([
        ['body', 'lat'],
        ['body', 'lng'],
        ['body', 'name'],
        ['body', 'address'],
      ]),
    );
    expect(res.body.detail.every((d: { type: string }) => d.type === 'missing')).toBe(true);
  });
});

describe('public reads: no token is fine, a token that is sent must be valid', () => {
  const publicGets = () =>
    routers(t.system.deps)
      .flatMap((r) => r.stack)
      .filter((l) => l.methods.includes('GET') && guardOf(l.stack) === null)
      .map((l) => l.path as string);

  it('every public GET route answers 401 to an invalid or expired token', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const ids: Record<string, string> = { coach_id: coach.id, service_id: serviceId };
    const paths = publicGets();
    // The document's public reads 6, 7, 9, 10, 11 and 13, at least.
    expect(paths).toEqual(
      expect.arrayContaining([
        '/api/v1/service/:service_id/availability',
        '/api/v1/service/:service_id',
        '/api/v1/service/:coach_id/reviews',
        '/api/v1/coach/:coach_id/services',
        '/api/v1/coach/:coach_id/availability',
        '/api/v1/coach/:coach_id/profile',
      ]),
    );
    const bad = {
      garbage: 'garbage',
      'another secret': jwt.sign({ sub: randomUUID(), roles: ['client'] }, 'other-secret'),
      expired: jwt.sign({ sub: randomUUID(), roles: ['client'], exp: 1 }, t.config.jwt.secret!),
      'no user id': jwt.sign({ roles: ['client'] }, t.config.jwt.secret!),
    };
    for (const pattern of paths) {
      const path = pattern.replace(/:(\w+)/g, (_, n: string) => ids[n] ?? randomUUID());
      for (const [what, token] of Object.entries(bad)) {
        const res = await t.request('GET', path, { token });
        expect({ path, what, status: res.status, error: res.body?.error }).toEqual({
          path,
          what,
          status: 401,
          error: 'unauthorized',
        });
      }
      const anonymous = await t.request('GET', path);
      expect({ path, status: anonymous.status }).not.toEqual({ path, status: 401 });
    }
  });

  it('the reviews of a coach (9): 200 without a token or with a valid one, 401 with an invalid one', async () => {
    const coach = await m.coach();
    const path = `/api/v1/service/${coach.id}/reviews`;
    expect((await t.request('GET', path)).status).toBe(200);
    expect((await t.request('GET', path, { token: (await m.client()).token })).status).toBe(200);
    const expired = jwt.sign({ sub: randomUUID(), roles: ['client'], exp: 1 }, t.config.jwt.secret!);
    const res = await t.request('GET', path, { token: expired });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'unauthorized', message: expect.any(String), code: 401 });
  });
});

describe('a JSON body is read under every JSON media type the service accepts', () => {
  it('reads a body labelled application/<x>+json instead of dropping it', async () => {
    const client = await m.client();
    // A structured-syntax +json type passes the JSON-only rule: its fields must take effect, not vanish.
    const upsert = await t.request('PUT', `/api/v1/users/${client.id}`, {
      token: m.service(),
      body: { firstName: 'Renamed' },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    expect(upsert.status).toBe(200);
    expect(upsert.body.firstName).toBe('Renamed');
    const address = await t.request('POST', '/api/v1/nav/addreses', {
      token: client.token,
      body: { lat: 1, lng: 2, name: 'Home', address: 'Main St 1' },
      headers: { 'content-type': 'application/vnd.example+json; charset=utf-8' },
    });
    expect(address.status).toBe(200);
    expect(address.body[0]).toMatchObject({ name: 'Home', lat: 1, lng: 2 });
  });

  it('answers a Content-Encoding it cannot decode with 415, not as malformed JSON', async () => {
    const client = await m.client();
    const res = await t.request('POST', '/api/v1/nav/addreses', {
      token: client.token,
      body: { lat: 1, lng: 2, name: 'Home', address: 'Main St 1' },
      headers: { 'content-encoding': 'x-unknown' },
    });
    expect(res.status).toBe(415);
    expect(res.body).toEqual({ error: 'unsupported_media_type', message: expect.any(String), code: 415 });
  });

  it('answers a body declared in a charset other than UTF-8 with 415, not with its text garbled', async () => {
    const client = await m.client();
    const profile = { firstName: 'Ren\u00e9' };
    for (const [charset, bytes] of [
      ['iso-8859-1', Buffer.from(JSON.stringify(profile), 'latin1')],
      ['windows-1252', Buffer.from(JSON.stringify(profile), 'latin1')],
      ['utf-16le', Buffer.from(JSON.stringify(profile), 'utf16le')],
    ] as const) {
      const res = await fetch(`${t.baseUrl}/api/v1/users/${client.id}`, {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${m.service()}`,
          'content-type': `application/json; charset=${charset}`,
        },
        body: bytes,
      });
      expect([charset, res.status]).toEqual([charset, 415]);
      expect(await res.json()).toEqual({
        error: 'unsupported_media_type',
        message: expect.stringContaining('UTF-8'),
        code: 415,
      });
    }
    // Nothing was stored: the name was "Ren\ufffd" (the e-acute byte read as UTF-8) with 200.
    const seen = await t.request('GET', `/api/v1/coach/client/${client.id}`, {
      token: t.token(randomUUID(), ['admin']),
    });
    expect(seen.status).toBe(200);
    expect(seen.body.firstName).not.toContain('\ufffd');
    // UTF-8, named in any case (or not named at all), is read as before.
    const upsert = await t.request('PUT', `/api/v1/users/${client.id}`, {
      token: m.service(),
      body: profile,
      headers: { 'content-type': 'application/json; charset=UTF8' },
    });
    expect(upsert.status).toBe(200);
    expect(upsert.body.firstName).toBe('Ren\u00e9');
  });

  it('answers a body that is not UTF-8 (Latin-1 bytes, a UTF-8-encoded surrogate) with 400, storing nothing', async () => {
    const client = await m.client();
    const admin = t.token(randomUUID(), ['admin']);
    for (const bytes of [
      Buffer.from('{"firstName":"Ren\u00e9"}', 'latin1'),
      Buffer.concat([Buffer.from('{"firstName":"x'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]),
    ]) {
      const res = await fetch(`${t.baseUrl}/api/v1/users/${client.id}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: bytes,
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        error: 'bad_request',
        message: expect.stringContaining('UTF-8'),
        code: 400,
      });
    }
    const seen = await t.request('GET', `/api/v1/coach/client/${client.id}`, { token: admin });
    expect(seen.body.firstName).not.toContain('\ufffd');
    // A UTF-8 character split between two chunks of the body is whole again.
    const split = await fetch(`${t.baseUrl}/api/v1/users/${client.id}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: new ReadableStream({
        start(c) {
          const all = Buffer.from('{"firstName":"Ren\u00e9"}');
          const cut = all.indexOf(0xc3) + 1;
          c.enqueue(all.subarray(0, cut));
          setTimeout(() => (c.enqueue(all.subarray(cut)), c.close()), 50);
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(split.status).toBe(200);
    expect(((await split.json()) as { firstName: string }).firstName).toBe('Ren\u00e9');
  });

  /** PUTs a new profile's body, sent in these chunks, over one kept-alive connection: status and socket. */
  const keptAlive = () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const admin = t.token(randomUUID(), ['admin']);
    const put = (chunks: string[]) =>
      new Promise<{ status: number; socket: unknown }>((resolve, reject) => {
        const req = http.request(
          `${t.baseUrl}/api/v1/users/${randomUUID()}`,
          {
            method: 'PUT',
            agent,
            headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
            timeout: 5000,
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, socket: req.socket }));
          },
        );
        req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
        req.on('error', reject);
        // One chunk goes with its Content-Length (end with data, nothing written before); more are chunked.
        for (const c of chunks.slice(0, -1)) req.write(c);
        req.end(chunks.at(-1));
      });
    return { put, close: () => agent.destroy() };
  };

  it('still serves the next request on a kept-alive connection after a JSON body over the limit (413)', async () => {
    const { put, close } = keptAlive();
    try {
      const big = await put([JSON.stringify({ firstName: 'x'.repeat(300_000) })]);
      expect(big.status).toBe(413);
      const next = await put([JSON.stringify({ firstName: 'A' })]);
      expect(next.status).toBe(422); // a new profile needs more fields: answered, on the same connection
      expect(next.socket).toBe(big.socket);
    } finally {
      close();
    }
  });

  it('also after a chunked JSON body over the limit (no Content-Length: refused part way through)', async () => {
    const { put, close } = keptAlive();
    try {
      const big = await put(['{"firstName":"', ...Array(30).fill('x'.repeat(10_000)), '"}']);
      expect(big.status).toBe(413);
      const next = await put([JSON.stringify({ firstName: 'A' })]);
      expect(next.status).toBe(422);
      expect(next.socket).toBe(big.socket);
    } finally {
      close();
    }
  });

  it('reads a compressed body as UTF-8 too: a gzip or br body that is not UTF-8 is 400, one that is is read', async () => {
    const client = await m.client();
    const admin = t.token(randomUUID(), ['admin']);
    const put = (encoding: string, bytes: Buffer) =>
      fetch(`${t.baseUrl}/api/v1/users/${client.id}`, {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${admin}`,
          'content-type': 'application/json',
          'content-encoding': encoding,
        },
        body: encoding === 'br' ? zlib.brotliCompressSync(bytes) : zlib.gzipSync(bytes),
      });
    for (const encoding of ['gzip', 'br']) {
      const res = await put(encoding, Buffer.from('{"firstName":"Ren\u00e9"}', 'latin1'));
      expect([encoding, res.status]).toEqual([encoding, 400]);
      expect(await res.json()).toEqual({
        error: 'bad_request',
        message: expect.stringContaining('UTF-8'),
        code: 400,
      });
    }
    const seen = await t.request('GET', `/api/v1/coach/client/${client.id}`, { token: admin });
    expect(seen.body.firstName).not.toContain('\ufffd');
    // In UTF-8, with a byte order mark in front (dropped, as from an uncompressed body), it is read.
    const ok = await put('gzip', Buffer.from('\ufeff{"firstName":"Ren\u00e9"}'));
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { firstName: string }).firstName).toBe('Ren\u00e9');
  });
});

describe('a path or method no route takes', () => {
  /** A raw call: t.request's answer check knows only the routes. */
  const call = async (method: string, path: string, headers: Record<string, string>, body?: string) => {
    const res = await fetch(t.baseUrl + path, { method, headers, body });
    return { status: res.status, allow: res.headers.get('allow'), body: await res.json().catch(() => null) };
  };

  it('is 404 or 405 whatever the request carries (was 415, 400 or 401 for its body or token)', async () => {
    const garbage = { authorization: 'Bearer not-a-jwt' };
    for (const [method, headers, body] of [
      ['POST', { 'content-type': 'text/plain' }, 'x'],
      ['POST', { 'content-type': 'application/x-www-form-urlencoded' }, 'a=1'],
      ['POST', { 'content-type': 'application/json' }, '{x'],
      ['POST', { 'content-type': 'application/json' }, '{"a":"\\u0000"}'],
      ['GET', garbage, undefined],
    ] as const) {
      const res = await call(method, '/api/v1/nope', headers, body);
      expect({ method, headers, res }).toEqual({
        method,
        headers,
        res: expect.objectContaining({ status: 404, body: expect.objectContaining({ error: 'not_found' }) }),
      });
    }
    for (const [method, headers, body] of [
      ['PUT', { 'content-type': 'text/plain' }, 'x'],
      ['PATCH', { 'content-type': 'application/json' }, '{"__proto__": 1}'],
      ['DELETE', garbage, undefined],
    ] as const) {
      const res = await call(method, '/api/v1/coaches', headers, body);
      expect({ method, res }).toEqual({
        method,
        res: {
          status: 405,
          allow: 'HEAD, GET',
          body: expect.objectContaining({ error: 'method_not_allowed' }),
        },
      });
    }
    // A route that takes the method still reads the body and the token first.
    expect((await call('POST', '/api/v1/coach/services', { 'content-type': 'text/plain' }, 'x')).status).toBe(
      415,
    );
    expect((await call('GET', '/api/v1/coaches', garbage)).status).toBe(401);
  });
});

describe('a query parameter sent twice', () => {
  it('is 422 at that parameter saying it is to be given once, whatever its type', async () => {
    const client = await m.client();
    const auditor = t.token(randomUUID(), ['auditor']);
    for (const [path, token, name] of [
      ['/api/v1/sessions?limit=1&limit=2', client.token, 'limit'],
      ['/api/v1/sessions?from=2026-12-01T00:00:00Z&from=2026-12-02T00:00:00Z', client.token, 'from'],
      ['/api/v1/sessions?as=client&as=coach', client.token, 'as'],
      ['/api/v1/audit/events?type=A&type=B', auditor, 'type'],
    ] as const) {
      const res = await t.request('GET', path, { token });
      expect({ path, status: res.status }).toEqual({ path, status: 422 });
      expect(res.body.detail).toEqual([
        { loc: ['query', name], msg: `${name} should be given once, not 2 times`, type: 'repeated' },
      ]);
    }
  });
});

describe('a query parameter the route does not take', () => {
  it('is ignored, as FastAPI does', async () => {
    const client = await m.client();
    const res = await t.request('GET', '/api/v1/sessions?limit=1&bogus=2&form=2026-01-01', {
      token: client.token,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });
});

describe('a value of another type', () => {
  it('is told what is expected, not the name of the check it failed', async () => {
    const client = await m.client();
    const address = { name: 'Home', address: 'Kastanienallee 10, Berlin', lat: 52.5, lng: 13.4 };
    const cases: [string, string, unknown, (string | number)[], string][] = [
      [
        'POST',
        '/api/v1/nav/addreses',
        { ...address, lat: 'north' },
        ['body', 'lat'],
        'Input should be a number from -90 to 90',
      ],
      [
        'POST',
        '/api/v1/nav/addreses',
        { ...address, zoom: '3' },
        ['body', 'zoom'],
        'Input should be a number from 0 to 25',
      ],
      [
        'PUT',
        `/api/v1/users/${client.id}`,
        { timezone: null },
        ['body', 'timezone'],
        'Input should be a valid IANA time zone name',
      ],
      [
        'PUT',
        `/api/v1/users/${client.id}`,
        { email: true },
        ['body', 'email'],
        'Input should be a valid e-mail address',
      ],
      [
        'POST',
        '/api/v1/notification/event',
        { notificationIds: [7] },
        ['body', 'notificationIds', 0],
        'Input should be a valid UUID',
      ],
    ];
    for (const [method, path, body, loc, msg] of cases) {
      const token = path.startsWith('/api/v1/users/') ? m.service() : client.token;
      const res = await t.request(method, path, { token, body });
      expect({ path, body, status: res.status }).toEqual({ path, body, status: 422 });
      expect(res.body.detail).toEqual([expect.objectContaining({ loc, msg })]);
    }
  });
});
