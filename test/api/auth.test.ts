import { generateKeyPairSync, randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { signToken } from '../../src/http/auth';
import { marketplace } from '../support/marketplace';
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

  it('answers 403 in the ErrorResponse shape when the role is missing', async () => {
    const token = signToken(t.config, randomUUID(), ['client'], { privateKey });
    const res = await t.request('POST', `/api/v1/payment/private/payment/${randomUUID()}/cancel`, { token });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'forbidden', message: expect.any(String), code: 403 });
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

  it('is another token when its text differs (a tampered signature is checked, not remembered)', async () => {
    const token = t.token(randomUUID(), ['client']);
    expect((await t.request('GET', '/api/v1/nav/addreses', { token })).status).toBe(200);
    const tampered = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
    expect((await t.request('GET', '/api/v1/nav/addreses', { token: tampered })).status).toBe(401);
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
