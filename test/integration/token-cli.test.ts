import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import jwt from 'jsonwebtoken';

/**
 * `npm run token` (src/cli/token.ts) as the operator runs it: in the project folder, where the service
 * reads its `.env` (src/main.ts). The token must be signed with the secret the service checks.
 */
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'token-cli-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** The token CLI as a process in `tmp`, with no JWT settings but `env` (and tmp's .env, if any). */
const spawnToken = (args: string[], env: NodeJS.ProcessEnv = {}) => {
  const clean = { ...process.env };
  for (const k of ['JWT_SECRET', 'JWT_PUBLIC_KEY', 'JWT_ISSUER', 'JWT_AUDIENCE', 'NODE_ENV']) delete clean[k];
  return spawnSync(
    process.execPath,
    [
      '-r',
      path.join(__dirname, '../support/register-ts.cjs'),
      path.join(__dirname, '../../src/cli/token.ts'),
      ...args,
    ],
    { cwd: tmp, env: { ...clean, ...env }, encoding: 'utf8' },
  );
};

const runToken = (args: string[], env: NodeJS.ProcessEnv) => {
  const run = spawnToken(args, env);
  expect([run.status, run.stderr]).toEqual([0, expect.any(String)]);
  return JSON.parse(run.stdout) as { userId: string; roles: string[]; token: string };
};

describe('npm run token', () => {
  it('signs with the JWT_SECRET, issuer and audience of the .env the service reads', () => {
    const secret = 'a-secret-from-the-env-file-0123456789abcdef';
    fs.writeFileSync(
      path.join(tmp, '.env'),
      `JWT_SECRET=${secret}\nJWT_ISSUER=https://id.example.com\nJWT_AUDIENCE=coaching-api\n`,
    );
    const userId = '11111111-1111-4111-8111-111111111111';
    const out = runToken([userId, 'admin'], {});
    expect(out).toMatchObject({ userId, roles: ['admin'] });
    const claims = jwt.verify(out.token, secret, {
      issuer: 'https://id.example.com',
      audience: 'coaching-api',
    }) as jwt.JwtPayload;
    expect(claims).toMatchObject({ sub: userId, roles: ['admin'] });
  });

  it('the environment wins over the .env file, as for the service', () => {
    fs.writeFileSync(path.join(tmp, '.env'), 'JWT_SECRET=a-secret-from-the-env-file-0123456789abcdef\n');
    const secret = 'a-secret-from-the-environment-0123456789abcdef';
    const out = runToken(['-', 'client'], { JWT_SECRET: secret });
    expect(jwt.verify(out.token, secret)).toMatchObject({ sub: out.userId, roles: ['client'] });
  });

  it('refuses to sign when the service checks tokens with JWT_PUBLIC_KEY, a JWT_SECRET beside it too, exit 2', () => {
    fs.rmSync(path.join(tmp, '.env'), { force: true });
    const { publicKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    // A JWT_SECRET kept for webhook secrets (README, "Production secrets"): an HS256 token signed with it
    // is refused by the service (RS256 only), so printing one would hand the operator a 401.
    for (const env of [
      { JWT_PUBLIC_KEY: publicKey },
      { JWT_PUBLIC_KEY: publicKey, JWT_SECRET: 'x'.repeat(40) },
    ]) {
      const run = spawnToken(['-', 'admin'], env);
      expect([Object.keys(env), run.status, run.stdout]).toEqual([Object.keys(env), 2, '']);
      expect(run.stderr).toContain('JWT_PUBLIC_KEY is set');
    }
  });

  it('says in one line which setting it cannot use (a JWT_PUBLIC_KEY that is no key), exit 2, no stack trace', () => {
    fs.rmSync(path.join(tmp, '.env'), { force: true });
    for (const [env, said] of [
      [{ JWT_PUBLIC_KEY: 'garbage' }, 'token: JWT_PUBLIC_KEY is not a public key in PEM'],
      [{ PORT: 'http' }, 'token: PORT must be a whole number, got http'],
    ] as const) {
      const run = spawnToken(['-', 'admin'], env);
      expect([run.status, run.stdout]).toEqual([2, '']);
      expect(run.stderr.trim().split('\n')).toEqual([expect.stringContaining(said)]);
    }
  });

  it('refuses a user id that is not a UUID (the service answers 401 to such a token), exit 2', () => {
    fs.rmSync(path.join(tmp, '.env'), { force: true });
    for (const args of [['admin'], ['alice', 'admin']]) {
      const run = spawnToken(args);
      expect([args, run.status, run.stdout]).toEqual([args, 2, '']);
      expect(run.stderr).toContain(`not a user id: ${args[0]}`);
    }
  });

  it('names every role it does not know, an empty one (a trailing comma) too, exit 2', () => {
    fs.rmSync(path.join(tmp, '.env'), { force: true });
    const run = spawnToken(['-', 'client,,root']);
    expect([run.status, run.stdout]).toEqual([2, '']);
    expect(run.stderr.trim()).toBe(
      'unknown role(s): "", "root"; known: client, coach, admin, service, auditor',
    );
  });
});
