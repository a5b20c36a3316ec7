import { createHmac, createPublicKey } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { parseConnectionString } from '@eventstore/db-client/dist/Client/parseConnectionString';
import type { ServerTimeouts } from './http/server';
import { envelopeAddress } from './mail/compose';

/** Runtime configuration, read once from the environment (see README "Configuration"). */
export interface Config {
  port: number;
  dataDir: string;
  databaseUrl?: string;
  /** Connections to DATABASE_URL (requests, read-model transactions and the log's LISTEN share them). */
  databasePoolSize: number;
  /** Longest wait for a database connection (new, or a free one of the pool) before 503. */
  databaseConnectTimeoutMs: number;
  /** Longest wait for the answer to one statement before 503 (0: none; migrations are never bounded). */
  databaseQueryTimeoutMs: number;
  eventStoreUrl?: string;
  s3?: { endpoint: string; accessKey: string; secretKey: string; bucket: string; timeoutMs: number };
  smtpUrl?: string;
  mailFrom: string;
  jwt: {
    secret?: string;
    publicKey?: string;
    usingDevSecret: boolean;
    /** Tokens without `exp`, or expiring further ahead than this, are refused. */
    maxTtlSeconds: number;
    /** JWT_ISSUER / JWT_AUDIENCE: when set, a token must carry this `iss` / name this `aud`. */
    issuer?: string;
    audience?: string;
  };
  http: ServerTimeouts;
  /** A `sending` e-mail claim older than this belongs to a process that died; it is taken over. */
  mailLeaseMs: number;
  /** How often the retry job looks for due and abandoned e-mails. */
  mailRetryIntervalMs: number;
  /** An Idempotency-Key whose request left no answer this long ago may be run again. */
  idempotencyLeaseMs: number;
  /** How long a command waits for its projections before answering (read-your-writes). */
  consistencyWaitMs: number;
  /** Largest uploaded file (each part of a multipart upload), bytes; 413 beyond. */
  maxUploadBytes: number;
  /** Bearer token a Prometheus scraper may use for `GET /metrics` instead of an admin JWT. */
  metricsToken?: string;
  /**
   * Outbound webhooks: `signingKey` derives each channel's signing secret (so no secret is stored; null:
   * webhooks are not configured and refused);
   * `allowLoopback` lets channels name http:// and loopback/private addresses (tests, local development).
   */
  webhooks: { signingKey: string | null; usingDevKey: boolean; allowLoopback: boolean };
  /** Origins whose browser apps may call the API (`CORS_ORIGINS`; `*`: any); none: no CORS headers. */
  corsOrigins: string[];
  /** This instance's name among several (`INSTANCE_ID`, else host and pid); each start adds a suffix. */
  instanceName: string;
  /** A process manager's lease lasts this long unrenewed: the longest its work waits when its owner dies. */
  leaseTtlMs: number;
  /** How long before a session's start its parties are reminded of it (0: no reminders). */
  sessionReminderLeadMs: number;
}

/** SESSION_REMINDER_LEAD_MS's default: the parties are reminded 24 hours before a session. */
export const DEFAULT_SESSION_REMINDER_LEAD_MS = 24 * 3_600_000;

export const DEV_JWT_SECRET = 'dev-only-secret-change-me';

/** Secrets published in this repository or its history, or common placeholders: refused in production. */
export const KNOWN_DEV_SECRETS = [
  DEV_JWT_SECRET,
  'change-me-in-production',
  'change-me',
  'changeme',
  'secret',
  'test-secret',
  'dev-secret',
  'development',
];

/** Tokens may live 30 days at most by default (the seed's demo tokens do). */
export const DEFAULT_JWT_MAX_TTL_SECONDS = 30 * 24 * 3600;

/** An e-mail claim is exclusive this long; then another sender may take it over. */
export const DEFAULT_MAIL_LEASE_MS = 120_000;

/** Thrown for a configuration the service refuses to start with. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Why a JWT secret is too weak to trust in production (published, or under 32 bytes), or null. */
function weakSecretProblem(secret: string): string | null {
  if (KNOWN_DEV_SECRETS.some((k) => k.toLowerCase() === secret.trim().toLowerCase()))
    return 'JWT_SECRET is a published development value; set a random secret of 32 bytes or more';
  // White space around a secret adds nothing to guess (32 spaces, a value padded by a template, were taken).
  if (Buffer.byteLength(secret.trim()) < 32)
    return 'JWT_SECRET must be at least 32 bytes (white space around it not counted) with NODE_ENV=production';
  return null;
}

/**
 * With NODE_ENV=production a missing, short or published JWT secret is refused: anyone could mint an admin
 * or service token with it. With JWT_PUBLIC_KEY it signs no token, but webhook secrets may be derived from
 * it (see webhookConfig), so a weak one is refused there.
 */
function checkProductionSecrets(env: NodeJS.ProcessEnv) {
  if (env.NODE_ENV !== 'production') return;
  if (env.JWT_PUBLIC_KEY) return;
  const secret = env.JWT_SECRET;
  if (!secret)
    throw new ConfigError('NODE_ENV=production needs JWT_SECRET (at least 32 bytes) or JWT_PUBLIC_KEY');
  const problem = weakSecretProblem(secret);
  if (problem) throw new ConfigError(problem);
}

const positiveInt = (env: NodeJS.ProcessEnv, name: string, fallback: number) => {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new ConfigError(`${name} must be a whole number, got ${raw}`);
  return n;
};
/** A count that must not be 0 (a pool of no connections would hang every query). */
const atLeastOne = (env: NodeJS.ProcessEnv, name: string, fallback: number) => {
  const n = positiveInt(env, name, fallback);
  if (n < 1) throw new ConfigError(`${name} must be at least 1, got ${env[name]}`);
  return n;
};
/** A TCP port to listen on (0: any free one). */
const port = (env: NodeJS.ProcessEnv) => {
  const n = positiveInt(env, 'PORT', 3000);
  if (n > 65535) throw new ConfigError(`PORT must be at most 65535, got ${env.PORT}`);
  return n;
};
export const DEV_WEBHOOK_KEY = 'dev-only-webhook-key-change-me';

/**
 * The key webhook secrets are derived from: WEBHOOK_SIGNING_KEY; unset, in production, one derived from
 * JWT_SECRET (never the JWT secret itself), or none (webhook channels are then refused) when tokens are
 * checked with a public key only; unset outside production, a development key (with a warning).
 */
function webhookConfig(env: NodeJS.ProcessEnv): Config['webhooks'] {
  const production = env.NODE_ENV === 'production';
  const allowLoopback = env.WEBHOOK_ALLOW_LOOPBACK === 'true';
  if (production && allowLoopback)
    throw new ConfigError('WEBHOOK_ALLOW_LOOPBACK=true is for tests and development, not production');
  const given = env.WEBHOOK_SIGNING_KEY;
  if (given) {
    if (production && (Buffer.byteLength(given.trim()) < 32 || given.trim() === DEV_WEBHOOK_KEY))
      throw new ConfigError('WEBHOOK_SIGNING_KEY must be a random value of at least 32 bytes in production');
    return { signingKey: given, usingDevKey: false, allowLoopback };
  }
  if (!production) return { signingKey: DEV_WEBHOOK_KEY, usingDevKey: true, allowLoopback };
  // Tokens checked by JWT_PUBLIC_KEY leave JWT_SECRET unchecked above; a weak one left in the environment
  // would make every webhook signature forgeable.
  const weak = env.JWT_SECRET ? weakSecretProblem(env.JWT_SECRET) : null;
  if (weak)
    throw new ConfigError(
      `${weak}: webhook secrets are derived from it while WEBHOOK_SIGNING_KEY is unset (set that, or remove JWT_SECRET)`,
    );
  const derived = env.JWT_SECRET
    ? createHmac('sha256', env.JWT_SECRET).update('webhook-signing-key').digest('hex')
    : null;
  return { signingKey: derived, usingDevKey: false, allowLoopback };
}

/** MAIL_FROM: one sender mailbox (`Name <address>` or an address), checked at start: a bad one failed every mail. */
function mailFrom(env: NodeJS.ProcessEnv): string {
  const from = env.MAIL_FROM || 'Coaching <no-reply@coaching.local>';
  try {
    envelopeAddress(from);
  } catch {
    throw new ConfigError(
      `MAIL_FROM must be one sender, "Name <address>" or an address; got ${JSON.stringify(from)}`,
    );
  }
  return from;
}

/** `raw` as a URL, or null when it is none (each setting then says what it wanted, never echoing a secret). */
const parseUrl = (raw: string): URL | null => (URL.canParse(raw) ? new URL(raw) : null);

/**
 * SMTP_URL: `smtp://` or `smtps://` with a host (credentials, port and nodemailer's options as query are
 * optional), checked at start: nodemailer reads anything else (`smtp//mail.example.com`, a bare host name)
 * as localhost:587, so every e-mail went there and failed (or went out through whatever listens there).
 */
function smtpUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.SMTP_URL;
  if (!raw) return undefined;
  const url = parseUrl(raw); // when none, said below without the value (it may hold a password)
  if (!url || !['smtp:', 'smtps:'].includes(url.protocol) || !url.hostname)
    throw new ConfigError(
      `SMTP_URL must be an smtp:// or smtps:// URL with a host, e.g. smtp://user:password@mail.example.com:587${
        url
          ? `; got scheme "${url.protocol}" and host "${url.hostname}"`
          : '; got something that is not a URL'
      }`,
    );
  return raw;
}

/**
 * CORS_ORIGINS: the origins browser apps call the API from (`https://app.example.com`, comma-separated), or
 * `*`. An origin is a scheme, a host and a port, nothing after: a browser sends exactly that, so a path or a
 * trailing slash would never match, and is refused at start rather than failing every call of the app.
 */
function corsOrigins(env: NodeJS.ProcessEnv): string[] {
  const given = (env.CORS_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  for (const origin of given) {
    if (origin === '*') continue;
    const url = parseUrl(origin);
    if (!url || !['http:', 'https:'].includes(url.protocol) || url.origin !== origin)
      throw new ConfigError(
        `CORS_ORIGINS: "${origin}" is not an origin (scheme://host[:port] in lower case, no path or trailing slash${
          url && ['http:', 'https:'].includes(url.protocol) ? `: ${url.origin}?` : ''
        }), nor *`,
      );
  }
  return given;
}

/**
 * JWT_PUBLIC_KEY: an RSA public key in PEM (tokens are RS256), read at start. One OpenSSL could not read
 * stopped the service after it had opened the database, with "error:1E08010C:DECODER routines::unsupported"
 * and a stack; another kind of key (EC) started it and refused every token.
 */
function jwtPublicKey(env: NodeJS.ProcessEnv): string | undefined {
  const pem = env.JWT_PUBLIC_KEY;
  if (!pem) return undefined;
  let type: string | undefined;
  try {
    type = createPublicKey(pem).asymmetricKeyType;
  } catch {
    throw new ConfigError(
      pem.includes('\\n') && !pem.includes('\n')
        ? 'JWT_PUBLIC_KEY is not a public key in PEM: its line breaks written as \\n are not read; give the PEM with real line breaks'
        : 'JWT_PUBLIC_KEY is not a public key in PEM ("-----BEGIN PUBLIC KEY-----" ... "-----END PUBLIC KEY-----")',
    );
  }
  if (type !== 'rsa')
    throw new ConfigError(
      `JWT_PUBLIC_KEY must be an RSA key (tokens are checked as RS256); got a key of type ${type ?? 'unknown'}`,
    );
  return pem;
}

/**
 * S3_ENDPOINT: an http:// or https:// URL with a host, checked at start: `minio:9000` or a bare host name
 * stopped the service after it had opened the database, with the S3 client's error and a stack.
 */
function s3Endpoint(raw: string): string {
  const url = parseUrl(raw);
  if (!url || !['http:', 'https:'].includes(url.protocol) || !url.hostname)
    throw new ConfigError(
      `S3_ENDPOINT must be an http:// or https:// URL with a host, e.g. http://minio:9000; got ${
        url ? `scheme "${url.protocol}" and host "${url.hostname}"` : 'something that is not a URL'
      }`,
    );
  return raw;
}

/** The HTTP server's timeouts; Node refuses (with a stack, after the database opened) headers > request. */
function httpTimeouts(env: NodeJS.ProcessEnv): ServerTimeouts {
  const headersTimeoutMs = positiveInt(env, 'HEADERS_TIMEOUT_MS', 10_000);
  const requestTimeoutMs = positiveInt(env, 'REQUEST_TIMEOUT_MS', 300_000);
  if (requestTimeoutMs > 0 && headersTimeoutMs > requestTimeoutMs)
    throw new ConfigError(
      `HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs})`,
    );
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    bodyIdleTimeoutMs: positiveInt(env, 'BODY_IDLE_TIMEOUT_MS', 10_000),
    responseIdleTimeoutMs: positiveInt(env, 'RESPONSE_IDLE_TIMEOUT_MS', 60_000),
    // 0 would keep idle connections open for ever.
    keepAliveTimeoutMs: atLeastOne(env, 'KEEP_ALIVE_TIMEOUT_MS', 65_000),
  };
}

/**
 * DATABASE_URL and EVENTSTORE_URL, checked at start: a value pg or the EventStoreDB client cannot read
 * (`notaurl`, `http://…`) failed later with a stack (`getaddrinfo ENOTFOUND base`), and a rebuild hung on it.
 * The value is not shown (it may hold the password); its scheme is.
 */
function connectionUrl(name: string, raw: string | undefined, schemes: string[], example: string) {
  if (!raw) return undefined;
  // pg also takes a Unix socket's directory (`/var/run/postgresql dbname`).
  if (name === 'DATABASE_URL' && raw.startsWith('/')) return raw;
  const scheme = parseUrl(raw)?.protocol ?? null;
  if (scheme === null || !schemes.includes(scheme))
    throw new ConfigError(
      `${name} must be a URL starting with ${schemes.map((x) => (x === 'socket:' ? x : `${x}//`)).join(' or ')}, e.g. ${example}; got ${
        scheme ? `scheme "${scheme}"` : 'something that is not a URL'
      }`,
    );
  return raw;
}

/**
 * An esdb:// URL as the EventStoreDB client reads it, checked with the client's own parser. The client,
 * when the store opens, throws a value it cannot read (`tls=maybe`) as an error with a stack, and prints
 * the whole connection string, password included, to stdout for an option it does not apply (an unknown
 * key, `tlsVerifyCert=false`): both are refused here, in one line that shows no part of the value.
 */
function esdbUrl(raw: string) {
  const unapplied: string[] = [];
  const print = console.warn;
  console.warn = (message: unknown) => unapplied.push(String(message).split('\n')[0]!);
  try {
    parseConnectionString(raw);
  } catch (err) {
    const { expected, location } = err as { expected?: string; location?: [number, number] };
    throw new ConfigError(
      `EVENTSTORE_URL is not a connection string the EventStoreDB client reads: expected ${expected ?? 'esdb://host:port'}` +
        (location ? ` at character ${location[0] + 1}` : ''),
    );
  } finally {
    console.warn = print;
  }
  if (unapplied.length)
    throw new ConfigError(
      `EVENTSTORE_URL has an option the EventStoreDB client does not apply: ${unapplied[0]}` +
        (unapplied[0]!.includes('tlsVerifyCert')
          ? ' To trust a node certificate of your own CA, give the CA with tlsCAFile=<file>.'
          : ' Remove it.'),
    );
  return raw;
}

/**
 * EVENTSTORE_URL: EventStoreDB's connection string is read by its client's parser alone (a cluster's gossip
 * seeds, `esdb://node1:2113,node2:2113,node3:2113`, are no WHATWG URL: they were refused as "not a URL").
 */
const eventStoreUrl = (raw: string | undefined) =>
  raw && /^esdb(\+discover)?:/i.test(raw)
    ? esdbUrl(raw)
    : connectionUrl(
        'EVENTSTORE_URL',
        raw,
        ['esdb:', 'esdb+discover:', 'postgres:', 'postgresql:'],
        'esdb://eventstore:2113?tls=false',
      );

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  checkProductionSecrets(env);
  const usingDevSecret = !env.JWT_SECRET && !env.JWT_PUBLIC_KEY;
  return {
    port: port(env),
    dataDir: path.resolve(env.DATA_DIR || './data'),
    databaseUrl: connectionUrl(
      'DATABASE_URL',
      env.DATABASE_URL,
      ['postgres:', 'postgresql:', 'socket:'],
      'postgres://user:password@db.example.com:5432/coaching',
    ),
    databasePoolSize: atLeastOne(env, 'DATABASE_POOL_SIZE', 10),
    databaseConnectTimeoutMs: atLeastOne(env, 'DATABASE_CONNECT_TIMEOUT_MS', 10_000),
    databaseQueryTimeoutMs: positiveInt(env, 'DATABASE_QUERY_TIMEOUT_MS', 10_000),
    eventStoreUrl: eventStoreUrl(env.EVENTSTORE_URL),
    s3: env.S3_ENDPOINT
      ? {
          endpoint: s3Endpoint(env.S3_ENDPOINT),
          accessKey: env.S3_ACCESS_KEY ?? '',
          secretKey: env.S3_SECRET_KEY ?? '',
          bucket: env.S3_BUCKET || 'coaching',
          timeoutMs: atLeastOne(env, 'S3_TIMEOUT_MS', 30_000),
        }
      : undefined,
    smtpUrl: smtpUrl(env),
    mailFrom: mailFrom(env),
    jwt: {
      secret: env.JWT_SECRET || (env.JWT_PUBLIC_KEY ? undefined : DEV_JWT_SECRET),
      publicKey: jwtPublicKey(env),
      usingDevSecret,
      maxTtlSeconds: atLeastOne(env, 'JWT_MAX_TTL_SECONDS', DEFAULT_JWT_MAX_TTL_SECONDS),
      issuer: env.JWT_ISSUER || undefined,
      audience: env.JWT_AUDIENCE || undefined,
    },
    http: httpTimeouts(env),
    // 0 is no "off" here: a claim or key taken over at once (a second send, a request run twice), or a
    // retry pass every millisecond.
    mailLeaseMs: atLeastOne(env, 'MAIL_LEASE_MS', DEFAULT_MAIL_LEASE_MS),
    mailRetryIntervalMs: atLeastOne(env, 'MAIL_RETRY_INTERVAL_MS', 30_000),
    idempotencyLeaseMs: atLeastOne(env, 'IDEMPOTENCY_LEASE_MS', 30_000),
    consistencyWaitMs: positiveInt(env, 'CONSISTENCY_WAIT_MS', 2000),
    // Checked here: not a number failed every upload with a 500 (the multipart parser refuses NaN); 0 was 413.
    maxUploadBytes: atLeastOne(env, 'MAX_UPLOAD_BYTES', 200 * 1024 * 1024),
    metricsToken: env.METRICS_TOKEN || undefined,
    webhooks: webhookConfig(env),
    corsOrigins: corsOrigins(env),
    instanceName: env.INSTANCE_ID || `${os.hostname()}-${process.pid}`,
    leaseTtlMs: Math.max(1000, positiveInt(env, 'LEASE_TTL_MS', 5000)),
    sessionReminderLeadMs: positiveInt(env, 'SESSION_REMINDER_LEAD_MS', DEFAULT_SESSION_REMINDER_LEAD_MS),
  };
}
