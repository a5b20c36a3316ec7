/**
 * HTTP figures, side by side with bare peers, in one run. The service (bench/servers/service.ts) and a bare
 * Koa + pg server (bench/servers/bare.ts) run as child processes on the same PostgreSQL (DATABASE_URL),
 * and the same keep-alive HTTP client drives both at the same concurrency, in alternating rounds so both
 * see the same machine load:
 * - bookings (endpoint 8) by 16 clients over 20 coaches on distinct free slots, against one INSERT per POST;
 *   every booking must be accepted and the log must show no slot booked twice;
 * - availability of one week (6), coach profile (13) and service (7), against one SELECT by key;
 * - live projection lag (append acknowledged -> every read model applied it) at 200 bookings/s, open loop,
 *   and the service's RSS under that load;
 * - 50 clients racing for one slot.
 * Without DATABASE_URL the service runs on embedded PGlite, its figures printed without peers or bars.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { SERVICE_NODE_FLAGS } from '../src/nodeFlags';
import { loadConfig } from '../src/config';
import { signToken, type Role } from '../src/http/auth';
import {
  backendPids,
  cpuMs,
  machine,
  median,
  percentile,
  printTable,
  scratchDatabase,
  type Row,
} from './support';

const COACHES = 20;
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const BOOKINGS = Number(process.env.BENCH_BOOKINGS ?? 400);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const READ_SECONDS = Number(process.env.BENCH_READ_SECONDS ?? 2);
const LAG_RATE = 200;
const LAG_SECONDS = Number(process.env.BENCH_LAG_SECONDS ?? 5);
const SECRET = 'bench-secret';
const config = loadConfig({ JWT_SECRET: SECRET });
const token = (id: string, role: Role) => signToken(config, id, [role]);

interface Server {
  child: ChildProcess;
  port: number;
  ask<T>(cmd: string, extra?: Record<string, unknown>): Promise<T>;
  stop(): Promise<void>;
}

async function start(script: string, env: Record<string, string | undefined>): Promise<Server> {
  const child = fork(path.join(__dirname, 'servers', script), {
    env: { LOG_LEVEL: 'error', ...process.env, ...env, JWT_SECRET: SECRET },
    // BENCH_PROF=dir writes a CPU profile of each server there (open it in Chrome's DevTools).
    // Both servers run with the service's production flags (src/nodeFlags.ts), or with BENCH_NODE_ARGS
    // instead when it is set (e.g. heap settings, to compare their effect; BENCH_NODE_ARGS=' ' for none).
    execArgv: [
      ...(process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`] : []),
      ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? SERVICE_NODE_FLAGS),
    ],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve(m.port));
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return {
    child,
    port,
    ask: <T>(cmd: string, extra?: Record<string, unknown>) =>
      new Promise<T>((resolve) => {
        child.once('message', (m: T) => resolve(m));
        child.send({ cmd, ...extra });
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        // A server that does not stop within 10 s is killed: the bench must end, and says so.
        const timer = setTimeout(() => {
          console.warn(`${script} did not stop within 10 s; killed`);
          child.kill('SIGKILL');
        }, 10_000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.send({ cmd: 'stop' });
      }),
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** The one HTTP client both sides are driven with. */
function call(
  port: number,
  method: string,
  p: string,
  tok?: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: p,
        agent,
        headers: {
          ...(tok ? { authorization: `Bearer ${tok}` } : {}),
          ...(payload
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
            : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

interface Load {
  rate: number;
  p50: number;
  p99: number;
  statuses: Map<number, number>;
}

/** Closed loop: `concurrency` clients, each sending its next request when the last one answered. */
async function closedLoop(
  concurrency: number,
  next: () => (() => Promise<{ status: number }>) | null,
  seconds?: number,
): Promise<Load> {
  const lat: number[] = [];
  const statuses = new Map<number, number>();
  const t0 = performance.now();
  const until = seconds ? t0 + seconds * 1000 : Infinity;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let job = next(); job && performance.now() < until; job = next()) {
        const s = performance.now();
        const { status } = await job();
        lat.push(performance.now() - s);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  return { rate: lat.length / secs, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99), statuses };
}

/** The k-th distinct half-hour slot on weekdays from 2 December 2026, 08:00-20:00 (the coaches' hours). */
function slot(k: number): string {
  const perDay = 24;
  let day = Math.floor(k / perDay);
  const d = new Date(Date.UTC(2026, 11, 2));
  while (day > 0 || d.getUTCDay() === 0 || d.getUTCDay() === 6) {
    d.setUTCDate(d.getUTCDate() + 1);
    if (d.getUTCDay() !== 0 && d.getUTCDay() !== 6) day--;
  }
  const minutes = 8 * 60 + (k % perDay) * 30;
  const hh = String(Math.floor(minutes / 60)).padStart(2, '0');
  const mm = String(minutes % 60).padStart(2, '0');
  return `${d.toISOString().slice(0, 10)}T${hh}:${mm}:00`;
}

interface Marketplace {
  services: string[];
  coaches: string[];
}

async function seed(port: number): Promise<Marketplace> {
  const svc = token(randomUUID(), 'service');
  const admin = token(randomUUID(), 'admin');
  const hours = [{ start: '08:00', end: '20:00' }];
  const services: string[] = [];
  const coaches: string[] = [];
  for (let i = 0; i < COACHES; i++) {
    const id = randomUUID();
    const must = async (r: Promise<{ status: number; body: unknown }>) => {
      const res = await r;
      if (res.status !== 200) throw new Error(`seeding failed: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body as { id: string };
    };
    await must(
      call(port, 'PUT', `/api/v1/users/${id}`, svc, {
        firstName: 'Coach',
        lastName: `${i}`,
        email: `c${i}@bench.io`,
        type: 'coach',
      }),
    );
    const ct = token(id, 'coach');
    await must(
      call(port, 'PUT', '/api/v1/coach/schedule', ct, {
        timezone: 'Europe/Berlin',
        weekly: { monday: hours, tuesday: hours, wednesday: hours, thursday: hours, friday: hours },
      }),
    );
    const s = await must(
      call(port, 'POST', '/api/v1/coach/services', ct, {
        name: `Service ${i}`,
        price: 10 + i,
        priceCurrency: 'EUR',
        sessionMinutesDuration: 30,
      }),
    );
    await must(call(port, 'POST', `/api/v1/admin/services/${s.id}/approve`, admin));
    services.push(s.id);
    coaches.push(id);
  }
  return { services, coaches };
}

/** Booking jobs on distinct slots: the n-th goes to coach n % 20, at that coach's next unused slot. */
function bookingJobs(port: number, m: Marketplace, count: number, firstSlot: { k: number }) {
  const jobs = Array.from({ length: count }, (_, n) => {
    const coach = n % COACHES;
    const k = firstSlot.k + Math.floor(n / COACHES);
    const tok = token(randomUUID(), 'client'); // signed before the clock starts
    return () => call(port, 'POST', `/api/v1/service/${m.services[coach]}`, tok, { slots: [slot(k)] });
  });
  firstSlot.k += Math.ceil(count / COACHES);
  return jobs;
}

function bareJobs(port: number, count: number, round: number) {
  return Array.from({ length: count }, (_, n) => {
    const client = randomUUID();
    return () =>
      call(port, 'POST', `/book/coach-${n % COACHES}`, undefined, {
        slots: [`${round}-${slot(Math.floor(n / COACHES))}`],
        client,
      });
  });
}

const fmtRate = (xs: number[]) => `${median(xs).toFixed(0)}/s`;

/**
 * CPU a server and its database connections spend, in ms, from a snapshot to now: the cost of a request
 * whatever else the machine is doing (rates fall under load; CPU per request much less).
 */
async function cpuMeter(pid: number, url: string) {
  const node = cpuMs([pid]);
  const pg = new Map((await backendPids(url)).map((p) => [p, cpuMs([p])]));
  return async () => {
    let pgNow = 0;
    for (const p of new Set([...pg.keys(), ...(await backendPids(url))])) {
      const now = cpuMs([p]);
      if (now > 0) pgNow += now - (pg.get(p) ?? 0); // a connection closed meanwhile is not counted
    }
    return { node: cpuMs([pid]) - node, pg: pgNow };
  };
}
const ok = (l: Load) => l.statuses.get(200) ?? 0;

/** CPU per request in µs, of the HTTP client (this process), the server and its PostgreSQL connections. */
interface ReadCpu {
  client: number;
  server: number;
  pg: number;
}

/** A closed-loop read run, with the CPU each side spent per request. */
async function meteredReads(server: Server, url: string, job: () => () => Promise<{ status: number }>) {
  const meter = await cpuMeter(server.child.pid!, url);
  const client0 = process.cpuUsage();
  const t0 = performance.now();
  const load = await closedLoop(CONCURRENCY, job, READ_SECONDS);
  const n = (load.rate * (performance.now() - t0)) / 1000;
  const client = process.cpuUsage(client0);
  const { node, pg } = await meter();
  const cpu: ReadCpu = {
    client: (client.user + client.system) / n,
    server: (node * 1000) / n,
    pg: (pg * 1000) / n,
  };
  return { rate: load.rate, cpu };
}

const fmtReadCpu = (xs: ReadCpu[]) => {
  const m = (k: keyof ReadCpu) => median(xs.map((x) => x[k])).toFixed(0);
  return `client ${m('client')} + server ${m('server')} + PostgreSQL ${m('pg')} µs`;
};

/** What the process managers have done so far: bookings, in-app notices and e-mails sent, from the log. */
async function effects(url: string): Promise<string> {
  const c = new Client({ connectionString: url });
  await c.connect();
  const res = await c.query<{ type: string; n: string }>(
    `SELECT type, count(*) AS n FROM es_events WHERE type IN ('SessionsBooked', 'NotificationCreated', 'DeliverySent')
     GROUP BY type`,
  );
  await c.end();
  const n = Object.fromEntries(res.rows.map((r) => [r.type, r.n]));
  return `${n.SessionsBooked ?? 0} bookings, ${n.NotificationCreated ?? 0} notifications, ${n.DeliverySent ?? 0} e-mails sent`;
}

/** Two slots of one coach overlapping in the log's holds: a double booking. */
async function doubleBookings(url: string): Promise<number> {
  const c = new Client({ connectionString: url });
  await c.connect();
  const res = await c.query<{ data: { coachId: string; sessions: { startsAt: string; endsAt: string }[] } }>(
    "SELECT data FROM es_events WHERE type = 'SlotsReserved'",
  );
  await c.end();
  const byCoach = new Map<string, [number, number][]>();
  for (const r of res.rows)
    for (const s of r.data.sessions) {
      const list = byCoach.get(r.data.coachId) ?? [];
      list.push([Date.parse(s.startsAt), Date.parse(s.endsAt)]);
      byCoach.set(r.data.coachId, list);
    }
  let doubles = 0;
  for (const list of byCoach.values()) {
    list.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < list.length; i++) if (list[i]![0] < list[i - 1]![1]) doubles++;
  }
  return doubles;
}

/** Open loop: `rate` bookings a second for `seconds`, whatever the answers' pace; then the lags measured. */
async function lagUnderLoad(service: Server, m: Marketplace, slots: { k: number }) {
  const jobs = bookingJobs(service.port, m, LAG_RATE * LAG_SECONDS, slots);
  await service.ask('lag'); // forget lags of earlier phases
  const t0 = performance.now();
  const pending: Promise<{ status: number }>[] = [];
  for (let i = 0; i < jobs.length; i++) {
    const due = t0 + (i * 1000) / LAG_RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(jobs[i]!());
  }
  const achieved = jobs.length / ((performance.now() - t0) / 1000); // the rate requests went out at
  const answers = await Promise.all(pending);
  await new Promise((r) => setTimeout(r, 500)); // the last lags land
  const { lags, rss, heapUsed, heapTotal, external, spaces, loop, gc } = await service.ask<{
    lags: number[];
    rss: number;
    heapUsed: number;
    heapTotal: number;
    external: number;
    spaces: Record<string, number>;
    loop: { p99: number; max: number };
    gc: { count: number; total: number; max: number };
  }>('lag');
  // What the lag's tail and the RSS are made of.
  console.log(
    `lag phase: lags p90 ${percentile(lags, 0.9).toFixed(1)} p95 ${percentile(lags, 0.95).toFixed(1)} max ${Math.max(...lags).toFixed(1)} ms; ` +
      `event loop delay p99 ${loop.p99.toFixed(1)} max ${loop.max.toFixed(1)} ms; ` +
      `GC ${gc.count} pauses, ${gc.total.toFixed(0)} ms in all, longest ${gc.max.toFixed(1)} ms`,
  );
  console.log(
    `memory: external ${(external / 2 ** 20).toFixed(0)} MB; heap spaces (MB) ${JSON.stringify(spaces)}`,
  );
  return {
    achieved,
    accepted: answers.filter((a) => a.status === 200).length,
    sent: jobs.length,
    p50: percentile(lags, 0.5),
    p99: percentile(lags, 0.99),
    rssMb: rss / 2 ** 20,
    heapMb: `${(heapUsed / 2 ** 20).toFixed(0)} of ${(heapTotal / 2 ** 20).toFixed(0)}`,
  };
}

async function burst(port: number, m: Marketplace) {
  const t0 = performance.now();
  const tokens = Array.from({ length: 50 }, () => token(randomUUID(), 'client'));
  const answers = await Promise.all(
    tokens.map((tok) =>
      call(port, 'POST', `/api/v1/service/${m.services[0]}`, tok, { slots: ['2027-01-04T10:00:00'] }),
    ),
  );
  return {
    booked: answers.filter((a) => a.status === 200).length,
    refused: answers.filter((a) => a.status === 409).length,
    ms: performance.now() - t0,
  };
}

function readJobs(port: number, m: Marketplace) {
  let n = 0;
  const pick = () => n++ % COACHES;
  const viewer = token(randomUUID(), 'client');
  return {
    availability: () => () =>
      call(
        port,
        'GET',
        `/api/v1/service/${m.services[pick()]}/availability?from_date=2026-12-07&to_date=2026-12-13`,
        viewer,
      ),
    profile: () => () => call(port, 'GET', `/api/v1/coach/${m.coaches[pick()]}/profile`, viewer),
    service: () => () => call(port, 'GET', `/api/v1/service/${m.services[pick()]}`, viewer),
  };
}

async function postgres(server: string): Promise<Row[]> {
  const svcDb = await scratchDatabase(server, 'bench_svc');
  const bareDb = await scratchDatabase(server, 'bench_bare');
  const service = await start('service.js', { DATABASE_URL: svcDb.url, EVENTSTORE_URL: '' });
  const bare = await start('bare.js', { DATABASE_URL: bareDb.url });
  try {
    const m = await seed(service.port);
    const slots = { k: 0 };
    const reads = readJobs(service.port, m);
    const bareRead = () => {
      let n = 0;
      return () => () => call(bare.port, 'GET', `/item/item-${n++ % 1000}`);
    };
    // The bare server keeps the service's own availability answers, to serve bodies of the same size.
    const answers = await Promise.all(m.services.map(() => reads.availability()()));
    const answerBytes = median(answers.map((a) => JSON.stringify(a.body).length));
    await bare.ask('answers', { bodies: answers.map((a) => a.body) });
    const bareAnswer = () => {
      let n = 0;
      return () => () => call(bare.port, 'GET', `/answer/answer-${n++ % COACHES}`);
    };
    // Warm-up both (JIT, pools, caches).
    await closedLoop(CONCURRENCY, bareAnswer(), 0.5);
    await closedLoop(CONCURRENCY, reads.availability, 0.5);
    await closedLoop(CONCURRENCY, reads.profile, 0.5);
    await closedLoop(CONCURRENCY, reads.service, 0.5);
    await closedLoop(CONCURRENCY, bareRead(), 0.5);
    const w = bookingJobs(service.port, m, 40, slots);
    await closedLoop(CONCURRENCY, () => w.shift() ?? null);
    const bw = bareJobs(bare.port, 40, -1);
    await closedLoop(CONCURRENCY, () => bw.shift() ?? null);

    if (process.env.BENCH_COUNT_QUERIES) {
      await service.ask('queries');
      const jobs = bookingJobs(service.port, m, 100, slots);
      await closedLoop(CONCURRENCY, () => jobs.shift() ?? null);
      await new Promise((r) => setTimeout(r, 2000));
      const { queries } = await service.ask<{ queries: Record<string, number> }>('queries');
      console.log(`after 2 s: ${await effects(svcDb.url)}`);
      console.log('statements per booking (100 bookings):');
      for (const [q, n] of Object.entries(queries).sort((a, b) => b[1] - a[1]))
        console.log(`${(n / 100).toFixed(2).padStart(7)}  ${q}`);
    }
    const r = {
      book: [] as number[],
      bareBook: [] as number[],
      avail: [] as number[],
      profile: [] as number[],
      service: [] as number[],
      bareSelect: [] as number[],
      bareAnswer: [] as number[],
      availCpu: [] as ReadCpu[],
      selectCpu: [] as ReadCpu[],
      answerCpu: [] as ReadCpu[],
      bookP99: [] as number[],
      cpu: [] as { node: number; pg: number }[],
      bareCpu: [] as { node: number; pg: number }[],
      settle: [] as number[],
    };
    let accepted = 0;
    let attempted = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const jobs = bookingJobs(service.port, m, BOOKINGS, slots);
      const meter = await cpuMeter(service.child.pid!, svcDb.url);
      const b = await closedLoop(CONCURRENCY, () => jobs.shift() ?? null);
      // The CPU of a booking includes its notices and e-mails: measured until the process managers are done.
      r.settle.push((await service.ask<{ settledMs: number }>('settle')).settledMs);
      r.cpu.push(await meter());
      r.book.push(b.rate);
      r.bookP99.push(b.p99);
      accepted += ok(b);
      attempted += BOOKINGS;
      if (ok(b) !== BOOKINGS) console.log('booking answers:', Object.fromEntries(b.statuses));
      const bj = bareJobs(bare.port, BOOKINGS, round);
      const bareMeter = await cpuMeter(bare.child.pid!, bareDb.url);
      r.bareBook.push((await closedLoop(CONCURRENCY, () => bj.shift() ?? null)).rate);
      r.bareCpu.push(await bareMeter());
      const avail = await meteredReads(service, svcDb.url, reads.availability);
      const select = await meteredReads(bare, bareDb.url, bareRead());
      const answer = await meteredReads(bare, bareDb.url, bareAnswer());
      r.avail.push(avail.rate);
      r.bareSelect.push(select.rate);
      r.bareAnswer.push(answer.rate);
      r.availCpu.push(avail.cpu);
      r.selectCpu.push(select.cpu);
      r.answerCpu.push(answer.cpu);
      r.profile.push((await closedLoop(CONCURRENCY, reads.profile, READ_SECONDS)).rate);
      r.service.push((await closedLoop(CONCURRENCY, reads.service, READ_SECONDS)).rate);
    }
    const lag = await lagUnderLoad(service, m, slots);
    const race = await burst(service.port, m);
    const doubles = await doubleBookings(svcDb.url);
    console.log(
      `rounds: bookings ${r.book.map((x) => x.toFixed(0)).join(', ')} vs insert ${r.bareBook.map((x) => x.toFixed(0)).join(', ')}; ` +
        `availability ${r.avail.map((x) => x.toFixed(0)).join(', ')}, profile ${r.profile.map((x) => x.toFixed(0)).join(', ')}, ` +
        `service ${r.service.map((x) => x.toFixed(0)).join(', ')} vs select ${r.bareSelect.map((x) => x.toFixed(0)).join(', ')}; ` +
        `select of an answer as large ${r.bareAnswer.map((x) => x.toFixed(0)).join(', ')}`,
    );
    const sel = median(r.bareSelect);
    const perBooking = (xs: { node: number; pg: number }[]) => {
      const node = median(xs.map((x) => x.node)) / BOOKINGS;
      const pg = median(xs.map((x) => x.pg)) / BOOKINGS;
      return `${(node + pg).toFixed(2)} ms (Node ${node.toFixed(2)} + PostgreSQL ${pg.toFixed(2)})`;
    };
    return [
      {
        figure: `bookings (8), ${CONCURRENCY} clients over ${COACHES} coaches, distinct free slots: ${accepted}/${attempted} accepted, ${doubles} double-booked; p99 ${median(r.bookP99).toFixed(0)} ms`,
        project: fmtRate(r.book),
        peer: `Koa + pg INSERT ${fmtRate(r.bareBook)}`,
        ratio: median(r.book) / median(r.bareBook),
        bar: 0.5,
      },
      {
        figure: `CPU per booking (the service process and its database connections, until its process managers were done, ${median(r.settle).toFixed(0)} ms after the last reply; less load-sensitive)`,
        project: perBooking(r.cpu),
        peer: `per INSERT ${perBooking(r.bareCpu)}`,
      },
      {
        figure: 'GET availability (6), one week',
        project: fmtRate(r.avail),
        peer: `Koa + pg SELECT ${fmtRate(r.bareSelect)}`,
        ratio: median(r.avail) / sel,
        bar: 0.7,
      },
      {
        figure: `CPU per availability answer (${(answerBytes / 1024).toFixed(1)} KB of JSON, which the client parses)`,
        project: fmtReadCpu(r.availCpu),
        peer: `per SELECT ${fmtReadCpu(r.selectCpu)}`,
      },
      {
        figure: `GET availability beside a bare SELECT whose answer is as large (the service's own answers, from a jsonb row); no bar`,
        project: fmtRate(r.avail),
        peer: `Koa + pg SELECT ${fmtRate(r.bareAnswer)} (${fmtReadCpu(r.answerCpu)})`,
        ratio: median(r.avail) / median(r.bareAnswer),
      },
      {
        figure: 'GET coach profile (13)',
        project: fmtRate(r.profile),
        peer: 'same',
        ratio: median(r.profile) / sel,
        bar: 0.7,
      },
      {
        figure: 'GET service (7)',
        project: fmtRate(r.service),
        peer: 'same',
        ratio: median(r.service) / sel,
        bar: 0.7,
      },
      {
        figure: `live projection lag at ${LAG_RATE} bookings/s offered (${lag.achieved.toFixed(0)}/s sent, ${lag.accepted}/${lag.sent} accepted): p50 / p99 (bar p99 ≤ 50 ms)`,
        project: `${lag.p50.toFixed(1)} / ${lag.p99.toFixed(1)} ms ${lag.p99 <= 50 ? 'met' : 'NOT met'}`,
        peer: '',
      },
      {
        figure: 'service RSS under that load (bar ≤ 250 MB)',
        project: `${lag.rssMb.toFixed(0)} MB ${lag.rssMb <= 250 ? 'met' : 'NOT met'} (JS heap ${lag.heapMb} MB)`,
        peer: '',
      },
      {
        figure: '50 clients racing for one slot',
        project: `${race.booked} booked, ${race.refused} refused, ${race.ms.toFixed(0)} ms`,
        peer: '',
      },
    ];
  } finally {
    await service.stop();
    await bare.stop();
    await svcDb.drop();
    await bareDb.drop();
  }
}

async function pglite(): Promise<Row[]> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-'));
  const service = await start('service.js', { DATABASE_URL: '', EVENTSTORE_URL: '', DATA_DIR: dataDir });
  try {
    const m = await seed(service.port);
    const slots = { k: 0 };
    const reads = readJobs(service.port, m);
    const jobs = bookingJobs(service.port, m, 100, slots);
    const b = await closedLoop(CONCURRENCY, () => jobs.shift() ?? null);
    const a = await closedLoop(CONCURRENCY, reads.availability, READ_SECONDS);
    const p = await closedLoop(CONCURRENCY, reads.profile, READ_SECONDS);
    const s = await closedLoop(CONCURRENCY, reads.service, READ_SECONDS);
    return [
      { figure: `PGlite bookings (${ok(b)}/100 accepted)`, project: `${b.rate.toFixed(0)}/s`, peer: '' },
      { figure: 'PGlite GET availability, one week', project: `${a.rate.toFixed(0)}/s`, peer: '' },
      { figure: 'PGlite GET coach profile', project: `${p.rate.toFixed(0)}/s`, peer: '' },
      { figure: 'PGlite GET service', project: `${s.rate.toFixed(0)}/s`, peer: '' },
    ];
  } finally {
    await service.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  console.log(`HTTP benchmark: ${machine()}; ${CONCURRENCY} concurrent clients, medians of ${ROUNDS} rounds`);
  const server = process.env.DATABASE_URL;
  const rows: Row[] = [];
  if (server) rows.push(...(await postgres(server)));
  else console.log('PostgreSQL and the bare peers: skipped (set DATABASE_URL to include them)');
  if (process.env.BENCH_PGLITE !== '0') rows.push(...(await pglite()));
  printTable('HTTP (PGlite carries no bar)', rows);
  agent.destroy();
}

void main();
