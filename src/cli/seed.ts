import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DateTime } from 'luxon';
import { loadConfig } from '../config';
import { signToken, type Role } from '../http/auth';
import { createSystem } from '../system';
import { ensureDataDir } from '../dataDir';
import { CLIENTS, COACHES, DEMO_IDS, weekly, type DemoAddress } from './demoData';

export { DEMO_IDS };

/**
 * npm run seed: demo coaches, services, schedules and clients, written through the public HTTP commands
 * (the same ones the API offers), so what it makes is what a user could have made. Safe to run twice:
 * the users have fixed ids (their upsert is idempotent), addresses and services are looked up by name
 * before they are created, and a schedule is replaced by the same schedule.
 */

export type Signer = (userId: string, roles: Role[]) => string;

export interface SeedOptions {
  /** Where the service answers, e.g. http://127.0.0.1:3000. */
  baseUrl: string;
  /** Mints bearer tokens the service accepts. */
  sign: Signer;
  /** The address printed in the example commands (defaults to baseUrl). */
  publicUrl?: string;
  now?: Date;
}

export interface SeededUser {
  id: string;
  name: string;
  role: 'coach' | 'client' | 'admin';
  token: string;
}
export interface SeededService {
  id: string;
  coachId: string;
  name: string;
  status: string;
  groupSession: boolean;
  numberOfSessions: number;
}
export interface SeedResult {
  users: SeededUser[];
  services: SeededService[];
  /** Services created by this run (0 on a second run). */
  createdServices: number;
  examples: string[];
}

/** Tokens printed for people to use: valid 30 days. */
export const DEMO_TOKEN_SECONDS = 30 * 24 * 3600;

export async function seedDemo(opts: SeedOptions): Promise<SeedResult> {
  const { baseUrl, sign } = opts;
  const publicUrl = opts.publicUrl ?? baseUrl;
  const now = opts.now ?? new Date();
  const serviceToken = sign(DEMO_IDS.service, ['service']);
  const adminToken = sign(DEMO_IDS.admin, ['admin']);

  async function call<T = unknown>(method: string, path: string, token: string, body?: unknown): Promise<T> {
    const res = await fetch(baseUrl + path, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) {
      const hint = res.status === 401 ? ' (is JWT_SECRET the same as the running server?)' : '';
      throw new Error(`${method} ${path}: ${res.status} ${text}${hint}`);
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }

  async function ensureUser(id: string, type: 'coach' | 'client', profile: Record<string, unknown>) {
    await call('PUT', `/api/v1/users/${id}`, serviceToken, { ...profile, type });
  }
  async function ensureAddress(token: string, a: DemoAddress) {
    const list = await call<{ name: string; address: string }[]>('GET', '/api/v1/nav/addreses', token);
    if (list.some((x) => x.name === a.name && x.address === a.address)) return;
    await call('POST', '/api/v1/nav/addreses', token, { ...a, isDefault: true });
  }

  const users: SeededUser[] = [];
  const services: SeededService[] = [];
  let createdServices = 0;

  for (const coach of COACHES) {
    const token = sign(coach.id, ['coach']);
    await ensureUser(coach.id, 'coach', coach.profile);
    await ensureAddress(token, coach.address);
    await call('PUT', '/api/v1/coach/schedule', token, {
      timezone: coach.profile.timezone,
      weekly: coach.weekly ?? weekly,
      overrides: {},
    });
    // The coach's own token sees its services in review too, so a half-finished earlier run is resumed.
    const existing = await call<SeededService[]>('GET', `/api/v1/coach/${coach.id}/services`, token);
    for (const wanted of coach.services) {
      let s = existing.find((x) => x.name === wanted.name);
      if (!s) {
        s = await call<SeededService>('POST', '/api/v1/coach/services', token, wanted);
        createdServices++;
      }
      if (s.status !== 'approved')
        s = await call<SeededService>('POST', `/api/v1/admin/services/${s.id}/approve`, adminToken);
      services.push({
        id: s.id,
        coachId: coach.id,
        name: s.name,
        status: s.status,
        groupSession: s.groupSession,
        numberOfSessions: s.numberOfSessions,
      });
    }
    users.push({
      id: coach.id,
      name: `${coach.profile.firstName} ${coach.profile.lastName}`,
      role: 'coach',
      token: token,
    });
  }
  for (const client of CLIENTS) {
    const token = sign(client.id, ['client']);
    await ensureUser(client.id, 'client', client.profile);
    await ensureAddress(token, client.address);
    users.push({
      id: client.id,
      name: `${client.profile.firstName} ${client.profile.lastName}`,
      role: 'client',
      token,
    });
  }
  users.push({ id: DEMO_IDS.admin, name: 'Demo admin', role: 'admin', token: adminToken });

  // Examples: the first coach's package, a week of its availability, and its first free slot.
  const coach = COACHES[0]!;
  const pkg = services.find((s) => s.coachId === coach.id && !s.groupSession)!;
  const from = DateTime.fromJSDate(now, { zone: coach.profile.timezone }).toISODate()!;
  const to = DateTime.fromISO(from).plus({ days: 6 }).toISODate()!;
  const availability = await call<{ slots: { slot: string }[] }>(
    'GET',
    `/api/v1/service/${pkg.id}/availability?from_date=${from}&to_date=${to}`,
    serviceToken,
  );
  const slot = availability.slots[0]?.slot ?? `${to}T10:00:00`;
  const clientToken = users.find((u) => u.id === CLIENTS[0]!.id)!.token;
  const examples = [
    `curl -s '${publicUrl}/api/v1/coaches?serviceType=tennis'`,
    `curl -s '${publicUrl}/api/v1/service/${pkg.id}/availability?from_date=${from}&to_date=${to}'`,
    `curl -s -X POST ${publicUrl}/api/v1/service/${pkg.id} -H 'Authorization: Bearer ${clientToken}' ` +
      `-H 'Content-Type: application/json' -d '{"slots":["${slot}"],"method":"card"}'`,
    `curl -s ${publicUrl}/api/v1/coach/${coach.id}/profile`,
  ];
  return { users, services, createdServices, examples };
}

export function printSummary(result: SeedResult, out: (line: string) => void = console.log): void {
  out('Demo data is in place. Users (tokens valid 30 days, or JWT_MAX_TTL_SECONDS when shorter):');
  for (const u of result.users) {
    out(`  ${u.role.padEnd(6)} ${u.name.padEnd(16)} ${u.id}`);
    out(`         token: ${u.token}`);
  }
  out(`Services (${result.createdServices} created by this run):`);
  for (const s of result.services) {
    const kind = s.groupSession
      ? 'group'
      : s.numberOfSessions === 1
        ? 'one session'
        : `${s.numberOfSessions} sessions`;
    out(`  ${s.id}  ${s.name} (${kind}, ${s.status}), coach ${s.coachId}`);
  }
  out('Try:');
  for (const e of result.examples) out(`  ${e}`);
}

/** Does a server answer at this address? Any HTTP answer counts (a degraded one holds the data too). */
async function answers(baseUrl: string): Promise<boolean> {
  try {
    await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2000) });
    return true;
  } catch {
    return false;
  }
}

async function main() {
  if (fs.existsSync('.env')) process.loadEnvFile('.env');
  const config = loadConfig();
  // With JWT_PUBLIC_KEY the service takes RS256 tokens only, also with a JWT_SECRET beside it (for webhooks).
  if (config.jwt.publicKey || !config.jwt.secret)
    throw new Error('JWT_PUBLIC_KEY is set: the seed can only sign with JWT_SECRET');
  const sign: Signer = (userId, roles) => signToken(config, userId, roles, { expiresIn: DEMO_TOKEN_SECONDS });
  const url = (process.env.SEED_URL || `http://localhost:${config.port}`).replace(/\/+$/, '');

  if (await answers(url)) {
    console.log(`Seeding the server at ${url}`);
    printSummary(await seedDemo({ baseUrl: url, sign }));
    return;
  }
  if (process.env.SEED_URL) throw new Error(`SEED_URL=${url} does not answer GET /healthz`);

  // No server: open the instance in-process (PGlite's data directory allows one process at a time).
  console.log(
    `No server at ${url}; seeding in-process (${config.databaseUrl ? 'DATABASE_URL' : config.dataDir})`,
  );
  // The in-process service would log every seed request; keep the summary readable.
  process.env.LOG_LEVEL ??= 'warn';
  ensureDataDir(config.dataDir);
  const system = await createSystem(config);
  const server = http.createServer(system.app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    printSummary(await seedDemo({ baseUrl, sign, publicUrl: url }));
    console.log(`Start the service with "npm start" to use them at ${url}.`);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
    server.closeAllConnections();
    await system.close();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(`seed failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
