import { randomBytes, randomUUID } from 'node:crypto';
import { marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * Time travel against what the API answered: a workload in steps touching every stream kind; after each
 * step (once the read models have caught up) the API's answers and the moment are recorded. Afterwards,
 * every stream read as of each recorded instant, and as of the revision it had then, must fold to the state
 * the audit answered at that moment, and that state must agree with the API's answers of that moment.
 */
let t: TestSystem;
let m: ReturnType<typeof marketplace>;
let auditor: string;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Until the log stops growing: every projection at the head, and no process manager's follow-up after it. */
const settled = async () => {
  for (;;) {
    const head = await t.system.deps.store.headPosition();
    expect(await t.system.runner.waitFor(head, 20_000)).toBe(true);
    await sleep(20);
    if ((await t.system.deps.store.headPosition()).commit === head.commit) return head;
  }
};
const audit = async (path: string) => {
  const res = await t.request('GET', path, { token: auditor });
  expect([path, res.status]).toEqual([path, 200]);
  return res.body;
};
const ok = async (p: Promise<{ status: number; body: any }>, what: string) => {
  const res = await p;
  if (res.status !== 200) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
};

interface Moment {
  step: string;
  at: string;
  /** What the API answered at that moment, by name. */
  api: Record<string, any>;
  /** What the audit answered at that moment for each stream (no `at`, no `revision`): state and revision. */
  streams: Record<string, { revision: number; state: unknown }>;
}
const moments: Moment[] = [];

beforeAll(async () => {
  t = await startTestSystem({});
  m = marketplace(t);
  auditor = t.token(randomUUID(), ['auditor']);
}, 60_000);
afterAll(() => t.close());

describe('time travel against the API answers of a workload', () => {
  it('every stream kind, as of each recorded instant and revision, folds to what was answered then', async () => {
    const coach = await m.coach();
    const client = await m.client();
    const day = new Date(Date.now() + 3 * 86_400_000);
    while ([0, 6].includes(day.getUTCDay())) day.setUTCDate(day.getUTCDate() + 1);
    const date = day.toISOString().slice(0, 10);
    const slots = [`${date}T10:00:00`, `${date}T12:00:00`];
    let serviceId = '';
    let booked: { id: string; groupId: string; paymentId: string }[] = [];
    let videoId = '';
    /** Streams of a kind written so far, as the export lists them. */
    const written = async (prefix: string) => {
      const res = await fetch(`${t.baseUrl}/api/v1/audit/events?stream_prefix=${prefix}`, {
        headers: { authorization: `Bearer ${auditor}` },
      });
      const lines = (await res.text()).split('\n').filter(Boolean);
      return [...new Set(lines.map((l) => (JSON.parse(l) as { stream: string }).stream))];
    };
    const streams = async () => [
      ...(await written('email-')),
      ...(await written('delivery-')),
      `profile-${coach.id}`,
      `profile-${client.id}`,
      `calendar-${coach.id}`,
      ...(serviceId ? [`service-${serviceId}`] : []),
      `addresses-${client.id}`,
      ...(booked.length
        ? [`booking-${booked[0]!.groupId}`, `bookings-of-${client.id}`, `payment-${booked[0]!.paymentId}`]
        : []),
      `notifications-${client.id}`,
      `notifications-${coach.id}`,
      ...(videoId ? [`videos-${coach.id}`] : []),
    ];
    const api = async () => {
      const out: Record<string, any> = {
        coachProfile: await ok(t.request('GET', `/api/v1/coach/${coach.id}/profile`), 'coach profile'),
        addresses: await ok(t.request('GET', '/api/v1/nav/addreses', { token: client.token }), 'addresses'),
        clientNotifications: await ok(
          t.request('GET', '/api/v1/notifications', { token: client.token }),
          'notifications',
        ),
      };
      if (serviceId) out.service = await ok(t.request('GET', `/api/v1/service/${serviceId}`), 'service');
      if (booked.length) {
        out.sessions = [];
        for (const s of booked)
          out.sessions.push(
            await ok(t.request('GET', `/api/v1/session/${s.id}`, { token: coach.token }), 'session'),
          );
        out.payment = await ok(
          t.request('GET', `/api/v1/payment/${booked[0]!.paymentId}`, { token: client.token }),
          'payment',
        );
      }
      if (videoId)
        out.videos = await ok(t.request('GET', '/api/v1/storage/videos', { token: coach.token }), 'videos');
      return out;
    };
    /** Records the moment after a step: the read models caught up, then answers, then a gap. */
    const record = async (step: string): Promise<void> => {
      const head = await settled();
      const answers = await api();
      const states: Moment['streams'] = {};
      for (const s of await streams()) {
        const res = await t.request('GET', `/api/v1/audit/streams/${s}`, { token: auditor });
        if (res.status === 404) continue; // not written yet
        states[s] = { revision: res.body.revision, state: res.body.state };
      }
      const at = new Date().toISOString();
      // A moment is one state of the log: if anything was appended meanwhile, take it again.
      if ((await t.system.deps.store.headPosition()).commit !== head.commit) return record(step);
      moments.push({ step, at, api: answers, streams: states });
      await sleep(5); // the next step's events are recorded after `at`
    };

    await record('coach and client');
    serviceId = await m.offering(coach, { numberOfSessions: 2 });
    await record('service approved');
    await ok(
      t.request('POST', '/api/v1/nav/addreses', {
        token: client.token,
        body: { lat: 52.5, lng: 13.4, name: 'Home', address: 'Alexanderplatz 1', isDefault: true },
      }),
      'address',
    );
    await record('first address');
    await ok(
      t.request('PUT', `/api/v1/users/${coach.id}`, { token: m.service(), body: { firstName: 'Renamed' } }),
      'rename',
    );
    await ok(
      t.request('POST', '/api/v1/nav/addreses', {
        token: client.token,
        body: { lat: 48.1, lng: 11.6, name: 'Office', address: 'Marienplatz 1', isDefault: true },
      }),
      'address',
    );
    await record('renamed coach, second address');
    booked = await ok(
      t.request('POST', `/api/v1/service/${serviceId}`, { token: client.token, body: { slots } }),
      'booking',
    );
    await record('booked two sessions');
    await ok(
      t.request('POST', `/api/v1/payment/private/payment/${booked[0]!.paymentId}/update`, {
        token: m.service(),
        body: { status: 'checkout', clientSecret: 'cs_1', checkout: { sessionUrl: 'https://pay.example/1' } },
      }),
      'checkout',
    );
    await ok(
      t.request('POST', `/api/v1/session/${booked[0]!.id}/approve`, { token: coach.token }),
      'approve',
    );
    await record('checkout, first session approved');
    await ok(
      t.request('POST', `/api/v1/session/${booked[1]!.id}/decline`, {
        token: coach.token,
        body: { reason: 'busy' },
      }),
      'decline',
    );
    const form = new FormData();
    form.append('file', new Blob([randomBytes(200)], { type: 'video/mp4' }), 'clip.mp4');
    form.append('title', 'Serve drills');
    const uploaded = await fetch(`${t.baseUrl}/api/v1/storage/video`, {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${coach.token}` },
    });
    expect(uploaded.status).toBe(200);
    videoId = ((await uploaded.json()) as { id: string }).id;
    await record('second session declined, video uploaded');
    await ok(
      t.request('POST', `/api/v1/payment/private/payment/${booked[0]!.paymentId}/update`, {
        token: m.service(),
        body: { status: 'received' },
      }),
      'received',
    );
    const inbox = moments[moments.length - 1]!.api.clientNotifications as { id: string }[];
    expect(inbox.length).toBeGreaterThan(0);
    await ok(
      t.request('PUT', '/api/v1/notifications', {
        token: client.token,
        body: { notifications: inbox.map((n) => n.id) },
      }),
      'read all',
    );
    await ok(
      t.request('POST', `/api/v1/notification/private/email/${client.id}/verification`, {
        token: m.service(),
        body: { code: '481516' },
      }),
      'verification e-mail',
    );
    await record('payment received, notifications read, verification e-mail');

    if (process.env.AUDIT_DUMP) console.log(JSON.stringify(moments.slice(-1)[0], null, 1).slice(0, 20000));

    // Every stream kind was written by the workload.
    const kinds = new Set(Object.keys(moments[moments.length - 1]!.streams).map((s) => s.split('-')[0]));
    expect([...kinds].sort()).toEqual(
      [
        'addresses',
        'booking',
        'bookings',
        'calendar',
        'delivery',
        'email',
        'notifications',
        'payment',
        'profile',
        'service',
        'videos',
      ].sort(),
    );

    /** What the API answered and what the folded state says, side by side, for the streams the API shows. */
    const agree = (moment: Moment, stream: string, state: any): [unknown, unknown] | null => {
      const a = moment.api;
      const byId = <T extends { id: string }>(xs: T[]) => [...xs].sort((x, y) => x.id.localeCompare(y.id));
      if (stream === `profile-${coach.id}`)
        return [
          [a.coachProfile.firstName, a.coachProfile.lastName],
          [state.profile.firstName, state.profile.lastName],
        ];
      if (stream === `addresses-${client.id}`)
        return [
          byId(a.addresses.map((x: any) => ({ id: x.id, name: x.name, isDefault: x.isDefault }))),
          byId(state.addresses.map((x: any) => ({ id: x.id, name: x.name, isDefault: x.isDefault }))),
        ];
      if (stream === `notifications-${client.id}`)
        return [
          byId(a.clientNotifications.map((n: any) => ({ id: n.id, type: n.type, unread: n.unread }))),
          byId(
            Object.values(state.notifications).map((n: any) => ({
              id: n.notificationId,
              type: n.type,
              unread: n.unread,
            })),
          ),
        ];
      if (stream.startsWith('service-'))
        return [
          [a.service.name, a.service.price, a.service.status],
          [state.service.name, state.service.price, state.service.status],
        ];
      if (stream.startsWith('booking-'))
        return [
          a.sessions.map((x: any) => [x.id, x.state]),
          booked.map((b) => [b.id, state.sessions[b.id].state]),
        ];
      if (stream.startsWith('bookings-of-'))
        return [
          [[booked[0]!.groupId, a.sessions.map((x: any) => x.id)]],
          state.bookings.map((b: any) => [b.groupId, b.sessionIds]),
        ];
      if (stream.startsWith('payment-')) return [a.payment.status, state.payment.status];
      if (stream.startsWith('videos-'))
        return [
          a.videos.map((v: any) => [v.id, v.title, v.status]),
          state.videos.map((v: any) => [v.videoId, v.title, v.status]),
        ];
      return null;
    };

    // Replay: each moment's streams as of its instant and as of its revision.
    let compared = 0;
    for (const moment of moments) {
      for (const [stream, then] of Object.entries(moment.streams)) {
        const byTime = await audit(`/api/v1/audit/streams/${stream}?at=${encodeURIComponent(moment.at)}`);
        const sides = agree(moment, stream, byTime.state);
        if (sides) {
          expect([moment.step, stream, sides[1]]).toEqual([moment.step, stream, sides[0]]);
          compared++;
        }
        expect([moment.step, stream, byTime.revision, byTime.state]).toEqual([
          moment.step,
          stream,
          then.revision,
          then.state,
        ]);
        const byRevision = await audit(`/api/v1/audit/streams/${stream}?revision=${then.revision}`);
        expect([moment.step, stream, byRevision.state]).toEqual([moment.step, stream, then.state]);
      }
    }
    expect(compared).toBeGreaterThan(30);
  }, 180_000);
});
