import { createPublicKey, createSecretKey } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import koaJwt from 'koa-jwt';
import jwt from 'jsonwebtoken';
import type { Config } from '../config';
import { forbidden, unauthorized } from './errors';

export const ROLES = ['client', 'coach', 'admin', 'service', 'auditor'] as const;
export type Role = (typeof ROLES)[number];

export interface Principal {
  userId: string;
  roles: Role[];
  /**
   * The role the route's guard admitted the caller under (the first of the token's roles the route takes),
   * recorded as the events' `actor.role`; unset on routes any authenticated caller may use.
   */
  acting?: Role;
}

/** koa-jwt checks the bearer token; it is `passthrough` so routes decide whether a token is needed. */
export function jwtMiddleware(config: Config): Middleware {
  const { secret, publicKey, issuer, audience } = config.jwt;
  // A KeyObject made once: given a string, jsonwebtoken would build (and first try the wrong kind of) key
  // on every request, which showed as the largest CPU cost of a request in bench/booking.ts.
  const key = publicKey ? createPublicKey(publicKey) : createSecretKey(Buffer.from(secret ?? ''));
  const verify = koaJwt({
    secret: key as unknown as string,
    algorithms: publicKey ? ['RS256'] : ['HS256'],
    passthrough: true,
    key: 'jwtClaims',
    // An identity provider's key signs tokens for many services: only those meant for this one count.
    ...(issuer ? { issuer } : {}),
    ...(audience ? { audience } : {}),
    // `nbf` is checked below, allowing for the issuer's clock running ahead of ours: a token issued a
    // moment ago by such an issuer (nbf = iat, a second or two in our future) was refused with 401.
    ...{ ignoreNotBefore: true },
    getToken: bearerToken,
  }) as unknown as Middleware;
  const { maxTtlSeconds } = config.jwt;
  // A token that never expires (or only in years) cannot be taken back once it leaks: it is refused, and
  // `principal` answers 401 naming why.
  const bounded: Middleware = async (ctx, next) => {
    const claims = ctx.state.jwtClaims as { exp?: unknown; nbf?: unknown } | undefined;
    if (claims) {
      const now = Math.floor(Date.now() / 1000);
      if (typeof claims.exp !== 'number') {
        delete ctx.state.jwtClaims;
        ctx.state.jwtRefused = 'the bearer token has no expiry (exp)';
      } else if (claims.exp > now + maxTtlSeconds + CLOCK_SKEW_SECONDS) {
        delete ctx.state.jwtClaims;
        ctx.state.jwtRefused = `the bearer token expires more than ${maxTtlSeconds} seconds from now`;
      } else if (!validFrom(claims, now)) {
        delete ctx.state.jwtClaims;
        ctx.state.jwtRefused = 'the bearer token is not valid yet (nbf)';
      }
    }
    await next();
  };
  // Tokens verified before, by their Authorization header: a client sends the same token with every request,
  // and checking its signature again (plus koa-jwt's promise machinery) was a tenth of a cached read's CPU.
  // Only the time claims can change their verdict, so they are checked again on every use (as jsonwebtoken
  // does: expired from `exp` on, valid from `nbf` on). The key and algorithms are fixed for the process.
  const verified = new Map<string, Readonly<Record<string, unknown>>>();
  return async (ctx, next) => {
    // Node keeps the first of several Authorization headers and drops the rest: which one counts would be
    // a guess (a proxy may read another), so none does and `principal` answers 401.
    if (authorizationHeaders(ctx.req.rawHeaders) > 1) {
      ctx.state.jwtRefused = 'send one Authorization header, not several';
      return next();
    }
    const header = ctx.header.authorization;
    const known = header ? verified.get(header) : undefined;
    if (known && stillValid(known)) {
      ctx.state.jwtClaims = known;
      return bounded(ctx, next);
    }
    return verify(ctx, () => {
      const claims = ctx.state.jwtClaims as Record<string, unknown> | undefined;
      if (header && claims && typeof claims === 'object') {
        if (verified.size >= VERIFIED_TOKENS) verified.delete(verified.keys().next().value as string);
        verified.set(header, Object.freeze(claims));
      }
      return bounded(ctx, next);
    });
  };
}

/**
 * The token of `Authorization: Bearer <token>`: the scheme in any case (RFC 9110) and one or more spaces
 * before the token (RFC 6750's `1*SP`); koa-jwt's own reading took exactly one space, and answered 401 to
 * `Bearer  <token>`. Anything else is no token (a route that needs one answers 401).
 */
const BEARER = /^\s*Bearer +([^\s]+)\s*$/i;
const bearerToken = (ctx: { header: { authorization?: string } }): string | null =>
  BEARER.exec(ctx.header.authorization ?? '')?.[1] ?? null;

/** How many Authorization headers the request carried (`rawHeaders` is name, value, name, value, ...). */
export function authorizationHeaders(raw: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === 'authorization') n++;
  return n;
}

/** Verified tokens remembered per process (the oldest forgotten first). */
const VERIFIED_TOKENS = 5_000;

/** jsonwebtoken's expiry check, for a token whose signature was verified (`nbf` is `bounded`'s). */
function stillValid(claims: Readonly<Record<string, unknown>>): boolean {
  const now = Math.floor(Date.now() / 1000);
  const { exp } = claims;
  return typeof exp !== 'number' || now < exp;
}

/** Allowance for the issuer's clock running ahead of ours. */
const CLOCK_SKEW_SECONDS = 60;

/**
 * Valid from `nbf` on (a number, as jsonwebtoken requires), read on a clock up to CLOCK_SKEW_SECONDS behind
 * the issuer's; a token without `nbf` is valid from its issue. Expiry gets no such allowance.
 */
function validFrom(claims: { nbf?: unknown }, now: number): boolean {
  return (
    claims.nbf === undefined || (typeof claims.nbf === 'number' && claims.nbf <= now + CLOCK_SKEW_SECONDS)
  );
}

/**
 * One rule for every route, public reads included: no token is fine (a guard may still ask for one), but a
 * token that is sent must be valid, else 401. Public reads used to differ: some checked a sent token, the
 * reviews (9) ignored a bad one, so a client with an expired session saw no sign of it there.
 */
export function presentTokenMustBeValid(): Middleware {
  return async (ctx, next) => {
    if ((ctx.get('authorization') || ctx.state.jwtRefused) && ctx.state.metricsScraper !== true)
      principal(ctx);
    await next();
  };
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The authenticated caller, or 401. Claims: `sub` (user uuid) and `roles`. */
export function principal(ctx: Context): Principal {
  const claims = ctx.state.jwtClaims as { sub?: unknown; roles?: unknown } | undefined;
  if (!claims)
    throw unauthorized(
      (ctx.state.jwtRefused as string | undefined) ??
        (ctx.get('authorization') ? 'the bearer token is invalid or expired' : undefined),
    );
  if (typeof claims.sub !== 'string' || !UUID_RE.test(claims.sub))
    throw unauthorized('the token has no user id');
  const roles = Array.isArray(claims.roles)
    ? (claims.roles.filter((r) => (ROLES as readonly unknown[]).includes(r)) as Role[])
    : [];
  return { userId: claims.sub.toLowerCase(), roles };
}

const GUARD = Symbol('guard');

/** Route guard: a token, and (when given) one of the roles. */
export function requireRole(...roles: Role[]): Middleware {
  const guard: Middleware = async (ctx, next) => {
    const p = principal(ctx);
    const acting = roles.length ? p.roles.find((r) => roles.includes(r)) : undefined;
    // The roles the route takes, named: a coach refused a booking learns it needs a client account.
    if (roles.length && !acting) throw forbidden(`this action needs the ${roles.join(' or ')} role`);
    ctx.state.principal = acting ? { ...p, acting } : p;
    await next();
  };
  // Tagged so the roles a route admits can be read off its middleware stack (test/api/bad-input.test.ts
  // sends every route a wrong role and the right one without a table that could drift from the routes).
  return Object.assign(guard, { [GUARD]: roles });
}

/**
 * The roles a route's guard admits, read from the route's middleware stack: `null` when the route has no
 * guard (public), `[]` when any authenticated caller will do.
 */
export function guardOf(stack: readonly unknown[]): readonly Role[] | null {
  for (const mw of stack) {
    const roles = (mw as { [GUARD]?: Role[] } | null)?.[GUARD];
    if (roles) return roles;
  }
  return null;
}

export const authenticated = (): Middleware => requireRole();

export const currentPrincipal = (ctx: Context): Principal => ctx.state.principal as Principal;

/** Mints a token (used by `npm run token`, the seed and the tests). */
export function signToken(
  config: Config,
  userId: string,
  roles: Role[],
  opts: { expiresIn?: number; privateKey?: string } = {},
): string {
  // With JWT_PUBLIC_KEY the service takes RS256 tokens only: an HS256 one (from a JWT_SECRET kept beside it
  // for webhook secrets) would be refused with 401.
  if (config.jwt.publicKey && !opts.privateKey)
    throw new Error('JWT_PUBLIC_KEY is set: tokens are signed by the identity provider (its private key)');
  const key = opts.privateKey ?? config.jwt.secret;
  if (!key) throw new Error('no JWT secret configured to sign with');
  return jwt.sign({ sub: userId, roles }, key, {
    algorithm: opts.privateKey ? 'RS256' : 'HS256',
    // Never longer than the service accepts (JWT_MAX_TTL_SECONDS): such a token would be refused with 401.
    expiresIn: Math.min(opts.expiresIn ?? 24 * 3600, config.jwt.maxTtlSeconds),
    ...(config.jwt.issuer ? { issuer: config.jwt.issuer } : {}),
    ...(config.jwt.audience ? { audience: config.jwt.audience } : {}),
  });
}
