import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config';

/**
 * Every environment variable the service reads is documented where README's "Configuration" sends the
 * operator: its table and `.env.example`.
 */
const root = path.join(__dirname, '../..');
const read = (p: string) => fs.readFileSync(path.join(root, p), 'utf8');

/** Read elsewhere and documented there: NODE_ENV ("Production secrets"), SEED_URL ("Demo data"). */
const NOT_CONFIGURATION = new Set(['NODE_ENV', 'SEED_URL', 'JEST_WORKER_ID']);

const sources = (dir: string): string[] =>
  fs
    .readdirSync(path.join(root, dir), { withFileTypes: true })
    .flatMap((e) =>
      e.isDirectory()
        ? sources(path.join(dir, e.name))
        : e.name.endsWith('.ts')
          ? [path.join(dir, e.name)]
          : [],
    );

const variablesRead = (): string[] => {
  const names = new Set<string>();
  for (const file of sources('src')) {
    const text = read(file);
    for (const m of text.matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)) names.add(m[1]!);
    // positiveInt(env, 'NAME', …), atLeastOne(env, 'NAME', …)
    for (const m of text.matchAll(/\(env, '([A-Z][A-Z0-9_]+)'/g)) names.add(m[1]!);
  }
  return [...names].filter((n) => !NOT_CONFIGURATION.has(n)).sort();
};

describe('configuration documentation', () => {
  const read_ = variablesRead();

  it('finds the variables config.ts reads', () => {
    expect(read_).toEqual(expect.arrayContaining(['DATABASE_URL', 'LEASE_TTL_MS', 'S3_BUCKET', 'LOG_LEVEL']));
  });

  it("README's Configuration table names every variable", () => {
    const readme = read('README.md');
    const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Operating it'));
    const documented = new Set(
      [...section.matchAll(/^\| (.+?) \|/gm)].flatMap((m) =>
        [...m[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((x) => x[1]!),
      ),
    );
    expect(read_.filter((n) => !documented.has(n))).toEqual([]);
  });

  it("README's Several instances says where uploaded files must live (they are not in the database)", () => {
    const readme = read('README.md');
    const section = readme.slice(
      readme.indexOf('### Several instances'),
      readme.indexOf('### Production secrets'),
    );
    expect(section).toContain('`S3_ENDPOINT`');
    expect(section).toContain('`DATA_DIR`');
    expect(section).toContain('404 `file_not_found`');
  });

  it('.env.example names every variable, set or commented out', () => {
    const example = read('.env.example');
    const documented = new Set([...example.matchAll(/^#? ?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]!));
    expect(read_.filter((n) => !documented.has(n))).toEqual([]);
  });

  it('.env.example shows the defaults: copying a value it sets changes nothing', () => {
    /** Examples of a value to give, not defaults (LOG_* are read by the logger, not by loadConfig). */
    const examples = new Set(['JWT_ISSUER', 'JWT_AUDIENCE', 'LOG_PRETTY']);
    const shown = [...read('.env.example').matchAll(/^#? ?([A-Z][A-Z0-9_]+)=(.+)$/gm)]
      .map((m) => [m[1]!, m[2]!] as const)
      .filter(([name]) => !examples.has(name));
    expect(shown.length).toBeGreaterThan(15);
    const base = { S3_ENDPOINT: 'http://minio:9000', INSTANCE_ID: 'docs' };
    const defaults = loadConfig(base);
    for (const [name, value] of shown)
      expect({ name, config: loadConfig({ ...base, [name]: value }) }).toEqual({ name, config: defaults });
  });

  it("README's table gives the default .env.example shows for each variable", () => {
    const readme = read('README.md');
    const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Operating it'));
    const rows = [...section.matchAll(/^\| (.+) \|$/gm)].map((m) => m[1]!);
    const examples = new Set(['JWT_ISSUER', 'JWT_AUDIENCE', 'LOG_PRETTY']);
    const missing = [...read('.env.example').matchAll(/^#? ?([A-Z][A-Z0-9_]+)=(.+)$/gm)]
      .filter((m) => !examples.has(m[1]!))
      .filter((m) => !rows.some((r) => r.includes(`\`${m[1]}\``) && r.includes(`\`${m[2]}\``)))
      .map((m) => `${m[1]}=${m[2]}`);
    expect(missing).toEqual([]);
  });

  it('the Docker image leaves out a local .env (its secrets; the service would read it at start)', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim());
    expect(ignored).toContain('.env');
  });

  it('the Docker image runs the service as an unprivileged user who can write its DATA_DIR', () => {
    const dockerfile = read('Dockerfile');
    const users = [...dockerfile.matchAll(/^USER\s+(\S+)/gm)].map((m) => m[1]!);
    const user = users.at(-1);
    expect(user).toBeDefined();
    expect(['root', '0', '0:0']).not.toContain(user);
    // The image's default DATA_DIR (./data under WORKDIR) is made and given to that user before it runs.
    expect(dockerfile).toMatch(
      new RegExp(`^RUN .*mkdir -p (/app/)?data .*chown ${user}:\\S+ (/app/)?data`, 'm'),
    );
    expect(dockerfile.indexOf('chown')).toBeLessThan(dockerfile.lastIndexOf('\nUSER '));
  });
});

describe('docker-compose.yml', () => {
  const compose = read('docker-compose.yml');
  const app = compose.slice(compose.indexOf('\n  app:'), compose.indexOf('\nvolumes:'));

  it('gives the app longer to stop than its own grace for requests in flight (else SIGKILL mid-shutdown)', () => {
    // src/main.ts waits SHUTDOWN_GRACE_MS for the requests being served, then stops the projections and gives
    // its leases up; Docker's default stop timeout (10 s) would kill it before that last step.
    const grace = Number(/SHUTDOWN_GRACE_MS = ([\d_]+)/.exec(read('src/main.ts'))![1]!.replace(/_/g, ''));
    const stop = /^\s+stop_grace_period: (\d+)s$/m.exec(app)?.[1];
    expect(Number(stop ?? 10) * 1000).toBeGreaterThanOrEqual(grace + 5000);
  });

  it('starts the app again after it exits (it exits 1 when a dependency is away at start)', () => {
    expect(app).toMatch(/^\s+restart: (unless-stopped|always|on-failure)$/m);
  });

  it('wires the app to every service it starts, with their credentials', () => {
    const env = new Map(
      [...app.matchAll(/^ {6}([A-Z][A-Z0-9_]+): '?(.*?)'?$/gm)].map((m) => [m[1]!, m[2]!] as const),
    );
    const setting = (service: string, name: string) => {
      const block = compose.slice(compose.indexOf(`\n  ${service}:`) + 1);
      return new RegExp(`^ {6}${name}: '?(.*?)'?$`, 'm').exec(block.slice(0, block.indexOf('\n\n')))?.[1];
    };
    const url = (name: string) => new URL(env.get(name)!);
    expect(url('EVENTSTORE_URL').host).toBe('eventstore:2113');
    expect(url('DATABASE_URL').host).toBe('postgres:5432');
    expect(url('DATABASE_URL').username).toBe(setting('postgres', 'POSTGRES_USER'));
    expect(url('DATABASE_URL').password).toBe(setting('postgres', 'POSTGRES_PASSWORD'));
    expect(url('DATABASE_URL').pathname).toBe(`/${setting('postgres', 'POSTGRES_DB')}`);
    expect(url('S3_ENDPOINT').host).toBe('minio:9000');
    expect(env.get('S3_ACCESS_KEY')).toBe(setting('minio', 'MINIO_ROOT_USER'));
    expect(env.get('S3_SECRET_KEY')).toBe(setting('minio', 'MINIO_ROOT_PASSWORD'));
    expect(url('SMTP_URL').host).toBe('mailpit:1025');
    // As the image runs it (NODE_ENV=production), with the JWT_SECRET compose takes from the shell.
    expect(() =>
      loadConfig({ ...Object.fromEntries(env), NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(32) }),
    ).not.toThrow();
  });

  it('sets only variables the service reads', () => {
    const env = app.slice(app.indexOf('environment:'), app.indexOf('ports:'));
    const names = [...env.matchAll(/^\s+([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]!);
    expect(names.length).toBeGreaterThan(5);
    expect(names.filter((n) => !variablesRead().includes(n))).toEqual([]);
  });
});
