import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { ConfigError, loadConfig, type Config } from '../config';
import { ROLES, signToken, type Role } from '../http/auth';

/** npm run token -- [user-uuid] [role,role...]: prints a bearer token signed with JWT_SECRET (or the dev secret). */
const [userArg, rolesArg] = process.argv.slice(2);
const userId = userArg && userArg !== '-' ? userArg : randomUUID();
// The service takes a token only when its `sub` is a UUID (src/http/auth.ts); `npm run token -- admin` was
// a token for the user "admin", refused with 401.
if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(userId)) {
  console.error(`not a user id: ${userId}; usage: npm run token -- <user-uuid | -> [role,role...]`);
  process.exit(2);
}
const roles = (rolesArg ?? 'client').split(',') as Role[];
const unknown = roles.filter((r) => !ROLES.includes(r));
if (unknown.length) {
  // Quoted, so an empty name (`client,` or `client,,coach`) shows as "" rather than as nothing.
  console.error(
    `unknown role(s): ${unknown.map((r) => JSON.stringify(r)).join(', ')}; known: ${ROLES.join(', ')}`,
  );
  process.exit(2);
}
// The .env the service reads (src/main.ts), so the token is signed with the secret the service checks.
if (fs.existsSync('.env')) process.loadEnvFile('.env');
let config: Config;
try {
  config = loadConfig();
} catch (err) {
  // A setting the service would refuse to start with (src/main.ts): one line, as the other refusals here.
  if (!(err instanceof ConfigError)) throw err;
  console.error(`token: ${err.message}`);
  process.exit(2);
}
// With JWT_PUBLIC_KEY the service takes RS256 tokens only: one signed with a JWT_SECRET kept beside it (for
// webhook secrets) would be refused with 401.
if (config.jwt.publicKey || !config.jwt.secret) {
  console.error('JWT_PUBLIC_KEY is set: sign tokens with your identity provider instead');
  process.exit(2);
}
console.log(JSON.stringify({ userId, roles, token: signToken(config, userId, roles) }, null, 2));
