import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { BookingEvent } from '../../commands/booking/events';
import { deliveryStream } from '../../commands/delivery/events';
import { NOTIFYING_SESSION_EVENTS, sessionNotices } from '../../commands/notifications/sessionNotices';
import { loadConfig } from '../../src/config';
import { migrations } from '../../src/db/migrations';
import { LEASES } from '../../src/leases';
import { signToken, type Role } from '../../src/http/auth';
import { marketplace } from '../support/marketplace';
import { freshPostgres, type TestDatabase } from '../support/services';
import { startSmtpServer } from '../support/smtp';
import { testEventStoreOnEsdb, type TestSystem } from '../support/system';
import { eventStoreDbPlan, startEventStoreDb, type RunningEventStoreDb } from '../support/eventstoredb';
import { createEsdbEventStore } from '../../src/eventstore/esdb';
import { START, type EventStore, type Position } from '../../src/eventstore/types';

/**
 * Two service instances as two OS processes on one PostgreSQL (read models, and events unless the run is on
 * EventStoreDB: TEST_EVENTSTORE=esdb puts them on one EventStoreDB, a double or a container, as the full
 * stack of docker-compose.yml does), commands spread over both, then one killed with SIGKILL mid-run and later started again. Every effect must happen once:
 * sessions and payment per booking, notification per party, e-mail per cause, expiry per unpaid booking;
 * no projection fails; the survivor owns every process manager within 10 s of the kill.
 */
const config = loadConfig({ JWT_SECRET: 'test-secret' });
const token = (userId: string, roles: Role[] = ['client']) => signToken(config, userId, roles);

interface Instance {
  child: ChildProcess;
  baseUrl: string;
  id: string;
  output: string[];
  advance(ms: number): Promise<void>;
}

async function startInstance(env: NodeJS.ProcessEnv): Promise<Instance> {
  const output: string[] = [];
  const child = fork(path.join(__dirname, '../support/instance.ts'), [], {
    execArgv: ['-r', path.join(__dirname, '../support/register-ts.cjs')],
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  child.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
  const ready = await new Promise<{ port: number; instance: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`instance did not start:\n${output.join('')}`)), 60_000);
    child.on('message', (m: { type: string; port: number; instance: string }) => {
      if (m.type !== 'ready') return;
      clearTimeout(timer);
      resolve(m);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`instance exited with ${code}:\n${output.join('')}`));
    });
  });
  let seq = 0;
  return {
    child,
    baseUrl: `http://127.0.0.1:${ready.port}`,
    id: ready.instance,
    output,
    advance: (ms) =>
      new Promise<void>((resolve) => {
        const id = ++seq;
        const onMessage = (m: { type: string; id: number }) => {
          if (m.type !== 'advanced' || m.id !== id) return;
          child.off('message', onMessage);
          resolve();
        };
        child.on('message', onMessage);
        child.send({ type: 'advance', ms, id });
      }),
  };
}

async function call(
  instance: Instance,
  method: string,
  urlPath: string,
  opts: { token?: string; body?: unknown } = {},
): Promise<{ status: number; body: any }> {
  const res = await fetch(instance.baseUrl + urlPath, {
    method,
    headers: {
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
    },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Polls until `done` holds; the bound is generous (the suite runs on a shared machine), not a claim. */
async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms: number): Promise<T> {
  const end = Date.now() + ms;
  let v = await read();
  while (!done(v) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    v = await read();
  }
  return v;
}

/** A weekday-independent local slot `days` from now at `hour`:00 (the coach is open every day). */
const slotAt = (days: number, hour: number) =>
  `${new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10)}T${String(hour).padStart(2, '0')}:00:00`;

const describePg = process.env.DATABASE_URL ? describe : describe.skip;
describePg(
  'two service instances on one database (skipped without DATABASE_URL: PGlite is one process)',
  () => {
    let database: TestDatabase;
    let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
    let dataDir: string;
    const running: Instance[] = [];
    let env: NodeJS.ProcessEnv;
    /** The events, when they are on EventStoreDB (a fresh one: every event in it is this test's). */
    let esdb: RunningEventStoreDb | undefined;
    let log: EventStore | undefined;

    beforeAll(async () => {
      database = await freshPostgres(process.env.DATABASE_URL!);
      smtp = await startSmtpServer();
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coaching-two-'));
      // A server named by EVENTSTORE_URL is shared with other tests (their events would be counted here).
      if (testEventStoreOnEsdb() && eventStoreDbPlan().kind !== 'url') {
        esdb = await startEventStoreDb();
        log = createEsdbEventStore(esdb.url);
      }
      env = {
        PATH: process.env.PATH,
        DATABASE_URL: database.url,
        SMTP_URL: smtp.url,
        JWT_SECRET: 'test-secret',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
        // A claim left `sending` by the killed instance is taken over after this (the e-mail ledger's lease);
        // long enough that a live sender on a loaded machine rarely stalls past it.
        MAIL_LEASE_MS: '4000',
        MAIL_RETRY_INTERVAL_MS: '1000',
        ...(esdb ? { EVENTSTORE_URL: esdb.url } : {}),
      };
    });
    afterAll(async () => {
      for (const i of running) if (i.child.exitCode === null) i.child.kill('SIGKILL');
      await log?.close();
      await esdb?.stop();
      await smtp.close();
      await database.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    const health = async (i: Instance) => (await call(i, 'GET', '/healthz')).body;
    const owners = async (i: Instance) =>
      ((await health(i)).leases as { name: string; owner: string }[]).map((l) => l.owner);
    interface Logged {
      id: string;
      type: string;
      stream_name: string;
      data: any;
      position: Position;
    }
    /** Every event of the log, in order: from PostgreSQL's `es_events`, or read from EventStoreDB. */
    const logged = async (): Promise<Logged[]> => {
      if (!log) {
        const { rows } = await database.db.query<{
          id: string;
          type: string;
          stream_name: string;
          data: any;
          p: string;
        }>(
          'SELECT event_id::text AS id, type, stream_name, data, position::text AS p FROM es_events ORDER BY position',
        );
        return rows.map(({ p, ...e }) => ({ ...e, position: { commit: BigInt(p), prepare: BigInt(p) } }));
      }
      const out: Logged[] = [];
      for (let from = START; ;) {
        const page = await log.readAll(from, 1000);
        for (const e of page)
          out.push({ id: e.id, type: e.type, stream_name: e.streamName, data: e.data, position: e.position });
        if (page.length < 1000) return out;
        from = page[page.length - 1]!.position;
      }
    };

    it('runs every effect exactly once when one of two instances is killed mid-run', async () => {
      const a = await startInstance({ ...env, INSTANCE_ID: 'a' });
      running.push(a);
      const b = await startInstance({ ...env, INSTANCE_ID: 'b' });
      running.push(b);
      try {
        expect((await health(b)).eventStore.kind).toBe(esdb ? 'esdb' : 'postgres');
        // The first instance took every lease; the second shows the same owners.
        expect(new Set(await owners(b))).toEqual(new Set([a.id]));

        // Commands alternate between the two instances.
        let turn = 0;
        const both = [a, b];
        const alive = () => both.filter((i) => i.child.exitCode === null && i.child.signalCode === null);
        const next = () => {
          const live = alive();
          return live[turn++ % live.length]!;
        };
        const t = {
          token,
          request: (method: string, p: string, opts?: { token?: string; body?: unknown }) =>
            call(next(), method, p, opts),
        } as unknown as TestSystem;
        const m = marketplace(t);
        const allDay = [{ start: '09:00', end: '17:00' }];
        const days = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
        // A coach per booking: the bookings race each other over the two instances, not over one calendar.
        const offers: { coach: { id: string; token: string }; serviceId: string }[] = [];
        for (let i = 0; i < 12; i++) {
          const coach = await m.coach({ weekly: Object.fromEntries(days.map((d) => [d, allDay])) });
          offers.push({ coach, serviceId: await m.offering(coach) });
        }
        const clients = await Promise.all(Array.from({ length: 12 }, () => m.client()));
        const slot = slotAt(3, 10);
        const book = (i: number, on: Instance) =>
          call(on, 'POST', `/api/v1/service/${offers[i]!.serviceId}`, {
            token: clients[i]!.token,
            body: { slots: [slot] },
          });
        const service = token(randomUUID(), ['service']);
        const pay = async (paymentId: string, on: () => Instance) => {
          for (const status of ['checkout', 'received'])
            expect(
              (
                await call(on(), 'POST', `/api/v1/payment/private/payment/${paymentId}/update`, {
                  token: service,
                  body: { status },
                })
              ).status,
            ).toBe(200);
        };
        const approve = async (i: number, sessionId: string, on: Instance) =>
          expect(
            (
              await call(on, 'POST', `/api/v1/session/${sessionId}/approve`, {
                token: offers[i]!.coach.token,
              })
            ).status,
          ).toBe(200);
        const verification = (i: number, on: Instance) =>
          call(on, 'POST', `/api/v1/notification/private/email/${clients[i]!.id}/verification`, {
            token: service,
            body: { code: `code-${i}` },
          });

        // Phase 1, both alive: six bookings, two approved, two paid, four e-mails requested.
        const first = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => book(i, both[i % 2]!)));
        expect(first.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
        const sessionOf = (r: { body: any }) => r.body[0] as { id: string; paymentId?: string };
        await approve(0, sessionOf(first[0]!).id, a);
        await approve(1, sessionOf(first[1]!).id, b);
        const paymentOf = async (clientId: string) =>
          (await logged()).find((e) => e.type === 'PaymentCreated' && e.data.clientId === clientId)?.data
            .paymentId as string | undefined;
        const paid = new Set<string>();
        for (const i of [2, 3]) {
          const id = (await until(() => paymentOf(clients[i]!.id), Boolean, 10_000))!;
          await pay(id, next);
          paid.add(id);
        }
        expect(
          (await Promise.all([0, 1, 2, 3].map((i) => verification(i, both[i % 2]!)))).map((r) => r.status),
        ).toEqual([200, 200, 200, 200]);

        // Phase 2: six more bookings and e-mail requests at once, and the lease holder is killed in the middle.
        const burst = Promise.allSettled([
          ...[6, 7, 8, 9, 10, 11].map((i) => book(i, both[i % 2]!)),
          ...[4, 5, 6, 7].map((i) => verification(i, both[i % 2]!)),
        ]);
        await new Promise((r) => setTimeout(r, 30));
        a.child.kill('SIGKILL');
        const killedAt = Date.now();
        const settled = await burst;
        // What went to the survivor succeeded; what went to the dead one may or may not have been written.
        settled.forEach((s, k) => {
          if (k % 2 === 1) expect(s.status === 'fulfilled' && s.value.status).toBe(200);
        });

        // The survivor owns every process manager and sweeper within 10 s of the kill.
        const taken = await until(
          () => owners(b),
          (o) => o.every((x) => x === b.id),
          Math.max(0, killedAt + 10_000 - Date.now()),
        );
        expect(taken.every((x) => x === b.id)).toBe(true);

        // Work goes on at the survivor: a booking of phase 2 is paid, another approved.
        const seven = settled[1]!;
        if (seven.status !== 'fulfilled')
          throw new Error('booking 7 went to the survivor and must have succeeded');
        const id7 = (await until(() => paymentOf(clients[7]!.id), Boolean, 10_000))!;
        await pay(id7, () => b);
        paid.add(id7);
        const nine = settled[3]!;
        if (nine.status !== 'fulfilled')
          throw new Error('booking 9 went to the survivor and must have succeeded');
        await approve(9, sessionOf(nine.value).id, b);

        // The killed instance comes back as a new process: it serves, and leaves the leases where they are.
        const a2 = await startInstance({ ...env, INSTANCE_ID: 'a' });
        running.push(a2);
        expect((await verification(8, a2)).status).toBe(200);
        expect(new Set(await owners(a2))).toEqual(new Set([b.id]));

        // A day and a half later every unpaid payment is past its deadline: the lease holder expires each once.
        await Promise.all([b.advance(36 * 3_600_000), a2.advance(36 * 3_600_000)]);
        const unpaid = async () => {
          const all = await logged();
          const moved = new Set(
            all.filter((e) => e.type === 'PaymentStatusChanged').map((e) => e.stream_name),
          );
          return all
            .filter((e) => e.type === 'PaymentCreated' && !moved.has(e.stream_name))
            .map((e) => e.data.paymentId as string);
        };
        expect(await until(unpaid, (u) => u.length === 0, 60_000)).toEqual([]);

        // Quiet: both instances' projections have reached the head of the log, and the mail is out.
        const head = async () => (await logged()).at(-1)!.position.commit;
        const caughtUp = async (i: Instance) => {
          const h = await head();
          const ps = (await health(i)).projections as {
            state: string;
            position: { commit: string } | null;
          }[];
          return ps.every((p) => p.state === 'standby' || (p.position && BigInt(p.position.commit) >= h));
        };
        expect(await until(async () => (await caughtUp(b)) && (await caughtUp(a2)), Boolean, 60_000)).toBe(
          true,
        );

        const events = await logged();
        const ofType = (type: string) => events.filter((e) => e.type === type);
        const countBy = (list: string[]) => {
          const counts = new Map<string, number>();
          for (const k of list) counts.set(k, (counts.get(k) ?? 0) + 1);
          return counts;
        };

        // One set of sessions and one payment per hold.
        const holds = ofType('SlotsReserved');
        // Six from phase 1, three at the survivor, and those of the killed one that reached the log.
        expect(holds.length).toBeGreaterThanOrEqual(9);
        const booked = countBy(ofType('SessionsBooked').map((e) => e.data.groupId));
        const payments = countBy(ofType('PaymentCreated').map((e) => e.data.paymentId));
        for (const h of holds) {
          expect(booked.get(h.data.groupId)).toBe(1);
          expect(payments.get(h.data.terms.paymentId)).toBe(1);
        }
        expect(booked.size).toBe(holds.length);
        expect(payments.size).toBe(holds.length);

        // One expiry per unpaid booking, none for a paid one.
        const expiries = countBy(
          ofType('PaymentStatusChanged')
            .filter((e) => e.data.reason === 'expired')
            .map((e) => e.data.paymentId),
        );
        for (const id of payments.keys()) expect(expiries.get(id) ?? 0).toBe(paid.has(id) ? 0 : 1);

        // One notification per party of each session event.
        const notifying = events.filter((e) =>
          (NOTIFYING_SESSION_EVENTS as readonly string[]).includes(e.type),
        );
        const expectedNotices = notifying.flatMap((e) =>
          sessionNotices({ type: e.type, data: e.data } as BookingEvent).map((n) => `${e.id}/${n.userId}`),
        );
        expect(expectedNotices.length).toBeGreaterThan(20);
        const notices = countBy(
          ofType('NotificationCreated').map((e) => `${e.data.causationEventId}/${e.data.userId}`),
        );
        // And one to the client of each payment received (in the app only). An expiry canceled open sessions,
        // whose notices told it: no payment notice for it.
        const clientOf = new Map(ofType('PaymentCreated').map((e) => [e.data.paymentId, e.data.clientId]));
        const paymentNotices = ofType('PaymentStatusChanged')
          .filter((e) => e.data.to === 'received')
          .map((e) => `${e.id}/${clientOf.get(e.data.paymentId)}`);
        expect(paymentNotices).toHaveLength(paid.size);
        expect(new Set(notices.keys())).toEqual(new Set([...expectedNotices, ...paymentNotices]));
        expect([...notices.values()].every((n) => n === 1)).toBe(true);

        // One e-mail per cause and recipient (session notices and requested e-mails), at the SMTP server.
        const expectedMail = new Set([
          ...expectedNotices,
          ...ofType('EmailRequested').map((e) => `${e.id}/${e.data.userId}`),
        ]);
        const received = await until(
          async () => smtp.received,
          (r) => new Set(r.map((x) => x.idempotencyKey)).size >= expectedMail.size,
          60_000,
        );
        const mails = countBy(received.map((x) => x.idempotencyKey));
        expect(new Set(mails.keys())).toEqual(expectedMail);
        // The ways to a second copy (docs/architecture.md, "The window for a second send"): the SMTP server
        // took a message and its sender died before the ledger recorded it (the kill), or stalled past its
        // lease and recorded it after another sender took the claim over (a loaded machine: CI once saw
        // this). The copy carries the same Message-ID, so the receiver drops it. The e-mail process sends
        // side by side, so several may be in that window at once: each repeat must show it in its ledger
        // stream (a claim taken over; one DeliverySent per copy the server took from a sender that lived to
        // record it, so one or two) and keep its Message-ID.
        const repeats = [...mails].filter(([, n]) => n > 1).map(([k]) => k);
        for (const k of repeats) {
          const [cause, recipient] = k.split('/');
          const ledger = events.filter((e) => e.stream_name === deliveryStream(cause!, recipient!));
          const sent = ledger.filter((e) => e.type === 'DeliverySent');
          expect([k, sent.length >= 1 && sent.length <= mails.get(k)!]).toEqual([k, true]);
          expect(new Set(sent.map((e) => e.data.messageId)).size).toBe(1);
          expect(ledger.filter((e) => e.type === 'DeliveryClaimed').length).toBeGreaterThanOrEqual(2);
          expect(mails.get(k)).toBe(2);
          expect(new Set(received.filter((x) => x.idempotencyKey === k).map((x) => x.messageId)).size).toBe(
            1,
          );
        }

        // No projection failed anywhere.
        for (const i of [b, a2]) {
          const h = await call(i, 'GET', '/healthz');
          expect(h.status).toBe(200);
          expect((h.body.projections as { state: string }[]).filter((p) => p.state === 'failed')).toEqual([]);
        }
      } catch (err) {
        for (const i of running) console.error(`--- instance ${i.id}\n${i.output.join('').slice(-4000)}`);
        throw err;
      }
    }, 240_000);

    it('decides on the log whichever instance takes a request: a change answered by one holds at once on the other', async () => {
      // The instances of the test before are done with.
      for (const i of running) if (i.child.exitCode === null) i.child.kill('SIGKILL');
      const a = await startInstance({ ...env, INSTANCE_ID: 'a' });
      running.push(a);
      const b = await startInstance({ ...env, INSTANCE_ID: 'b' });
      running.push(b);
      try {
        // Setup spread over both; each step below is answered by one instance, then asked of the other.
        let turn = 0;
        const t = {
          token,
          request: (method: string, p: string, opts?: { token?: string; body?: unknown }) =>
            call([a, b][turn++ % 2]!, method, p, opts),
        } as unknown as TestSystem;
        const m = marketplace(t);
        const allDay = [{ start: '00:00', end: '24:00' }];
        const weekly = Object.fromEntries(
          ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'].map((d) => [
            d,
            allDay,
          ]),
        );
        const admin = token(randomUUID(), ['admin']);
        const day = slotAt(5, 10).slice(0, 10);

        // A service rejected on A is refused by B at once (the booking folds the service's stream).
        const rejected = await m.coach({ timezone: 'UTC', weekly });
        const rejectedService = await m.offering(rejected, { minimumNoticeHours: 0 });
        const client = await m.client();
        expect(
          (
            await call(a, 'POST', `/api/v1/admin/services/${rejectedService}/reject`, {
              token: admin,
              body: {},
            })
          ).status,
        ).toBe(200);
        expect(
          (
            await call(b, 'POST', `/api/v1/service/${rejectedService}`, {
              token: client.token,
              body: { slots: [`${day}T10:00:00`] },
            })
          ).body,
        ).toMatchObject({ error: 'service_not_found' });

        // A day closed on A is closed on B at once, for booking and for availability (B's cache included).
        const coach = await m.coach({ timezone: 'UTC', weekly });
        const serviceId = await m.offering(coach, { minimumNoticeHours: 0 });
        const availability = async (on: Instance) =>
          (
            (
              await call(
                on,
                'GET',
                `/api/v1/service/${serviceId}/availability?from_date=${day}&to_date=${day}`,
              )
            ).body as { slots: { slot: string }[] }
          ).slots.map((x) => x.slot);
        for (let i = 0; i < 3; i++) expect(await availability(b)).toContain(`${day}T10:00:00`);
        expect(
          (
            await call(a, 'PUT', '/api/v1/coach/schedule', {
              token: coach.token,
              body: { timezone: 'UTC', weekly, overrides: { [day]: [] } },
            })
          ).status,
        ).toBe(200);
        expect(await availability(b)).toEqual([]);
        expect(
          (
            await call(b, 'POST', `/api/v1/service/${serviceId}`, {
              token: client.token,
              body: { slots: [`${day}T10:00:00`] },
            })
          ).body,
        ).toMatchObject({ error: 'slot_unavailable' });
        expect(
          (
            await call(b, 'PUT', '/api/v1/coach/schedule', {
              token: coach.token,
              body: { timezone: 'UTC', weekly },
            })
          ).status,
        ).toBe(200);

        // A booking under an Idempotency-Key on A, retried on B: B replays A's answer (the same ids), and the
        // slot B's availability no longer offers is the one A booked.
        const key = randomUUID();
        const keyed = (on: Instance) =>
          fetch(`${on.baseUrl}/api/v1/service/${serviceId}`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              authorization: `Bearer ${client.token}`,
              'idempotency-key': key,
            },
            body: JSON.stringify({ slots: [`${day}T10:00:00`] }),
          });
        const first = await keyed(a);
        expect(first.status).toBe(200);
        const again = await keyed(b);
        expect(again.status).toBe(200);
        expect(again.headers.get('idempotent-replayed')).toBe('true');
        const [booked] = (await first.json()) as { id: string; groupId: string; paymentId: string }[];
        expect(await again.json()).toEqual([expect.objectContaining({ ...booked })]);
        expect(await availability(b)).not.toContain(`${day}T10:00:00`);
        // What the client reads next, asked of the other instance at once: read models are shared, and A
        // answered only once they held the booking (README, "Several instances").
        const session = await call(b, 'GET', `/api/v1/session/${booked!.id}`, { token: client.token });
        expect(session).toMatchObject({ status: 200, body: { id: booked!.id, state: 'new' } });
        const mine = await call(b, 'GET', '/api/v1/sessions', { token: client.token });
        expect((mine.body as { id: string }[]).map((x) => x.id)).toEqual([booked!.id]);
        const theirs = await call(b, 'GET', '/api/v1/sessions?state=new', { token: coach.token });
        expect((theirs.body as { id: string }[]).map((x) => x.id)).toContain(booked!.id);
        expect(
          await call(b, 'GET', `/api/v1/payment/${booked!.paymentId}`, { token: client.token }),
        ).toMatchObject({ status: 200, body: { id: booked!.paymentId, status: 'awaiting' } });
        // A payment moved on A is shown moved by B, history included.
        const service = token(randomUUID(), ['service']);
        expect(
          (
            await call(a, 'POST', `/api/v1/payment/private/payment/${booked!.paymentId}/update`, {
              token: service,
              body: { status: 'checkout' },
            })
          ).status,
        ).toBe(200);
        const moved = await call(b, 'GET', `/api/v1/payment/${booked!.paymentId}`, { token: client.token });
        expect(moved.body).toMatchObject({ status: 'checkout', history: [{ to: 'checkout' }] });
        const holds = (await logged()).filter(
          (e) => e.type === 'SlotsReserved' && e.data.clientId === client.id,
        );
        expect(holds.map((e) => e.data.groupId)).toEqual([booked!.groupId]);

        // The same key sent to A and B at once: one runs, the other is asked to retry (409 conflict,
        // Retry-After) or replays it; one booking either way, and a retry replays it on either instance.
        const racer = await m.client();
        const raceKey = randomUUID();
        const race = (on: Instance) =>
          fetch(`${on.baseUrl}/api/v1/service/${serviceId}`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              authorization: `Bearer ${racer.token}`,
              'idempotency-key': raceKey,
            },
            body: JSON.stringify({ slots: [`${day}T11:00:00`] }),
          });
        const raced = await Promise.all([race(a), race(b)]);
        const outcomes = raced.map((r) =>
          r.status === 409 ? `409 ${r.headers.get('retry-after')}` : String(r.status),
        );
        expect(outcomes).toContain('200');
        expect(outcomes.every((o) => o === '200' || o === '409 1')).toBe(true);
        const won = ((await raced.find((r) => r.status === 200)!.json()) as { id: string }[])[0]!;
        for (const on of [a, b]) {
          const retried = await race(on);
          expect(retried.headers.get('idempotent-replayed')).toBe('true');
          expect(((await retried.json()) as { id: string }[])[0]!.id).toBe(won.id);
        }
        expect(
          (await logged()).filter((e) => e.type === 'SlotsReserved' && e.data.clientId === racer.id),
        ).toHaveLength(1);

        // The party's session action on B, at once, for the booking A took.
        expect(
          (await call(b, 'POST', `/api/v1/session/${booked!.id}/approve`, { token: coach.token })).body,
        ).toMatchObject({ id: booked!.id, state: 'approved' });
        expect(
          (await call(a, 'GET', `/api/v1/session/${booked!.id}`, { token: client.token })).body,
        ).toMatchObject({ id: booked!.id, state: 'approved' });
        // The coach's profile as B caches it, after a change answered by A.
        const profile = async (on: Instance) =>
          (await call(on, 'GET', `/api/v1/coach/${coach.id}/profile`)).body as { firstName: string };
        expect(await profile(b)).toMatchObject({ firstName: 'Coach' });
        expect(
          (
            await call(a, 'PUT', `/api/v1/users/${coach.id}`, {
              token: service,
              body: { firstName: 'Renamed' },
            })
          ).status,
        ).toBe(200);
        expect(await profile(b)).toMatchObject({ firstName: 'Renamed' });
        // The payment canceled on A: B shows the session canceled and the slot free (its cache included).
        expect(await availability(b)).not.toContain(`${day}T10:00:00`);
        expect(
          (
            await call(a, 'POST', `/api/v1/payment/private/payment/${booked!.paymentId}/cancel`, {
              token: service,
            })
          ).status,
        ).toBe(200);
        expect(
          (await call(b, 'GET', `/api/v1/session/${booked!.id}`, { token: client.token })).body,
        ).toMatchObject({ state: 'canceled', paymentState: 'canceled' });
        expect(await availability(b)).toContain(`${day}T10:00:00`);
      } catch (err) {
        for (const i of running) console.error(`--- instance ${i.id}\n${i.output.join('').slice(-4000)}`);
        throw err;
      }
    }, 120_000);

    it('starts two instances at once on a new database: the migrations run once, each lease has one owner', async () => {
      for (const i of running) if (i.child.exitCode === null) i.child.kill('SIGKILL');
      // A database of its own, events included (on EventStoreDB too: the log there holds the tests' before),
      // so both find nothing made and race for every table, the event store's and the read models'.
      const fresh = await freshPostgres(process.env.DATABASE_URL!);
      const own: NodeJS.ProcessEnv = { ...env, DATABASE_URL: fresh.url };
      delete own.EVENTSTORE_URL;
      try {
        const [a, b] = await Promise.all([
          startInstance({ ...own, INSTANCE_ID: 'a' }),
          startInstance({ ...own, INSTANCE_ID: 'b' }),
        ]);
        running.push(a!, b!);
        const { rows } = await fresh.db.query<{ version: number }>(
          'SELECT version FROM schema_migrations ORDER BY version',
        );
        expect(rows.map((r) => r.version)).toEqual(migrations.map((m) => m.version).sort((x, y) => x - y));
        const leases = (await health(b!)).leases as { name: string; owner: string }[];
        expect(leases.map((l) => l.name).sort()).toEqual(Object.values(LEASES).sort());
        for (const l of leases) expect([a!.id, b!.id]).toContain(l.owner);
        // Both serve: a user made through one is read through the other.
        const m = marketplace({
          token,
          request: (method: string, p: string, opts?: { token?: string; body?: unknown }) =>
            call(a!, method, p, opts),
        } as unknown as TestSystem);
        const coach = await m.coach();
        expect((await call(b!, 'GET', `/api/v1/coach/${coach.id}/profile`)).status).toBe(200);
      } finally {
        for (const i of running) if (i.child.exitCode === null) i.child.kill('SIGKILL');
        await Promise.all(
          running.map((i) =>
            i.child.exitCode === null && i.child.signalCode === null
              ? new Promise((r) => i.child.once('exit', r))
              : undefined,
          ),
        );
        await fresh.drop();
      }
    }, 120_000);
  },
);
