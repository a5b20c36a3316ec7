/**
 * Booking figures over real HTTP, in-process service (embedded PGlite, or PostgreSQL with DATABASE_URL):
 * availability read latency, booking latency and throughput on distinct slots of many coaches, and how
 * long a burst of clients racing for one slot takes to resolve. Usage: npm run bench:booking
 */
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../src/config';
import { signToken, type Role } from '../src/http/auth';
import { createSystem } from '../src/system';
import { Client } from 'pg';

const COACHES = 10;
const BOOKINGS = Number(process.env.BENCH_BOOKINGS ?? 200);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const BURST = 50;

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-'));
  // With DATABASE_URL, a database of its own on that server, dropped at the end.
  const server0 = process.env.DATABASE_URL;
  const dbName = `bench_${Date.now()}`;
  let databaseUrl: string | undefined;
  if (server0) {
    const admin = new Client({ connectionString: server0 });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    await admin.end();
    const u = new URL(server0);
    u.pathname = `/${dbName}`;
    databaseUrl = u.toString();
  }
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: databaseUrl,
    JWT_SECRET: 'bench',
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'error',
  });
  process.env.LOG_LEVEL ??= 'error';
  const system = await createSystem(config, { clock: () => new Date('2026-12-01T08:00:00Z') });
  const server = http.createServer(system.app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const token = (id: string, role: Role) => signToken(config, id, [role]);
  server.on('clientError', (err) => console.error('clientError', err.message));
  server.keepAliveTimeout = 65_000;
  const call = async (method: string, p: string, tok: string, body?: unknown) => {
    const res = await fetch(base + p, {
      method,
      headers: { authorization: `Bearer ${tok}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as { id?: string } };
  };
  const svc = token(randomUUID(), 'service');
  const admin = token(randomUUID(), 'admin');
  const hours = [{ start: '08:00', end: '20:00' }];
  const services: string[] = [];
  for (let i = 0; i < COACHES; i++) {
    const id = randomUUID();
    await call('PUT', `/api/v1/users/${id}`, svc, {
      firstName: 'C',
      lastName: `${i}`,
      email: `c${i}@x.io`,
      type: 'coach',
    });
    const ct = token(id, 'coach');
    await call('PUT', '/api/v1/coach/schedule', ct, {
      timezone: 'Europe/Berlin',
      weekly: { monday: hours, tuesday: hours, wednesday: hours, thursday: hours, friday: hours },
    });
    const s = await call('POST', '/api/v1/coach/services', ct, {
      name: 'S',
      price: 10,
      priceCurrency: 'EUR',
      sessionMinutesDuration: 30,
    });
    await call('POST', `/api/v1/admin/services/${s.body.id}/approve`, admin);
    services.push(s.body.id!);
  }
  const pct = (xs: number[], p: number) =>
    [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!.toFixed(1);

  const reads: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t0 = performance.now();
    await call(
      'GET',
      `/api/v1/service/${services[i % COACHES]}/availability?from_date=2026-12-02&to_date=2026-12-15`,
      svc,
    );
    reads.push(performance.now() - t0);
  }
  console.log(
    `[${server0 ? 'PostgreSQL' : 'PGlite'}] availability (2 weeks, 24 slots/day): p50 ${pct(reads, 0.5)} ms, p99 ${pct(reads, 0.99)} ms`,
  );

  // Distinct slots: coach i % COACHES, the n-th half hour of the weekdays from 2 December.
  const jobs = Array.from({ length: BOOKINGS }, (_, n) => {
    const coach = n % COACHES;
    const k = Math.floor(n / COACHES);
    const day = ['02', '03', '04', '07', '08'][Math.floor(k / 24)]!;
    const minutes = 8 * 60 + (k % 24) * 30;
    const slot = `2026-12-${day}T${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}:00`;
    return { serviceId: services[coach]!, slot };
  });
  const lat: number[] = [];
  let ok = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let job = jobs.shift(); job; job = jobs.shift()) {
        const s = performance.now();
        const res = await call('POST', `/api/v1/service/${job.serviceId}`, token(randomUUID(), 'client'), {
          slots: [job.slot],
        });
        lat.push(performance.now() - s);
        if (res.status === 200) ok++;
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  console.log(
    `booking, ${CONCURRENCY} concurrent clients over ${COACHES} coaches: ${(ok / secs).toFixed(1)} bookings/s ` +
      `(${ok}/${BOOKINGS} ok), p50 ${pct(lat, 0.5)} ms, p99 ${pct(lat, 0.99)} ms`,
  );

  const b0 = performance.now();
  const burst = await Promise.all(
    Array.from({ length: BURST }, () =>
      call('POST', `/api/v1/service/${services[0]}`, token(randomUUID(), 'client'), {
        slots: ['2026-12-09T10:00:00'],
      }),
    ),
  );
  console.log(
    `burst of ${BURST} clients on one slot: ${burst.filter((r) => r.status === 200).length} booked, ` +
      `${burst.filter((r) => r.status === 409).length} refused, all answered in ${(performance.now() - b0).toFixed(0)} ms`,
  );
  server.close();
  await system.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  if (server0) {
    const admin = new Client({ connectionString: server0 });
    await admin.connect();
    await admin.query(`DROP DATABASE ${dbName} WITH (FORCE)`);
    await admin.end();
  }
}

void main();
