import { generateKeyPairSync } from 'node:crypto';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';

describe('numeric settings', () => {
  it('an empty value means the default, as for every other number (a blanked line in .env)', () => {
    const config = loadConfig({ PORT: '', CONSISTENCY_WAIT_MS: '', MAX_UPLOAD_BYTES: '' });
    expect(config.port).toBe(3000);
    expect(config.consistencyWaitMs).toBe(2000);
    expect(config.maxUploadBytes).toBe(200 * 1024 * 1024);
  });

  it('a value that is not a whole number is refused at start, not taken as no limit', () => {
    for (const [name, raw] of [
      ['MAX_UPLOAD_BYTES', '200MB'],
      ['MAX_UPLOAD_BYTES', '0'],
      ['CONSISTENCY_WAIT_MS', '2s'],
      ['PORT', 'http'],
      ['PORT', '70000'],
    ] as const)
      expect(() => loadConfig({ [name]: raw })).toThrow(ConfigError);
  });

  it('refuses 0 where it is no "off": a retry job every millisecond, leases that let a second sender or request in at once, tokens that all expire at once', () => {
    for (const name of [
      'MAIL_RETRY_INTERVAL_MS',
      'MAIL_LEASE_MS',
      'IDEMPOTENCY_LEASE_MS',
      'JWT_MAX_TTL_SECONDS',
    ])
      expect(() => loadConfig({ [name]: '0' })).toThrow(new ConfigError(`${name} must be at least 1, got 0`));
  });

  it('a statement waits DATABASE_QUERY_TIMEOUT_MS (10 s) for its answer; 0 is no limit, a non-number is refused', () => {
    expect(loadConfig({}).databaseQueryTimeoutMs).toBe(10_000);
    expect(loadConfig({ DATABASE_QUERY_TIMEOUT_MS: '0' }).databaseQueryTimeoutMs).toBe(0);
    expect(loadConfig({ DATABASE_QUERY_TIMEOUT_MS: '2500' }).databaseQueryTimeoutMs).toBe(2500);
    expect(() => loadConfig({ DATABASE_QUERY_TIMEOUT_MS: '10s' })).toThrow(
      new ConfigError('DATABASE_QUERY_TIMEOUT_MS must be a whole number, got 10s'),
    );
  });

  it('takes whole numbers', () => {
    const config = loadConfig({ PORT: '8080', CONSISTENCY_WAIT_MS: '0', MAX_UPLOAD_BYTES: '1048576' });
    expect(config).toMatchObject({ port: 8080, consistencyWaitMs: 0, maxUploadBytes: 1048576 });
  });
});

describe('text settings left empty (a blanked line in .env)', () => {
  it('mean their default: the data directory ./data and the bucket coaching', () => {
    const config = loadConfig({ DATA_DIR: '', S3_ENDPOINT: 'http://127.0.0.1:9000', S3_BUCKET: '' });
    expect(config.dataDir).toBe(path.resolve('./data'));
    expect(config.s3?.bucket).toBe('coaching');
  });
});

describe('SMTP_URL', () => {
  it('is checked at start: an smtp:// or smtps:// URL with a host, or the service does not start', () => {
    for (const good of [
      'smtp://127.0.0.1:2525',
      'smtps://user:p%40ss@mail.example.com:465?tls.rejectUnauthorized=false',
      'smtp://[::1]:25',
    ])
      expect(loadConfig({ SMTP_URL: good }).smtpUrl).toBe(good);
    expect(loadConfig({ SMTP_URL: '' }).smtpUrl).toBeUndefined(); // the outbox
    // Each of these sent every e-mail to localhost:587 (nodemailer's default), and the service started.
    for (const bad of [
      'smtp//mail.example.com:25',
      'mail.example.com',
      'localhost:25',
      'http://mail.example.com',
      'smtp://',
    ])
      expect(() => loadConfig({ SMTP_URL: bad })).toThrow(ConfigError);
  });

  it('does not show the value it refuses (it may hold the password)', () => {
    expect(() => loadConfig({ SMTP_URL: 'smtp//user:hunter2@mail.example.com' })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('hunter2') }),
    );
  });
});

describe('JWT_PUBLIC_KEY', () => {
  const pem = (type: 'rsa' | 'ec') =>
    generateKeyPairSync(
      type as 'rsa',
      {
        ...(type === 'rsa' ? { modulusLength: 2048 } : { namedCurve: 'P-256' }),
        publicKeyEncoding: { type: 'spki', format: 'pem' },
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      } as never,
    ) as unknown as { publicKey: string; privateKey: string };

  it('is read at start: an RSA public key in PEM, else one line naming it (no OpenSSL error, no stack)', () => {
    const rsa = pem('rsa').publicKey;
    expect(loadConfig({ JWT_PUBLIC_KEY: rsa }).jwt.publicKey).toBe(rsa);
    // Each of these started the service only as far as opening the database, then stopped with
    // "error:1E08010C:DECODER routines::unsupported" and its stack (or, an EC key, refused every token).
    for (const [bad, why] of [
      ['garbage', /^JWT_PUBLIC_KEY is not a public key in PEM/],
      ['-----BEGIN PUBLIC KEY-----', /^JWT_PUBLIC_KEY is not a public key in PEM/],
      [rsa.replace(/\n/g, '\\n'), /line breaks written as \\n/],
      [pem('ec').publicKey, /^JWT_PUBLIC_KEY must be an RSA key .*RS256.*of type ec$/],
    ] as const) {
      let err: unknown;
      try {
        loadConfig({ JWT_PUBLIC_KEY: bad });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      const message = (err as Error).message;
      expect(message).toMatch(why);
      expect(message).not.toMatch(/DECODER|error:|\n/);
    }
  });
});

describe('DATABASE_URL and EVENTSTORE_URL', () => {
  it('take the URLs pg and the EventStoreDB client read, and nothing means the embedded defaults', () => {
    for (const good of [
      'postgres://postgres@127.0.0.1:5432/postgres',
      'postgresql://user:pw@db.example.com/coaching?sslmode=require',
      'socket:/var/run/postgresql?db=coaching',
      '/var/run/postgresql coaching',
    ])
      expect(loadConfig({ DATABASE_URL: good }).databaseUrl).toBe(good);
    for (const good of [
      'esdb://localhost:2113?tls=false',
      'esdb+discover://cluster.example.com:2113',
      'postgres://postgres@127.0.0.1:5432/events',
    ])
      expect(loadConfig({ EVENTSTORE_URL: good }).eventStoreUrl).toBe(good);
    expect(loadConfig({ DATABASE_URL: '', EVENTSTORE_URL: '' })).toMatchObject({
      databaseUrl: undefined,
      eventStoreUrl: undefined,
    });
  });

  it('refuse anything else at start with one line naming the setting and the scheme, not the value', () => {
    for (const [name, bad] of [
      ['DATABASE_URL', 'notaurl'],
      ['DATABASE_URL', 'http://user:hunter2@db.example.com/x'],
      ['DATABASE_URL', 'mysql://user:hunter2@db.example.com/x'],
      ['EVENTSTORE_URL', 'http://foo'],
      ['EVENTSTORE_URL', 'eventstore:2113'],
      ['EVENTSTORE_URL', 'esdb//localhost:2113'],
    ] as const) {
      let error: unknown;
      try {
        loadConfig({ [name]: bad });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      const message = (error as Error).message;
      expect(message.startsWith(`${name} must be a URL starting with`)).toBe(true);
      expect(message).not.toContain('hunter2');
      expect(message).not.toContain('\n');
    }
  });

  it('refuse an esdb:// URL the EventStoreDB client cannot read, or would print whole with its password', () => {
    // The client prints the whole connection string (password included) to stdout for an option it does not
    // apply, and throws a parse error with a stack for a value it cannot read: both only once the store opened.
    const printed = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      for (const [bad, why] of [
        ['esdb://admin:hunter2@localhost:2113?tls=maybe', /expected true or false/],
        ['esdb://admin:hunter2@localhost:2113?tls=false&defaultDeadline=soon', /expected Integer/],
        ['esdb://admin:hunter2@localhost:2113?nodePreference=nearest', /expected leader or follower/],
        ['esdb://admin:hunter2@localhost:2113?tls=false&tlz=false', /Unknown option key "tlz"/],
        ['esdb://admin:hunter2@localhost:2113?tls=true&tlsVerifyCert=false', /"tlsVerifyCert".*tlsCAFile/],
      ] as const) {
        let error: unknown;
        try {
          loadConfig({ EVENTSTORE_URL: bad });
        } catch (e) {
          error = e;
        }
        expect([bad, error]).toEqual([bad, expect.any(ConfigError)]);
        const message = (error as Error).message;
        expect(message.startsWith('EVENTSTORE_URL ')).toBe(true);
        expect(message).toMatch(why);
        expect(message).not.toContain('hunter2');
        expect(message).not.toContain('\n');
      }
      expect(printed).not.toHaveBeenCalled();
      // What the client reads without a word is taken, a cluster's gossip seeds too (no WHATWG URL: refused before).
      const good =
        'esdb://admin:hunter2@node1:2113,node2:2113?tls=true&tlsCAFile=%2Fca.crt&defaultDeadline=5000';
      expect(loadConfig({ EVENTSTORE_URL: good }).eventStoreUrl).toBe(good);
    } finally {
      printed.mockRestore();
    }
  });
});

describe('CORS_ORIGINS', () => {
  it('takes origins (scheme, host, port) and *, comma-separated; unset or blank is none', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: ' ' }).corsOrigins).toEqual([]);
    expect(
      loadConfig({ CORS_ORIGINS: 'https://app.example.com, http://localhost:5173,,http://[::1]:8080' })
        .corsOrigins,
    ).toEqual(['https://app.example.com', 'http://localhost:5173', 'http://[::1]:8080']);
    expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
  });

  it('refuses at start what a browser never sends as an origin, saying the origin it may have meant', () => {
    for (const bad of [
      'https://app.example.com/',
      'https://app.example.com/app',
      'https://App.Example.com',
      'https://app.example.com:443',
      'app.example.com',
      'ftp://app.example.com',
      'null',
    ])
      expect(() => loadConfig({ CORS_ORIGINS: bad })).toThrow(ConfigError);
    expect(() => loadConfig({ CORS_ORIGINS: 'https://app.example.com/' })).toThrow(
      'CORS_ORIGINS: "https://app.example.com/" is not an origin (scheme://host[:port] in lower case, no path or trailing slash: https://app.example.com?), nor *',
    );
  });
});

describe('S3_ENDPOINT', () => {
  it('is checked at start: an http:// or https:// URL with a host, else one line naming it (no stack)', () => {
    for (const good of ['http://minio:9000', 'https://s3.eu-central-1.amazonaws.com'])
      expect(loadConfig({ S3_ENDPOINT: good }).s3?.endpoint).toBe(good);
    for (const bad of ['minio:9000', 'localhost', 'ftp://minio:9000'])
      expect(() => loadConfig({ S3_ENDPOINT: bad })).toThrow(
        /^S3_ENDPOINT must be an http:\/\/ or https:\/\/ URL with a host/,
      );
  });
});

describe('HEADERS_TIMEOUT_MS and REQUEST_TIMEOUT_MS', () => {
  it('refuse at start, in one line, a time for the headers longer than for the whole request', () => {
    expect(() => loadConfig({ HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '5000' })).toThrow(
      new ConfigError('HEADERS_TIMEOUT_MS (20000) must not exceed REQUEST_TIMEOUT_MS (5000)'),
    );
    // 0 is no limit (Node's meaning): any time for the headers fits within it.
    expect(loadConfig({ HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '0' }).http).toMatchObject({
      headersTimeoutMs: 20000,
      requestTimeoutMs: 0,
    });
  });
});
