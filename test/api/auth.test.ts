import { generateKeyPairSync, randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { signToken } from '../../src/http/auth';
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
