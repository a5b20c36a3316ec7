import { createHmac, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { ROLES, guardOf, signToken, type Role } from '../../src/http/auth';
import { routers } from '../../src/routes';
import { eventually, marketplace } from '../support/marketplace';
import { sendForm } from '../support/multipart';
import { getWithRawHeaders } from '../support/rawHeaders';
import { startTestSystem, type TestSystem } from '../support/system';

/** RS256: tokens from an identity provider, checked with JWT_PUBLIC_KEY; HS256 tokens are then refused. */
describe('RS256 tokens with JWT_PUBLIC_KEY', () => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  let t: TestSystem;
  beforeAll(async () => {
    t = await startTestSystem({ env: { JWT_PUBLIC_KEY: publicKey, JWT_SECRET: '' } });
  });
  afterAll(() => t.close());

  it('accepts a token signed with the matching private key', async () => {
    const token = signToken(t.config, randomUUID(), ['client'], { privateKey });
    const res = await t.request('GET', '/api/v1/nav/addreses', { token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  it('refuses an HS256 token and one signed by another key', async () => {
    const hs = jwt.sign({ sub: randomUUID(), roles: ['client'] }, 'test-secret');
    expect((await t.request('GET', '/api/v1/nav/addreses', { token: hs })).status).toBe(401);
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const forged = jwt.sign({ sub: randomUUID(), roles: ['client'] }, other, { algorithm: 'RS256' });
    const res = await t.request('GET', '/api/v1/nav/addreses', { token: forged });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ error: 'unauthorized', code: 401 });
  });

  it('signs no HS256 token (the service would refuse it), also with a JWT_SECRET kept for webhooks', () => {
    const both = { ...t.config, jwt: { ...t.config.jwt, secret: 'w'.repeat(40) } };
    expect(() => signToken(both, randomUUID(), ['admin'])).toThrow(/JWT_PUBLIC_KEY is set/);
    expect(() => signToken(t.config, randomUUID(), ['admin'])).toThrow(/JWT_PUBLIC_KEY is set/);
    expect(
      jwt.decode(signToken(both, randomUUID(), ['admin'], { privateKey }), { complete: true })?.header.alg,
    ).toBe('RS256');
  });

  it('answers 403 in the ErrorResponse shape when the role is missing', async () => {
    const token = signToken(t.config, randomUUID(), ['client'], { privateKey });
    const res = await t.request('POST', `/api/v1/payment/private/payment/${randomUUID()}/cancel`, { token });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      error: 'forbidden',
      message: 'this action needs the service role',
      code: 403,
    });
  });

  it('names the role a route needs in its 403, so a coach who tries to book learns it needs a client account', async () => {
    const coach = signToken(t.config, randomUUID(), ['coach'], { privateKey });
    const booked = await t.request('POST', `/api/v1/service/${randomUUID()}`, {
      token: coach,
      body: { slots: ['2026-12-02T10:00'] },
    });
    expect([booked.status, booked.body.message]).toEqual([403, 'this action needs the client role']);
    const client = signToken(t.config, randomUUID(), ['client'], { privateKey });
    const email = await t.request('POST', '/api/v1/notification/channel/mailprovider-init', {
      token: client,
      body: {},
    });
    expect([email.status, email.body.message]).toEqual([403, 'this action needs the admin or service role']);
  });
});

/** JWT_ISSUER and JWT_AUDIENCE: an identity provider's key signs tokens for other services too. */
describe('tokens meant for this service (JWT_ISSUER, JWT_AUDIENCE)', () => {
  let t: TestSystem;
  beforeAll(async () => {
    t = await startTestSystem({ env: { JWT_ISSUER: 'https://id.example', JWT_AUDIENCE: 'coaching-api' } });
  });
  afterAll(() => t.close());

  const tokenWith = (claims: Record<string, unknown>) =>
    jwt.sign({ sub: randomUUID(), roles: ['client'], ...claims }, t.config.jwt.secret!, {
      algorithm: 'HS256',
      expiresIn: 3600,
    });
  const status = async (token: string) => (await t.request('GET', '/api/v1/nav/addreses', { token })).status;

  it('accepts a token with the issuer and naming the audience (alone or among others)', async () => {
    expect(await status(signToken(t.config, randomUUID(), ['client']))).toBe(200); // `npm run token` adds both
    expect(await status(tokenWith({ iss: 'https://id.example', aud: ['billing', 'coaching-api'] }))).toBe(
      200,
    );
  });

  it('refuses one without them, from another issuer, or for another audience', async () => {
    for (const claims of [
      {},
      { iss: 'https://id.example' },
      { aud: 'coaching-api' },
      { iss: 'https://other.example', aud: 'coaching-api' },
      { iss: 'https://id.example', aud: 'billing' },
    ])
      expect([claims, await status(tokenWith(claims))]).toEqual([claims, 401]);
  });

  it('refuses such a token on public reads and admin routes too, whatever roles it carries', async () => {
    const admin = { roles: ['admin', 'service', 'auditor'] };
    const good = { ...admin, iss: 'https://id.example', aud: 'coaching-api' };
    const paths = [
      `/api/v1/service/${randomUUID()}`, // public: 404 with a good token
      '/api/v1/admin/projections',
      '/manage/admin/notifications',
      `/api/v1/audit/events/${randomUUID()}/chain`,
    ];
    for (const path of paths) {
      const answers = [];
      for (const claims of [
        good,
        { ...admin, iss: 'https://other.example', aud: 'coaching-api' },
        { ...admin, iss: 'https://id.example', aud: 'billing' },
        admin,
      ])
        answers.push((await t.request('GET', path, { token: tokenWith(claims) })).status);
      expect([path, answers.slice(1)]).toEqual([path, [401, 401, 401]]);
      expect(answers[0]).not.toBe(401);
      expect(answers[0]).not.toBe(403);
    }
  });
});

/** JWT_MAX_TTL_SECONDS below a day: `npm run token` (24 h) and the seed (30 days) sign what is accepted. */
describe('tokens the service signs under a short JWT_MAX_TTL_SECONDS', () => {
  let t: TestSystem;
  beforeAll(async () => {
    t = await startTestSystem({ env: { JWT_MAX_TTL_SECONDS: '3600' } });
  });
  afterAll(() => t.close());

  it('live no longer than the service takes, so they are accepted', async () => {
    for (const token of [
      signToken(t.config, randomUUID(), ['client']), // npm run token
      signToken(t.config, randomUUID(), ['client'], { expiresIn: 30 * 24 * 3600 }), // npm run seed
    ]) {
      const { exp } = jwt.decode(token) as { exp: number };
      expect(exp).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 3600);
      expect((await t.request('GET', '/api/v1/nav/addreses', { token })).status).toBe(200);
    }
  });
});

/** Verified tokens are remembered per process (src/http/auth.ts); their time claims are checked on every use. */
describe('a token verified before', () => {
  let t: TestSystem;
  beforeAll(async () => {
    t = await startTestSystem();
  });
  afterAll(() => t.close());

  it('is refused once it has expired', async () => {
    const exp = Math.floor(Date.now() / 1000) + 2;
    const token = jwt.sign({ sub: randomUUID(), roles: ['client'], exp }, t.config.jwt.secret!, {
      algorithm: 'HS256',
    });
    expect((await t.request('GET', '/api/v1/nav/addreses', { token })).status).toBe(200);
    expect((await t.request('GET', '/api/v1/nav/addreses', { token })).status).toBe(200); // remembered
    await new Promise((r) => setTimeout(r, exp * 1000 - Date.now() + 50));
    const res = await t.request('GET', '/api/v1/nav/addreses', { token });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ error: 'unauthorized', code: 401 });
  });

  it("is taken from its nbf on as read on a clock up to a minute behind the issuer's", async () => {
    const now = Math.floor(Date.now() / 1000);
    const tokenFrom = (nbf: unknown) =>
      hs256({ sub: randomUUID(), roles: ['client'], iat: nbf, nbf, exp: now + 3600 }, t.config.jwt.secret!);
    const answer = async (token: string) => {
      const res = await t.request('GET', '/api/v1/nav/addreses', { token });
      return res.status === 401 ? `401 ${res.body.message}` : res.status;
    };
    // Issued just now by an issuer whose clock runs a few seconds ahead: refused with 401 before.
    expect(await answer(tokenFrom(now + 5))).toBe(200);
    expect(await answer(tokenFrom(now + 50))).toBe(200);
    // Not valid for minutes yet, or an nbf that is not a time: refused, also once seen (remembered).
    for (const nbf of [now + 600, String(now)]) {
      const token = tokenFrom(nbf);
      expect(await answer(token)).toMatch(/^401 /);
      expect(await answer(token)).toMatch(/^401 /);
    }
    expect(await answer(tokenFrom(now + 600))).toBe('401 the bearer token is not valid yet (nbf)');
  });

  it('is another token when its text differs (a tampered signature is checked, not remembered)', async () => {
    const token = t.token(randomUUID(), ['client']);
    expect((await t.request('GET', '/api/v1/nav/addreses', { token })).status).toBe(200);
    const tampered = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
    expect((await t.request('GET', '/api/v1/nav/addreses', { token: tampered })).status).toBe(401);
  });
});

describe('the Authorization header', () => {
  let t: TestSystem;
  beforeAll(async () => {
    t = await startTestSystem();
  });
  afterAll(() => t.close());
  const withHeader = (authorization: string) =>
    fetch(`${t.baseUrl}/api/v1/nav/addreses`, { headers: { authorization } });

  it('takes the scheme in any case and one or more spaces before the token (RFC 6750, RFC 9110)', async () => {
    const token = t.token(randomUUID(), ['client']);
    for (const header of [
      `Bearer ${token}`,
      `bearer ${token}`,
      `BEARER ${token}`,
      `Bearer   ${token}`,
      `Bearer ${token} `,
    ])
      expect([header.slice(0, 12), (await withHeader(header)).status]).toEqual([header.slice(0, 12), 200]);
  });

  it('refuses another scheme, a missing token or two tokens with 401 in the error shape', async () => {
    const token = t.token(randomUUID(), ['client']);
    for (const header of [
      `Basic ${token}`,
      'Bearer',
      'Bearer ',
      `Bearer ${token} ${token}`,
      `Bearer,${token}`,
      token,
    ]) {
      const res = await withHeader(header);
      expect([header.slice(0, 12), res.status]).toEqual([header.slice(0, 12), 401]);
      expect(await res.json()).toMatchObject({ error: 'unauthorized', code: 401 });
    }
  });

  it('refuses two Authorization headers with 401, each a valid token, also on a public read', async () => {
    // The first was taken and the second dropped (Node keeps one): a proxy reading the other would see
    // another user than the service did.
    const client = t.token(randomUUID(), ['client']);
    const admin = t.token(randomUUID(), ['admin']);
    const twice = (path: string, first: string, second: string) =>
      getWithRawHeaders(t.baseUrl, path, [
        'Authorization',
        `Bearer ${first}`,
        'Authorization',
        `Bearer ${second}`,
      ]);
    for (const [path, first, second] of [
      ['/api/v1/nav/addreses', client, admin],
      ['/api/v1/nav/addreses', client, client],
      ['/api/v1/admin/projections', admin, client],
      [`/api/v1/service/${randomUUID()}`, client, admin],
    ] as const) {
      const res = await twice(path, first, second);
      expect([path, res.status]).toEqual([path, 401]);
      expect(JSON.parse(res.body)).toMatchObject({
        error: 'unauthorized',
        message: expect.stringMatching(/one Authorization header/),
        code: 401,
      });
    }
  });
});

/** The audit trail's `actor.role` is the role the route admitted the caller under, not the token's first. */
describe('the role recorded with an event', () => {
  let t: TestSystem;
  let m: ReturnType<typeof marketplace>;
  beforeAll(async () => {
    t = await startTestSystem({ clock: () => new Date('2026-12-01T08:00:00Z') });
    m = marketplace(t);
  });
  afterAll(() => t.close());

  const lastActor = async (stream: string) => {
    const res = await t.request('GET', `/api/v1/audit/streams/${stream}`, {
      token: t.token(randomUUID(), ['auditor']),
    });
    expect(res.status).toBe(200);
    return res.body.events.at(-1).metadata.actor;
  };

  it('is admin for an approval by a token holding auditor and admin', async () => {
    const coach = await m.coach();
    const created = await t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: { name: 'Yoga', price: 10, priceCurrency: 'EUR', sessionMinutesDuration: 60 },
    });
    const admin = randomUUID();
    const approved = await t.request('POST', `/api/v1/admin/services/${created.body.id}/approve`, {
      token: t.token(admin, ['auditor', 'admin']),
    });
    expect(approved.status).toBe(200);
    expect(await lastActor(`service-${created.body.id}`)).toEqual({ userId: admin, role: 'admin' });
  });

  it('is client for a booking by a token holding coach and client', async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const other = await m.coach();
    const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: t.token(other.id, ['coach', 'client']),
      body: { slots: ['2026-12-02T10:00:00'] },
    });
    expect(booked.status).toBe(200);
    // The hold on the coach's calendar is written by the request itself (the payment may be the booking
    // process's, on EventStoreDB).
    expect(await lastActor(`calendar-${coach.id}`)).toEqual({ userId: other.id, role: 'client' });
  });

  it("is the caller's part in the session for a session action (coach), whatever the token's first role", async () => {
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const client = await m.client();
    const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
      token: client.token,
      body: { slots: ['2026-12-02T10:00:00'] },
    });
    expect(booked.status).toBe(200);
    const approved = await t.request('POST', `/api/v1/session/${booked.body[0].id}/approve`, {
      token: t.token(coach.id, ['client', 'coach']),
    });
    expect(approved.status).toBe(200);
    expect(await lastActor(`booking-${booked.body[0].groupId}`)).toEqual({ userId: coach.id, role: 'coach' });
  });
});

/**
 * The authorization matrix (DESIGN section 5, docs/api.md): every route the routers declare, sent by every
 * kind of caller, answers 401 without a valid token, 403 with a token lacking the route's roles, and
 * otherwise lets the caller through (the ids here are unknown, so nothing is changed). Routes are read off
 * the routers, so a new route is covered without editing this table.
 */
describe('authorization matrix: every route and every kind of token', () => {
  let t: TestSystem;
  const routes: { method: string; path: string; roles: readonly Role[] | null }[] = [];
  beforeAll(async () => {
    t = await startTestSystem();
    for (const router of routers(t.system.deps))
      for (const layer of router.stack)
        for (const method of layer.methods)
          if (method !== 'HEAD' && typeof layer.path === 'string')
            routes.push({ method, path: layer.path, roles: guardOf(layer.stack) });
    // Served beside the routers: admin JWT (or METRICS_TOKEN, unset here).
    routes.push({ method: 'GET', path: '/metrics', roles: ['admin'] });
  });
  afterAll(() => t.close());

  const secret = () => t.config.jwt.secret!;
  const now = () => Math.floor(Date.now() / 1000);
  const signed = (claims: Record<string, unknown>, opts: jwt.SignOptions = {}) =>
    jwt.sign({ sub: randomUUID(), exp: now() + 3600, ...claims }, secret(), { algorithm: 'HS256', ...opts });

  /** Callers whose token is valid, with the roles the service reads from it. */
  const valid = (): [string, string, readonly Role[]][] => [
    ...ROLES.map((r): [string, string, Role[]] => [r, signed({ roles: [r] }), [r]]),
    ['client and coach', signed({ roles: ['client', 'coach'] }), ['client', 'coach']],
    ['auditor and service', signed({ roles: ['auditor', 'service'] }), ['auditor', 'service']],
    ['no roles', signed({ roles: [] }), []],
    ['roles claim missing', signed({}), []],
    ['roles as a string', signed({ roles: 'admin' }), []],
    ['roles as an object', signed({ roles: { 0: 'admin', length: 1 } }), []],
    ['unknown roles', signed({ roles: ['superuser', 'root'] }), []],
    ['roles in another case', signed({ roles: ['Admin', 'SERVICE'] }), []],
    ['unknown role beside client', signed({ roles: ['superuser', 'client'] }), ['client']],
    ['upper-case uuid sub', signed({ sub: randomUUID().toUpperCase(), roles: ['admin'] }), ['admin']],
  ];
  /** Tokens every route refuses with 401, public ones included (each would pass every guard if taken). */
  const refused = (): [string, string][] => {
    const all = ['client', 'coach', 'admin', 'service', 'auditor'];
    return [
      ['alg none', jwt.sign({ sub: randomUUID(), roles: all, exp: now() + 3600 }, '', { algorithm: 'none' })],
      ['another secret', jwt.sign({ sub: randomUUID(), roles: all, exp: now() + 3600 }, 'not-the-secret')],
      ['HS512', signed({ roles: all }, { algorithm: 'HS512' })],
      ['expired', signed({ roles: all, exp: now() - 10 })],
      ['nbf in the future', signed({ roles: all, nbf: now() + 600 })],
      ['no exp', jwt.sign({ sub: randomUUID(), roles: all }, secret())],
      ['exp beyond JWT_MAX_TTL_SECONDS', signed({ roles: all, exp: now() + 400 * 24 * 3600 })],
      ['exp as a string', hs256({ sub: randomUUID(), roles: all, exp: String(now() + 3600) }, secret())],
      ['sub not a uuid', signed({ sub: 'admin', roles: all })],
      ['sub a number', signed({ sub: 42, roles: all })],
      ['sub missing', jwt.sign({ roles: all, exp: now() + 3600 }, secret())],
      ['sub a uuid with braces', signed({ sub: `{${randomUUID()}}`, roles: all })],
      ['tampered payload', tamper(signed({ roles: ['client'] }), { roles: all })],
      ['garbage', 'not.a.jwt'],
    ];
  };

  const urlOf = (path: string) => path.replace(/:(\w+)/g, () => randomUUID());
  const send = async (method: string, path: string, token: string | null) => {
    const res = await fetch(t.baseUrl + urlOf(path), {
      method,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    const text = await res.text();
    return { status: res.status, body: text };
  };

  it('guards by path as DESIGN section 5 says: private routes service, admin routes admin, audit reads admin or auditor', () => {
    const wrong = routes
      .filter((r) => {
        const roles = r.roles === null ? null : [...r.roles].sort().join(',');
        if (r.path.includes('/private/')) return roles !== 'service';
        if (r.path.startsWith('/api/v1/audit/')) return roles !== 'admin,auditor';
        if (/^\/(manage\/|admin\/|api\/v1\/admin\/)/.test(r.path)) return roles !== 'admin';
        return false;
      })
      .map((r) => `${r.method} ${r.path}: ${JSON.stringify(r.roles)}`);
    expect(wrong).toEqual([]);
    // The ones this covers are there (a renamed prefix would make the rule above check nothing).
    const count = (re: RegExp) => routes.filter((r) => re.test(r.path)).length;
    expect(count(/\/private\//)).toBeGreaterThanOrEqual(9);
    expect(count(/^\/api\/v1\/audit\//)).toBeGreaterThanOrEqual(5);
    expect(count(/^\/(manage|admin)\/|^\/api\/v1\/admin\//)).toBeGreaterThanOrEqual(9);
  });

  it('answers each route as its guard and the docs say, for every kind of token', async () => {
    expect(routes.length).toBeGreaterThanOrEqual(51);
    const cases: { what: string; method: string; path: string; token: string | null; expect: string }[] = [];
    for (const r of routes) {
      const admitted = (roles: readonly Role[]) =>
        r.roles === null || r.roles.length === 0 || roles.some((x) => r.roles!.includes(x));
      cases.push({ what: 'no token', ...r, token: null, expect: r.roles === null ? 'through' : '401' });
      for (const [what, token, roles] of valid())
        cases.push({ what, ...r, token, expect: admitted(roles) ? 'through' : '403' });
      for (const [what, token] of refused()) cases.push({ what, ...r, token, expect: '401' });
    }
    const wrong: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const c = cases[next++]!;
        const { status, body } = await send(c.method, c.path, c.token);
        const got = status === 401 || status === 403 ? String(status) : 'through';
        const shaped =
          status !== 401 && status !== 403
            ? true
            : JSON.parse(body).error === (status === 401 ? 'unauthorized' : 'forbidden');
        if (got !== c.expect || !shaped || status >= 500)
          wrong.push(
            `${c.method} ${c.path} [${c.what}]: ${status} ${body.slice(0, 200)}, expected ${c.expect}`,
          );
      }
    };
    await Promise.all(Array.from({ length: 6 }, worker));
    expect(wrong).toEqual([]);
  }, 180_000);
});

/** An HS256 token with exactly these claims (jsonwebtoken refuses to sign some of the malformed ones). */
function hs256(claims: Record<string, unknown>, secret: string): string {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const unsigned = `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}`;
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
}

/** A token whose payload is replaced while its header and signature are kept. */
function tamper(token: string, claims: Record<string, unknown>): string {
  const [header, payload, signature] = token.split('.');
  const body = { ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), ...claims };
  return [header, Buffer.from(JSON.stringify(body)).toString('base64url'), signature].join('.');
}

/**
 * Another user's resources (DESIGN section 5, docs/api.md): a user never reads or changes someone else's
 * addresses, notifications, channels, videos, profile media, sessions or payments, whatever its roles; ids
 * of resources it may not see answer the same 404 as unknown ones; identity comes from the token alone.
 */
describe("authorization matrix: another user's resources", () => {
  const NOW = new Date('2026-12-01T08:00:00Z');
  let t: TestSystem;
  let w: {
    coach: { id: string; token: string };
    client: { id: string; token: string };
    serviceId: string;
    draftId: string;
    sessionId: string;
    paymentId: string;
    groupId: string;
    clientAddress: string;
    coachAddress: string;
    channelId: string;
    mediaId: string;
    videoId: string;
    notificationId: string;
  };
  /** Callers that are neither party: other users of the same roles, several roles, none. */
  let strangers: [string, string][];
  let coachStrangers: [string, string][];
  const body = <T>(res: { status: number; body: unknown }, what: string): T => {
    if (res.status !== 200) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as T;
  };

  beforeAll(async () => {
    t = await startTestSystem({ clock: () => NOW });
    const m = marketplace(t);
    const coach = await m.coach();
    const serviceId = await m.offering(coach);
    const draftId = body<{ id: string }>(
      await t.request('POST', '/api/v1/coach/services', {
        token: coach.token,
        body: { name: 'Draft', price: 10, priceCurrency: 'EUR', sessionMinutesDuration: 60 },
      }),
      'draft',
    ).id;
    const client = await m.client();
    const [session] = body<{ id: string; paymentId: string; groupId: string }[]>(
      await t.request('POST', `/api/v1/service/${serviceId}`, {
        token: client.token,
        body: { slots: ['2026-12-02T10:00:00'] },
      }),
      'booking',
    );
    const address = (token: string) =>
      t
        .request('POST', '/api/v1/nav/addreses', {
          token,
          body: { lat: 52.5, lng: 13.4, name: 'Home', address: 'Somewhere 1' },
        })
        .then((res) => body<{ id: string }[]>(res, 'address')[0]!.id);
    const channel = body<{ id: string }>(
      await t.request('POST', '/api/v1/notification/channel', {
        token: client.token,
        body: { type: 'email', address: 'me@example.com' },
      }),
      'channel',
    );
    const media = await sendForm(t.baseUrl, 'POST', '/api/v1/storage/profile/media', client.token, [
      { name: 'file', bytes: randomBytes(300), type: 'image/png', filename: 'me.png' },
      { name: 'kind', value: 'image' },
    ]);
    const video = await sendForm(t.baseUrl, 'POST', '/api/v1/storage/video', coach.token, [
      { name: 'file', bytes: randomBytes(3000), type: 'video/mp4', filename: 'clip.mp4' },
      { name: 'title', value: 'Intro' },
    ]);
    expect([media.status, video.status]).toEqual([200, 200]);
    const inbox = await eventually(
      () => t.request('GET', '/api/v1/notifications', { token: client.token }),
      (res) => res.status === 200 && res.body.length > 0,
    );
    w = {
      coach,
      client,
      serviceId,
      draftId,
      sessionId: session!.id,
      paymentId: session!.paymentId,
      groupId: session!.groupId,
      clientAddress: await address(client.token),
      coachAddress: await address(coach.token),
      channelId: channel.id,
      mediaId: media.headers.get('x-media-id')!,
      videoId: video.body.id,
      notificationId: inbox.body[0].id,
    };
    const as = (roles: Role[]) => t.token(randomUUID(), roles);
    coachStrangers = [
      ['another coach', (await m.coach()).token],
      ['another user with client and coach', as(['client', 'coach'])],
      ['another user with coach and admin', as(['coach', 'admin'])],
    ];
    strangers = [
      ['another client', (await m.client()).token],
      ['a user without roles', as([])],
      ['an auditor', as(['auditor'])],
      ['a service', as(['service'])],
      ...coachStrangers,
    ];
  }, 60_000);
  afterAll(() => t.close());

  const ids = (list: { id: string }[]) => list.map((x) => x.id);

  it("lists only the caller's own: addresses, notifications, channels, media, sessions, videos", async () => {
    for (const [who, token] of strangers) {
      const read = async (path: string) => {
        const res = await t.request('GET', path, { token });
        expect([who, path, res.status]).toEqual([who, path, 200]);
        return ids(res.body);
      };
      expect(await read('/api/v1/nav/addreses')).toEqual([]);
      expect(await read('/api/v1/notifications')).toEqual([]);
      expect(await read('/api/v1/notification/channel')).toEqual([]);
      expect(await read('/api/v1/storage/profile/media')).toEqual([]);
      expect(await read('/api/v1/sessions')).toEqual([]);
      const before = await t.request('GET', `/api/v1/notifications?before=${w.notificationId}`, { token });
      expect([who, before.status, before.body.error]).toEqual([who, 404, 'notification_not_found']);
    }
    for (const [who, token] of coachStrangers) {
      const res = await t.request('GET', '/api/v1/storage/videos', { token });
      expect([who, res.status, ids(res.body)]).toEqual([who, 200, []]);
    }
    // The owners do see theirs (so the lists above are empty for the caller, not for everyone).
    const mine = async (path: string, token: string) =>
      ids((await t.request('GET', path, { token })).body as { id: string }[]);
    expect(await mine('/api/v1/nav/addreses', w.client.token)).toEqual([w.clientAddress]);
    expect(await mine('/api/v1/notification/channel', w.client.token)).toEqual([w.channelId]);
    expect(await mine('/api/v1/storage/profile/media', w.client.token)).toEqual([w.mediaId]);
    expect(await mine('/api/v1/sessions', w.coach.token)).toEqual([w.sessionId]);
    expect(await mine('/api/v1/storage/videos', w.coach.token)).toEqual([w.videoId]);
  });

  it('answers one session, payment, client or unapproved service only to whom the docs name, else 404', async () => {
    const admin = t.token(randomUUID(), ['admin']);
    const auditor = t.token(randomUUID(), ['auditor']);
    const status = async (path: string, token: string) => {
      const res = await t.request('GET', path, { token });
      return res.status === 200 ? 200 : `${res.status} ${res.body.error}`;
    };
    const table: [string, Record<string, string>, string][] = [
      [`/api/v1/session/${w.sessionId}`, { client: '200', coach: '200', admin: '200' }, 'session_not_found'],
      [
        `/api/v1/payment/${w.paymentId}`,
        { client: '200', coach: '200', admin: '200', auditor: '200' },
        'payment_not_found',
      ],
      [`/api/v1/coach/client/${w.client.id}`, { coach: '200', admin: '200' }, 'user_not_found'],
      [`/api/v1/service/${w.draftId}`, { coach: '200', admin: '200' }, 'service_not_found'],
      [`/api/v1/service/${w.draftId}/availability`, { coach: '200' }, 'service_not_found'],
    ];
    const callers: [string, string][] = [
      ['client', w.client.token],
      ['coach', w.coach.token],
      ['admin', admin],
      ['auditor', auditor],
      ...strangers,
    ];
    const got: string[] = [];
    const want: string[] = [];
    for (const [path, allowed, error] of table)
      for (const [who, token] of callers) {
        got.push(`${path} ${who}: ${await status(path, token)}`);
        // A stranger holding admin (or auditor) is answered as an admin (or auditor) is.
        const as =
          who === 'another user with coach and admin' ? 'admin' : who === 'an auditor' ? 'auditor' : who;
        want.push(`${path} ${who}: ${allowed[as] === '200' ? 200 : `404 ${error}`}`);
      }
    expect(got).toEqual(want);
    // The provider's checkout data is the payer's alone.
    for (const token of [w.coach.token, admin, auditor]) {
      const res = await t.request('GET', `/api/v1/payment/${w.paymentId}`, { token });
      expect(res.body).not.toHaveProperty('clientSecret');
      expect(res.body).not.toHaveProperty('checkout');
    }
    // The coach's service list shows a draft to the coach (and admins) only.
    for (const [who, token] of strangers) {
      const res = await t.request('GET', `/api/v1/coach/${w.coach.id}/services`, { token });
      const seen = who === 'another user with coach and admin' ? [w.draftId, w.serviceId] : [w.serviceId];
      // Both made at the same (fixed) clock instant: their order is the ids'.
      expect([who, ids(res.body).sort()]).toEqual([who, seen.sort()]);
    }
  });

  it("refuses every change to another user's resources with the 404 of an unknown id, changing nothing", async () => {
    const problems: string[] = [];
    const expect404 = async (
      who: string,
      what: string,
      res: Promise<{ status: number; body: any }>,
      error: string,
    ) => {
      const { status, body: b } = await res;
      if (status !== 404 || b?.error !== error)
        problems.push(`${who} ${what}: ${status} ${JSON.stringify(b)}`);
    };
    const admin = t.token(randomUUID(), ['admin']);
    for (const [who, token] of [...strangers, ['an admin', admin] as [string, string]]) {
      await expect404(
        who,
        'marks read',
        t.request('PUT', '/api/v1/notifications', { token, body: { notifications: [w.notificationId] } }),
        'notification_not_found',
      );
      await expect404(
        who,
        'reports delivered',
        t.request('POST', '/api/v1/notification/event', {
          token,
          body: { notificationIds: [w.notificationId] },
        }),
        'notification_not_found',
      );
      await expect404(
        who,
        'removes a channel',
        t.request('DELETE', `/api/v1/notification/channel/${w.channelId}`, { token }),
        'channel_not_found',
      );
      await expect404(
        who,
        'removes a picture',
        t.request('DELETE', `/api/v1/storage/profile/media/${w.mediaId}`, { token }),
        'media_not_found',
      );
      for (const action of ['approve', 'decline', 'cancel', 'complete']) {
        await expect404(
          who,
          action,
          t.request('POST', `/api/v1/session/${w.sessionId}/${action}`, { token }),
          'session_not_found',
        );
      }
      await expect404(
        who,
        'dispute',
        t.request('POST', `/api/v1/session/${w.sessionId}/dispute`, { token, body: { reason: 'x' } }),
        'session_not_found',
      );
      await expect404(
        who,
        'review',
        t.request('POST', `/api/v1/session/${w.sessionId}/review`, { token, body: { rating: 1 } }),
        'session_not_found',
      );
    }
    for (const [who, token] of coachStrangers) {
      await expect404(
        who,
        'edits a service',
        t.request('PUT', `/api/v1/coach/services/${w.serviceId}`, { token, body: { name: 'Mine now' } }),
        'service_not_found',
      );
      await expect404(
        who,
        'replaces a video',
        sendForm(t.baseUrl, 'PUT', `/api/v1/storage/video/${w.videoId}`, token, [
          { name: 'title', value: 'x' },
        ]),
        'video_not_found',
      );
      await expect404(
        who,
        'deletes a video',
        t.request('DELETE', `/api/v1/storage/video/${w.videoId}`, { token }),
        'video_not_found',
      );
      const order = await t.request('PUT', '/api/v1/storage/videos/order', {
        token,
        body: { order: [w.videoId] },
      });
      if (order.status !== 422) problems.push(`${who} orders a video: ${order.status}`);
    }
    expect(problems).toEqual([]);

    // Nothing changed.
    const get = (path: string, token: string) => t.request('GET', path, { token }).then((r) => r.body);
    expect(ids(await get('/api/v1/notification/channel', w.client.token))).toEqual([w.channelId]);
    expect(ids(await get('/api/v1/storage/profile/media', w.client.token))).toEqual([w.mediaId]);
    expect(ids(await get('/api/v1/storage/videos', w.coach.token))).toEqual([w.videoId]);
    const notification = (await get('/api/v1/notifications', w.client.token)).find(
      (n: { id: string }) => n.id === w.notificationId,
    );
    expect(notification.unread).toBe(true);
    expect((await get(`/api/v1/session/${w.sessionId}`, w.client.token)).state).toBe('new');
    expect((await get(`/api/v1/service/${w.serviceId}`, w.client.token)).name).toBe('Tennis basics');
    const delivered = await t.request('GET', `/api/v1/audit/streams/notifications-${w.client.id}`, {
      token: admin,
    });
    expect(delivered.body.events.map((e: { type: string }) => e.type)).not.toContain(
      'NotificationsDelivered',
    );
  });

  it("answers the other party's session action with 403", async () => {
    for (const action of ['approve', 'decline', 'complete']) {
      const res = await t.request('POST', `/api/v1/session/${w.sessionId}/${action}`, {
        token: w.client.token,
      });
      expect([action, res.status, res.body.error]).toEqual([action, 403, 'forbidden']);
    }
    for (const [action, b] of [
      ['dispute', { reason: 'x' }],
      ['review', { rating: 1 }],
    ] as const) {
      const res = await t.request('POST', `/api/v1/session/${w.sessionId}/${action}`, {
        token: w.coach.token,
        body: b,
      });
      expect([action, res.status, res.body.error]).toEqual([action, 403, 'forbidden']);
    }
  });

  it('takes identity from the token alone: no user id in a path or body lets a user act as another', async () => {
    const problems: string[] = [];
    const refused = async (what: string, res: Promise<{ status: number; body: any }>, status: number) => {
      const got = await res;
      if (got.status !== status) problems.push(`${what}: ${got.status} ${JSON.stringify(got.body)}`);
    };
    for (const [who, token] of [
      ['the client', w.client.token],
      ['the coach', w.coach.token],
      ['another client', strangers[0]![1]],
    ]) {
      // Profiles are written by the account service and admins only, the caller's own included.
      for (const id of [w.client.id, w.coach.id])
        await refused(
          `${who} upserts ${id === w.client.id ? 'the client' : 'the coach'}`,
          t.request('PUT', `/api/v1/users/${id}`, { token, body: { firstName: 'Mallory', type: 'coach' } }),
          403,
        );
      // Endpoint 17 (and 15, 16) and the e-mails are the payment and account services'.
      await refused(
        `${who} updates the client's payment (17)`,
        t.request('POST', `/api/v1/payment/private/user/${w.client.id}/update`, {
          token,
          body: { status: 'checkout' },
        }),
        403,
      );
      await refused(
        `${who} updates the payment (15)`,
        t.request('POST', `/api/v1/payment/private/payment/${w.paymentId}/update`, {
          token,
          body: { status: 'checkout' },
        }),
        403,
      );
      await refused(
        `${who} cancels the payment (16)`,
        t.request('POST', `/api/v1/payment/private/payment/${w.paymentId}/cancel`, { token }),
        403,
      );
      await refused(
        `${who} sends the client a verification e-mail`,
        t.request('POST', `/api/v1/notification/private/email/${w.client.id}/verification`, {
          token,
          body: { link: 'https://evil.example' },
        }),
        403,
      );
    }
    // A body naming a user is not taken as the actor: such fields are unknown, 422.
    await refused(
      'an address for another user',
      t.request('POST', '/api/v1/nav/addreses', {
        token: strangers[0]![1],
        body: { lat: 1, lng: 2, name: 'x', address: 'y', userId: w.client.id },
      }),
      422,
    );
    await refused(
      'a channel for another user',
      t.request('POST', '/api/v1/notification/channel', {
        token: strangers[0]![1],
        body: { type: 'email', address: 'x@example.com', userId: w.client.id },
      }),
      422,
    );
    await refused(
      'a booking for another client',
      t.request('POST', `/api/v1/service/${w.serviceId}`, {
        token: strangers[0]![1],
        body: { slots: ['2026-12-02T12:00:00'], clientId: w.client.id },
      }),
      422,
    );
    // Another client's booking is no package of the caller's; a service not approved is not bookable.
    await refused(
      "a session on another client's package",
      t.request('POST', `/api/v1/service/${w.serviceId}`, {
        token: strangers[0]![1],
        body: { slots: ['2026-12-02T12:00:00'], packageId: w.groupId },
      }),
      404,
    );
    await refused(
      'a booking of a draft service',
      t.request('POST', `/api/v1/service/${w.draftId}`, {
        token: strangers[0]![1],
        body: { slots: ['2026-12-02T12:00:00'] },
      }),
      404,
    );
    // An Idempotency-Key is the caller's own: the same key and body from another user is another request.
    const key = { 'idempotency-key': `shared-${randomUUID()}` };
    const addressBody = { lat: 48.1, lng: 11.5, name: 'Office', address: 'Street 2' };
    const first = await t.request('POST', '/api/v1/nav/addreses', {
      token: w.client.token,
      body: addressBody,
      headers: key,
    });
    const second = await t.request('POST', '/api/v1/nav/addreses', {
      token: strangers[0]![1],
      body: addressBody,
      headers: key,
    });
    expect([first.status, second.status, second.headers.get('idempotent-replayed')]).toEqual([
      200,
      200,
      null,
    ]);
    expect(ids(second.body)).toHaveLength(1);
    expect(ids(first.body)).not.toContain(ids(second.body)[0]);
    expect(problems).toEqual([]);
    const profile = await t.request('GET', `/api/v1/coach/client/${w.client.id}`, { token: w.coach.token });
    expect(profile.body.name).toBe('Client');
    const payment = await t.request('GET', `/api/v1/payment/${w.paymentId}`, { token: w.client.token });
    expect(payment.body.status).toBe('awaiting');
  });
});
