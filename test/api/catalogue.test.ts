import { randomUUID } from 'node:crypto';
import { eventually, sessionsBookedData } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';
import type { Position } from '../../src/eventstore/types';
import { SERVICE_DEFAULTS } from '../../commands/services/codecs';

let t: TestSystem;
beforeAll(async () => {
  t = await startTestSystem();
});
afterAll(async () => {
  await t?.close();
});

const svc = () => t.token(randomUUID(), ['service']);
const admin = () => t.token(randomUUID(), ['admin']);

async function putUser(id: string, body: Record<string, unknown>) {
  return t.request('PUT', `/api/v1/users/${id}`, { token: svc(), body });
}
async function newCoach(extra: Record<string, unknown> = {}) {
  const id = randomUUID();
  const res = await putUser(id, {
    firstName: 'Coach',
    lastName: 'Kim',
    email: `c${id.slice(0, 8)}@example.com`,
    type: 'coach',
    languages: ['en', 'pt'],
    experience: 7,
    ...extra,
  });
  expect(res.status).toBe(200);
  return { id, token: t.token(id, ['coach']) };
}
async function newClient(extra: Record<string, unknown> = {}) {
  const id = randomUUID();
  const res = await putUser(id, {
    firstName: 'Cli',
    lastName: 'Ent',
    email: `u${id.slice(0, 8)}@example.com`,
    type: 'client',
    ...extra,
  });
  expect(res.status).toBe(200);
  return { id, token: t.token(id, ['client']) };
}
const serviceBody = (over: Record<string, unknown> = {}) => ({
  name: 'Tennis basics',
  price: 40,
  priceCurrency: 'EUR',
  sessionMinutesDuration: 60,
  serviceTypes: ['tennis'],
  ...over,
});
async function newService(coach: { token: string }, over: Record<string, unknown> = {}, approve = true) {
  const res = await t.request('POST', '/api/v1/coach/services', {
    token: coach.token,
    body: serviceBody(over),
  });
  expect(res.status).toBe(200);
  if (approve) {
    const ok = await t.request('POST', `/api/v1/admin/services/${res.body.id}/approve`, { token: admin() });
    expect(ok.status).toBe(200);
  }
  return res.body.id as string;
}
/** Appends an event as the booking side would, and waits until every read model has it. */
async function appendAndWait(stream: string, type: string, data: Record<string, unknown>) {
  const { position } = await t.system.deps.store.append(stream, [{ type, data }], {
    expectedRevision: 'any',
  });
  expect(await t.system.runner.waitFor(position, 3000)).toBe(true);
}

describe('PUT /api/v1/users/{user_id}', () => {
  it('creates then changes a profile, answering the stored profile', async () => {
    const id = randomUUID();
    const created = await putUser(id, {
      firstName: 'A',
      lastName: 'B',
      email: 'a@b.co',
      type: 'client',
      timezone: 'Europe/Lisbon',
      birthDate: '1990-05-01',
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      id,
      firstName: 'A',
      timezone: 'Europe/Lisbon',
      birthDate: '1990-05-01',
      languages: [],
      type: 'client',
    });
    const changed = await putUser(id, { phone: '+351 912 345 678' });
    expect(changed.body).toMatchObject({ id, firstName: 'A', phone: '+351 912 345 678' });
  });

  it('needs the service or admin role', async () => {
    const id = randomUUID();
    expect((await t.request('PUT', `/api/v1/users/${id}`, { body: {} })).status).toBe(401);
    const res = await t.request('PUT', `/api/v1/users/${id}`, {
      token: t.token(id, ['coach']),
      body: { firstName: 'x' },
    });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'forbidden', message: expect.any(String), code: 403 });
  });

  it('is read back with GET by the user itself, the service role and admins, as PUT answered it', async () => {
    const id = randomUUID();
    const created = await putUser(id, {
      firstName: 'Ana',
      lastName: 'Lima',
      email: 'ana@example.com',
      type: 'client',
      phone: '+351 912 345 678',
      languages: ['pt', 'en'],
    });
    expect(created.status).toBe(200);
    const path = `/api/v1/users/${id.toUpperCase()}`;
    for (const token of [t.token(id, ['client']), svc(), admin()]) {
      const read = await t.request('GET', path, { token });
      expect(read.status).toBe(200);
      expect(read.body).toEqual(created.body);
    }
    // Another user, whatever its role, gets the 404 of an unknown id (public views: 12, 13).
    for (const token of [t.token(randomUUID(), ['client']), t.token(randomUUID(), ['coach', 'auditor'])]) {
      const other = await t.request('GET', path, { token });
      expect([other.status, other.body.error]).toEqual([404, 'user_not_found']);
    }
    expect((await t.request('GET', path)).status).toBe(401);
    // Read-your-writes: the change is what the next GET shows.
    await putUser(id, { lastName: 'Lima Costa' });
    expect((await t.request('GET', path, { token: svc() })).body.lastName).toBe('Lima Costa');
    const none = randomUUID();
    const missing = await t.request('GET', `/api/v1/users/${none}`, { token: t.token(none, ['client']) });
    expect([missing.status, missing.body.error]).toEqual([404, 'user_not_found']);
    const bad = await t.request('GET', '/api/v1/users/nope', { token: svc() });
    expect([bad.status, bad.body.detail?.[0]?.loc]).toEqual([422, ['path', 'user_id']]);
  });

  it('validates the time zone, date, type and unknown fields (422 detail)', async () => {
    const res = await putUser(randomUUID(), {
      timezone: 'Mars/Base',
      birthDate: '2001-02-29',
      type: 'guest',
      shoeSize: 42,
    });
    expect(res.status).toBe(422);
    const locs = res.body.detail.map((d: { loc: unknown[] }) => d.loc.join('.'));
    expect(locs).toEqual(
      expect.arrayContaining(['body.timezone', 'body.birthDate', 'body.type', 'body.shoeSize']),
    );
  });

  it('answers a birthDate that is no date with one error, the date\'s (not also "Input should be null")', async () => {
    const client = await newClient();
    for (const birthDate of ['1899-12-31', '01/02/1990', 19900102, true]) {
      const res = await putUser(client.id, { birthDate });
      expect([birthDate, res.status, res.body]).toEqual([
        birthDate,
        422,
        {
          detail: [
            {
              loc: ['body', 'birthDate'],
              msg: 'Input should be a valid date in the format YYYY-MM-DD',
              type: 'invalid_date',
            },
          ],
        },
      ]);
    }
    // null still clears it.
    expect((await putUser(client.id, { birthDate: '1990-05-01' })).body.birthDate).toBe('1990-05-01');
    expect((await putUser(client.id, { birthDate: null })).body.birthDate).toBeNull();
  });

  it('refuses a birthDate in the future (422 at birthDate), on create and on edit', async () => {
    const nextYear = `${new Date().getUTCFullYear() + 1}-06-01`;
    const created = await putUser(randomUUID(), {
      firstName: 'Fut',
      lastName: 'Ure',
      email: 'future@example.com',
      type: 'client',
      birthDate: nextYear,
    });
    expect(created.status).toBe(422);
    expect(created.body).toEqual({
      detail: [{ loc: ['body', 'birthDate'], msg: expect.stringMatching(/future/), type: 'value_error' }],
    });
    const client = await newClient();
    const edited = await putUser(client.id, { birthDate: nextYear });
    expect(edited.status).toBe(422);
    expect(edited.body.detail[0].loc).toEqual(['body', 'birthDate']);
    expect((await putUser(client.id, { birthDate: '1990-05-01' })).body).toMatchObject({
      birthDate: '1990-05-01',
    });
  });

  it('refuses an e-mail address no mail server takes (dots out of place, a domain that is no host name)', async () => {
    const client = await newClient();
    for (const email of [
      '.ada@example.com',
      'ada.@example.com',
      'ada..lovelace@example.com',
      'ada@example..com',
      'ada@.example.com',
      'ada@example.com.',
      'ada@-example.com',
      'ada@example-.com',
      'ada@exa_mple.com',
      'ada@111.222.333.44444',
      `ada@${'a'.repeat(64)}.com`,
      // Characters that show nothing or control the display: the address read is not the one shown.
      'ada\u202emoc.elpmaxe@example.com',
      'ada\u200b@example.com',
      'ada\u0085@example.com',
      'ada@exam\u00adple.com',
    ]) {
      const res = await putUser(client.id, { email });
      expect([email, res.status, res.body.detail?.[0]?.loc]).toEqual([email, 422, ['body', 'email']]);
    }
    // Kept as sent: letter case, a plus, an internationalised domain or local part.
    for (const email of ['Ada.Lovelace+x@Example.COM', 'ada@bücher.de', 'ülla@example.com', 'a@b-c.d-e.io']) {
      const res = await putUser(client.id, { email });
      expect([email, res.status, res.body.email]).toEqual([email, 200, email]);
    }
    // An address stored before this rule can be sent again unchanged (a whole profile re-sent), not a new one.
    const stored = (await putUser(client.id, {})).body;
    const { id: _id, ...profile } = stored;
    await appendAndWait(`profile-${client.id}`, 'UserProfileUpserted', {
      userId: client.id,
      profile: { ...profile, email: 'ada..old@example.com' },
      changed: ['email'],
      created: false,
      upsertedAt: '2026-01-01T00:00:00.000Z',
    });
    const resent = await putUser(client.id, { ...profile, email: 'ada..old@example.com', lastName: 'Old' });
    expect([resent.status, resent.body.email]).toEqual([200, 'ada..old@example.com']);
    expect((await putUser(client.id, { email: 'ada..new@example.com' })).status).toBe(422);
  });

  it('refuses a new profile without its basics', async () => {
    const res = await putUser(randomUUID(), { firstName: 'Only' });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: ['lastName', 'email', 'type'].map((field) => ({
        loc: ['body', field],
        msg: 'a new profile needs lastName, email, type',
        type: 'missing',
      })),
    });
  });

  it('rejects a malformed user id', async () => {
    const res = await t.request('PUT', '/api/v1/users/nope', { token: svc(), body: {} });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['path', 'user_id']);
  });
});

describe('services: create, edit, approve, reject, read', () => {
  it('creates a service in review with defaults, visible only to its coach and admins until approved', async () => {
    const coach = await newCoach();
    const res = await t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: serviceBody(),
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Tennis basics',
      description: '',
      promo: false,
      price: 40,
      priceCurrency: 'EUR',
      serviceOtherType: '',
      sessionMinutesDuration: 60,
      sessionCancellationHours: 24,
      status: 'review',
      serviceTypes: ['tennis'],
      numberOfSessions: 1,
      expiresInDays: 365,
      groupSession: false,
      maxGroupSize: 1,
      slots: [],
      minimumNoticeHours: 2,
      bookingWindowDays: 60,
    });
    const id = res.body.id;
    expect((await t.request('GET', `/api/v1/service/${id}`, { token: coach.token })).body.status).toBe(
      'review',
    );
    expect((await t.request('GET', `/api/v1/service/${id}`, { token: admin() })).status).toBe(200);
    const stranger = await t.request('GET', `/api/v1/service/${id}`);
    expect(stranger.status).toBe(404);
    expect(stranger.body).toEqual({ error: 'service_not_found', message: expect.any(String), code: 404 });
    expect((await t.request('GET', `/api/v1/coach/${coach.id}/services`)).body).toEqual([]);
    expect(
      (await t.request('GET', `/api/v1/coach/${coach.id}/services`, { token: coach.token })).body,
    ).toHaveLength(1);

    const approved = await t.request('POST', `/api/v1/admin/services/${id}/approve`, { token: admin() });
    expect(approved.body.status).toBe('approved');
    expect((await t.request('GET', `/api/v1/service/${id}`)).body).toMatchObject({ id, status: 'approved' });
    expect(
      (await t.request('GET', `/api/v1/coach/${coach.id}/services`)).body.map((s: { id: string }) => s.id),
    ).toEqual([id]);
  });

  it("lists all of a coach's services without limit (10), newest first, and pages them with limit and offset", async () => {
    const coach = await newCoach();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await newService(coach, { name: `Service ${i}` }));
    const list = async (q = '') =>
      (await t.request('GET', `/api/v1/coach/${coach.id}/services${q}`)).body.map(
        (s: { id: string }) => s.id,
      );
    const newestFirst = [...ids].reverse();
    expect(await list()).toEqual(newestFirst);
    expect(await list('?limit=2')).toEqual(newestFirst.slice(0, 2));
    expect(await list('?limit=2&offset=2')).toEqual(newestFirst.slice(2));
    const bad = await t.request('GET', `/api/v1/coach/${coach.id}/services?limit=0`);
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['query', 'limit']);
  });

  it('answers many GETs of different services made at once each with its own service (one shared look-up)', async () => {
    const coach = await newCoach();
    const approved = await Promise.all(
      [1, 2, 3, 4].map((i) => newService(coach, { name: `Svc ${i}`, price: 10 * i })),
    );
    const inReview = await newService(coach, { name: 'Not yet' }, false);
    const missing = randomUUID();
    const asks = [...approved, inReview, missing, ...approved].map((id) => ({
      id,
      token: undefined as string | undefined,
    }));
    asks.push({ id: inReview, token: coach.token });
    const answers = await Promise.all(
      asks.map((a) => t.request('GET', `/api/v1/service/${a.id}`, a.token ? { token: a.token } : {})),
    );
    answers.forEach((res, i) => {
      const { id, token } = asks[i]!;
      if (id === missing || (id === inReview && !token)) {
        expect(res.status).toBe(404);
        return;
      }
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(id);
      const n = approved.indexOf(id);
      expect(res.body).toMatchObject(
        n >= 0 ? { name: `Svc ${n + 1}`, price: 10 * (n + 1) } : { name: 'Not yet', status: 'review' },
      );
    });
    // A change shows on the very next GET.
    const edit = await t.request('PUT', `/api/v1/coach/services/${approved[0]}`, {
      token: coach.token,
      body: { price: 99 },
    });
    expect(edit.status).toBe(200);
    const [again] = await Promise.all(
      [approved[0], approved[1]].map((id) => t.request('GET', `/api/v1/service/${id}`)),
    );
    expect(again!.body.price).toBe(99);
  });

  it('lets only the owner edit; an approved service stays approved', async () => {
    const coach = await newCoach();
    const other = await newCoach();
    const id = await newService(coach);
    const edited = await t.request('PUT', `/api/v1/coach/services/${id}`, {
      token: coach.token,
      body: { price: 55, sessionMinutesDuration: 90 },
    });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ price: 55, sessionMinutesDuration: 90, status: 'approved' });
    expect((await t.request('GET', `/api/v1/service/${id}`)).body.price).toBe(55);
    const foreign = await t.request('PUT', `/api/v1/coach/services/${id}`, {
      token: other.token,
      body: { price: 1 },
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('service_not_found');
    const unknown = await t.request('PUT', `/api/v1/coach/services/${randomUUID()}`, {
      token: coach.token,
      body: { price: 1 },
    });
    expect(unknown.status).toBe(404);
  });

  it('stores serviceTypes trimmed and once each (in any case), on create and edit; a stored type is read as stored', async () => {
    const coach = await newCoach();
    const kind = `yoga${randomUUID().slice(0, 8)}`;
    const id = await newService(coach, {
      serviceTypes: [` ${kind} `, 'Padel', kind.toUpperCase(), '\u00a0padel\t', kind],
    });
    const stored = await t.request('GET', `/api/v1/service/${id}`);
    expect(stored.body.serviceTypes).toEqual([kind, 'Padel']);
    // The search trims what it is asked for: a type sent with blanks around it is found.
    const found = await eventually(
      async () => (await t.request('GET', `/api/v1/coaches?serviceType=${kind}`)).body as { id: string }[],
      (l) => l.length > 0,
    );
    expect(found.map((c) => c.id)).toEqual([coach.id]);
    const profile = await t.request('GET', `/api/v1/coach/${coach.id}/profile`);
    expect(profile.body.serviceTypes).toEqual(['Padel', kind]);
    const edit = (body: Record<string, unknown>) =>
      t.request('PUT', `/api/v1/coach/services/${id}`, { token: coach.token, body });
    // The same types in another spelling are no change.
    const same = await edit({ serviceTypes: [`${kind}  `, ' Padel'] });
    expect(same.status).toBe(200);
    expect((await t.system.deps.store.readStream(`service-${id}`)).events.map((e) => e.type)).toEqual([
      'ServiceCreated',
      'ServiceApproved',
    ]);
    expect((await edit({ serviceTypes: [' Tennis ', 'tennis'] })).body.serviceTypes).toEqual(['Tennis']);

    // A service recorded before the rule keeps its types as they were until its coach edits them.
    const oldId = randomUUID();
    await appendAndWait(`service-${oldId}`, 'ServiceCreated', {
      serviceId: oldId,
      coachId: coach.id,
      ...SERVICE_DEFAULTS,
      ...serviceBody({ serviceTypes: [' golf ', 'golf'] }),
      status: 'review',
      createdAt: new Date().toISOString(),
    });
    const old = await t.request('GET', `/api/v1/service/${oldId}`, { token: coach.token });
    expect(old.body.serviceTypes).toEqual([' golf ', 'golf']);
    const tidied = await t.request('PUT', `/api/v1/coach/services/${oldId}`, {
      token: coach.token,
      body: { serviceTypes: [' golf ', 'golf'] },
    });
    expect(tidied.body.serviceTypes).toEqual(['golf']);
  });

  it('needs maxGroupSize when an edit makes a service a group one (422 missing), as create does', async () => {
    const coach = await newCoach();
    const id = await newService(coach);
    const edit = (body: Record<string, unknown>) =>
      t.request('PUT', `/api/v1/coach/services/${id}`, { token: coach.token, body });
    const bare = await edit({ groupSession: true });
    expect(bare.status).toBe(422);
    expect(bare.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'maxGroupSize'], type: 'missing' }),
    ]);
    expect((await t.request('GET', `/api/v1/service/${id}`)).body.groupSession).toBe(false);
    expect((await edit({ groupSession: true, maxGroupSize: 6 })).body).toMatchObject({
      groupSession: true,
      maxGroupSize: 6,
    });
  });

  it('reads a rejection reason sent as null as none, as every optional reason', async () => {
    const coach = await newCoach();
    const id = await newService(coach, {}, false);
    const rejected = await t.request('POST', `/api/v1/admin/services/${id}/reject`, {
      token: admin(),
      body: { reason: null },
    });
    expect([rejected.status, rejected.body.status]).toEqual([200, 'rejected']);
  });

  it('rejects, refuses approval of a rejected service (409), and resubmits it on edit', async () => {
    const coach = await newCoach();
    const id = await newService(coach, {}, false);
    const rejected = await t.request('POST', `/api/v1/admin/services/${id}/reject`, {
      token: admin(),
      body: { reason: 'too vague' },
    });
    expect(rejected.body.status).toBe('rejected');
    // The coach hears of it, with the admin's reason (shown nowhere else to the coach).
    const inbox = await eventually(
      async () => (await t.request('GET', '/api/v1/notifications', { token: coach.token })).body,
      (l) => l.length === 1,
    );
    expect(inbox[0]).toMatchObject({
      type: 'service_rejected',
      contentType: 'service',
      contentId: id,
      unread: true,
    });
    expect(inbox[0].message).toMatch(/^Your service ".+" was not approved\. Reason: too vague$/);
    const again = await t.request('POST', `/api/v1/admin/services/${id}/approve`, { token: admin() });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: 'invalid_transition', code: 409 });
    const edited = await t.request('PUT', `/api/v1/coach/services/${id}`, {
      token: coach.token,
      body: { description: 'clear now' },
    });
    expect(edited.body.status).toBe('review');
  });

  it('validates service bodies field by field', async () => {
    const coach = await newCoach();
    const res = await t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: {
        name: '',
        price: -1,
        priceCurrency: 'eur',
        sessionMinutesDuration: 3,
        sessionCancellationHours: 721,
        numberOfSessions: 0,
        expiresInDays: 4000,
        maxGroupSize: 501,
        serviceTypes: [1],
        status: 'approved',
      },
    });
    expect(res.status).toBe(422);
    const locs = res.body.detail.map((d: { loc: unknown[] }) => d.loc.join('.'));
    expect(locs).toEqual(
      expect.arrayContaining([
        'body.name',
        'body.price',
        'body.priceCurrency',
        'body.sessionMinutesDuration',
        'body.sessionCancellationHours',
        'body.numberOfSessions',
        'body.expiresInDays',
        'body.maxGroupSize',
        'body.serviceTypes.0',
        'body.status',
      ]),
    );
    const oneToOne = await t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: serviceBody({ maxGroupSize: 4 }),
    });
    expect(oneToOne.status).toBe(422);
    expect(oneToOne.body.detail).toEqual([
      { loc: ['body', 'maxGroupSize'], msg: expect.any(String), type: 'value_error' },
    ]);
    const group = await t.request('POST', '/api/v1/coach/services', {
      token: coach.token,
      body: serviceBody({ groupSession: true }),
    });
    expect(group.status).toBe(422);
    expect(group.body.detail[0].loc).toEqual(['body', 'maxGroupSize']);
  });

  it('takes only ISO 4217 currency codes for priceCurrency, on create and on edit (422 at the field)', async () => {
    const coach = await newCoach();
    for (const priceCurrency of ['ZZZ', 'ABC', 'XXX'])
      expect(
        (
          await t.request('POST', '/api/v1/coach/services', {
            token: coach.token,
            body: serviceBody({ priceCurrency }),
          })
        ).body,
      ).toEqual({
        detail: [
          {
            loc: ['body', 'priceCurrency'],
            msg: expect.stringMatching(/ISO 4217/),
            type: 'invalid_currency',
          },
        ],
      });
    const id = await newService(coach, { priceCurrency: 'CHF' });
    const edit = await t.request('PUT', `/api/v1/coach/services/${id}`, {
      token: coach.token,
      body: { priceCurrency: 'ZZZ' },
    });
    expect(edit.status).toBe(422);
    expect(edit.body.detail[0].loc).toEqual(['body', 'priceCurrency']);
    expect((await t.request('GET', `/api/v1/service/${id}`)).body).toMatchObject({ priceCurrency: 'CHF' });
  });

  it("refuses a price finer than its currency's minor unit, on create and on edit (422)", async () => {
    const coach = await newCoach();
    const create = (over: Record<string, unknown>) =>
      t.request('POST', '/api/v1/coach/services', { token: coach.token, body: serviceBody(over) });
    for (const over of [
      { price: 19.999 },
      { price: 0.0000001 },
      { price: 1500.5, priceCurrency: 'JPY' },
      { price: 1.2345, priceCurrency: 'BHD' },
    ]) {
      const res = await create(over);
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        detail: [{ loc: ['body', 'price'], msg: expect.stringMatching(/decimals/), type: 'value_error' }],
      });
    }
    for (const over of [
      { price: 19.99 },
      { price: 1500, priceCurrency: 'JPY' },
      { price: 1.234, priceCurrency: 'BHD' },
    ])
      expect((await create(over)).status).toBe(200);
    const id = await newService(coach, { price: 19.99 });
    const edit = (body: Record<string, unknown>) =>
      t.request('PUT', `/api/v1/coach/services/${id}`, { token: coach.token, body });
    expect((await edit({ price: 19.995 })).status).toBe(422);
    // A currency without decimals makes the stored price unpayable: refused too.
    expect((await edit({ priceCurrency: 'JPY' })).body).toEqual({
      detail: [{ loc: ['body', 'price'], msg: expect.stringMatching(/decimals/), type: 'value_error' }],
    });
    expect((await edit({ price: 2500, priceCurrency: 'JPY' })).body).toMatchObject({ price: 2500 });
    expect((await t.request('GET', `/api/v1/service/${id}`)).body).toMatchObject({
      price: 2500,
      priceCurrency: 'JPY',
    });
  });

  it('guards roles and coach existence', async () => {
    expect((await t.request('POST', '/api/v1/coach/services', { body: serviceBody() })).status).toBe(401);
    const client = await newClient();
    expect(
      (await t.request('POST', '/api/v1/coach/services', { token: client.token, body: serviceBody() }))
        .status,
    ).toBe(403);
    const ghost = await t.request('POST', '/api/v1/coach/services', {
      token: t.token(randomUUID(), ['coach']),
      body: serviceBody(),
    });
    expect(ghost.status).toBe(404);
    expect(ghost.body.error).toBe('coach_not_found');
    const coach = await newCoach();
    const id = await newService(coach, {}, false);
    expect(
      (await t.request('POST', `/api/v1/admin/services/${id}/approve`, { token: coach.token })).status,
    ).toBe(403);
    expect(
      (await t.request('POST', `/api/v1/admin/services/${randomUUID()}/approve`, { token: admin() })).status,
    ).toBe(404);
    const notCoach = await t.request('GET', `/api/v1/coach/${client.id}/services`);
    expect(notCoach.body).toEqual({ error: 'coach_not_found', message: expect.any(String), code: 404 });
    expect((await t.request('GET', '/api/v1/service/not-a-uuid')).status).toBe(422);
  });
});

describe('GET /api/v1/coach/client/{client_id}', () => {
  it('answers the User shape only to a coach the client has booked, and to admins', async () => {
    const coach = await newCoach();
    const other = await newCoach();
    const client = await newClient({
      languages: ['en', 'fr'],
      mediaUrl: 'https://cdn.example/m/clip.mp4?x=1',
    });
    const serviceId = await newService(coach);
    const path = `/api/v1/coach/client/${client.id}`;

    const before = await t.request('GET', path, { token: coach.token });
    expect(before.status).toBe(404);
    expect(before.body).toEqual({ error: 'user_not_found', message: expect.any(String), code: 404 });

    const groupId = randomUUID();
    await appendAndWait(
      `booking-${groupId}`,
      'SessionsBooked',
      sessionsBookedData({ groupId, coachId: coach.id, clientId: client.id, serviceId }),
    );
    const res = await t.request('GET', path, { token: coach.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: client.id,
      username: '',
      name: 'Cli',
      surname: 'Ent',
      firstName: 'Cli',
      lastName: 'Ent',
      fullName: 'Cli Ent',
      email: expect.stringContaining('@example.com'),
      phone: '',
      timezone: 'UTC',
      rating: null,
      mediaFilename: 'clip.mp4',
      mediaPreviewFilename: '',
      mediaType: '',
      roleList: 'client',
      birthDate: null,
      gender: '',
      available: true,
      verified: false,
      type: 'client',
      languages: 'en,fr',
      description: '',
      avatar: '',
      avatarUrl: '',
      mediaUrl: 'https://cdn.example/m/clip.mp4?x=1',
      mediaPreviewUrl: '',
      packages: [], // added: the client's packages with this coach (a one-session booking is none)
    });
    expect((await t.request('GET', path, { token: other.token })).status).toBe(404);
    expect((await t.request('GET', path, { token: client.token })).status).toBe(404);
    expect((await t.request('GET', path, { token: admin() })).status).toBe(200);
    expect((await t.request('GET', path)).status).toBe(401);
  });

  it('answers a client who booked without a profile as a guest User, not 404', async () => {
    const coach = await newCoach();
    const other = await newCoach();
    const serviceId = await newService(coach);
    const guestId = randomUUID(); // a signed-in user that never got a profile: it may book (8)
    const path = `/api/v1/coach/client/${guestId}`;
    expect((await t.request('GET', path, { token: admin() })).status).toBe(404);
    const groupId = randomUUID();
    await appendAndWait(
      `booking-${groupId}`,
      'SessionsBooked',
      sessionsBookedData({ groupId, coachId: coach.id, clientId: guestId, serviceId }),
    );
    const res = await t.request('GET', path, { token: coach.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: guestId,
      username: '',
      name: '',
      surname: '',
      firstName: '',
      lastName: '',
      fullName: '',
      email: '',
      phone: '',
      timezone: 'UTC',
      rating: null,
      mediaFilename: '',
      mediaPreviewFilename: '',
      mediaType: '',
      roleList: 'guest',
      birthDate: null,
      gender: '',
      available: true,
      verified: false,
      type: 'guest',
      languages: '',
      description: '',
      avatar: '',
      avatarUrl: '',
      mediaUrl: '',
      mediaPreviewUrl: '',
      packages: [],
    });
    expect((await t.request('GET', path, { token: admin() })).status).toBe(200);
    expect((await t.request('GET', path, { token: other.token })).body).toMatchObject({
      error: 'user_not_found',
    });
  });
});

describe('reviews and the public coach profile', () => {
  it('lists reviews newest first with paging, and 404s unknown coaches', async () => {
    const coach = await newCoach();
    const client = await newClient();
    const serviceId = await newService(coach);
    for (const [i, rating] of [4, 5, 2].entries()) {
      const sessionId = randomUUID();
      await appendAndWait(`session-${sessionId}`, 'SessionReviewed', {
        sessionId,
        coachId: coach.id,
        clientId: client.id,
        serviceId,
        rating,
        comment: `c${i}`,
        reviewedAt: `2030-01-0${i + 1}T10:00:00.000Z`,
      });
    }
    const all = await t.request('GET', `/api/v1/service/${coach.id}/reviews`);
    expect(all.status).toBe(200);
    expect(all.body.map((r: { rating: number }) => r.rating)).toEqual([2, 5, 4]);
    expect(all.body[0]).toEqual({
      id: expect.any(String),
      sessionId: expect.any(String),
      serviceId,
      clientId: client.id,
      clientName: 'Cli Ent',
      rating: 2,
      comment: 'c2',
      createdAt: '2030-01-03T10:00:00.000Z',
    });
    const page = await t.request('GET', `/api/v1/service/${coach.id}/reviews?limit=1&offset=1`);
    expect(page.body.map((r: { comment: string }) => r.comment)).toEqual(['c1']);
    expect((await t.request('GET', `/api/v1/service/${coach.id}/reviews?limit=0`)).status).toBe(422);
    const unknown = await t.request('GET', `/api/v1/service/${randomUUID()}/reviews`);
    expect(unknown.body).toEqual({ error: 'coach_not_found', message: expect.any(String), code: 404 });
    // rating is the rounded average of the reviews: (4 + 5 + 2) / 3
    expect((await t.request('GET', `/api/v1/coach/${coach.id}/profile`)).body.rating).toBe(3.67);
  });

  it('rounds the average rating half up on its exact value: 41 / 40 = 1.025 shows as 1.03 (13 and 12)', async () => {
    const coach = await newCoach();
    const client = await newClient();
    const serviceId = await newService(coach);
    let last: Position | undefined;
    for (let i = 0; i < 40; i++) {
      const sessionId = randomUUID();
      const { position } = await t.system.deps.store.append(
        `session-${sessionId}`,
        [
          {
            type: 'SessionReviewed',
            data: {
              sessionId,
              coachId: coach.id,
              clientId: client.id,
              serviceId,
              rating: i === 0 ? 2 : 1,
              comment: '',
              reviewedAt: '2030-01-01T10:00:00.000Z',
            },
          },
        ],
        { expectedRevision: 'any' },
      );
      last = position;
    }
    expect(await t.system.runner.waitFor(last!, 5000)).toBe(true);
    expect((await t.request('GET', `/api/v1/coach/${coach.id}/profile`)).body.rating).toBe(1.03);
    const asUser = await t.request('GET', `/api/v1/coach/client/${coach.id}`, { token: admin() });
    expect(asUser.body.rating).toBe(1.03);
  });

  it('builds PublicCoachProfileOut from profile, approved services, reviews and completed sessions', async () => {
    const coach = await newCoach({ whatsapp: '+351 910 000 001', verified: true, gender: 'female' });
    const cheap = await newService(coach, { price: 25, serviceTypes: ['yoga', 'tennis'] });
    await newService(coach, { price: 90, serviceTypes: ['padel'] });
    await newService(coach, { price: 5, serviceTypes: ['hidden'] }, false); // in review: not public
    const client = await newClient();
    const sessionId = randomUUID();
    const completed = {
      sessionId,
      coachId: coach.id,
      clientId: client.id,
      completedAt: '2030-02-01T10:00:00.000Z',
    };
    await appendAndWait(`session-${sessionId}`, 'SessionCompleted', completed);
    await appendAndWait(`session-${sessionId}`, 'SessionCompleted', completed); // a repeat counts once
    await appendAndWait(`session-${randomUUID()}`, 'SessionCompleted', {
      ...completed,
      sessionId: randomUUID(),
    });

    const res = await t.request('GET', `/api/v1/coach/${coach.id}/profile`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(
      [
        'firstName',
        'lastName',
        'phone',
        'whatsapp',
        'gender',
        'description',
        'languages',
        'avatarUrl',
        'mediaType',
        'mediaUrl',
        'mediaPreviewUrl',
        'rating',
        'serviceTypes',
        'services',
        'images',
        'videos',
        'certificates',
        'distance',
        'experience',
        'price',
        'minPrice',
        'maxPrice',
        'priceCurrency',
        'sessionCount',
        'verified',
      ].sort(),
    );
    expect(res.body).toMatchObject({
      firstName: 'Coach',
      whatsapp: '+351 910 000 001',
      gender: 'female',
      languages: { en: true, pt: true },
      rating: null,
      serviceTypes: ['padel', 'tennis', 'yoga'],
      images: [],
      videos: [],
      certificates: [],
      distance: null,
      experience: 7,
      price: 25,
      minPrice: 25,
      maxPrice: 90,
      priceCurrency: 'EUR',
      sessionCount: 2,
      verified: true,
    });
    expect(res.body.services.map((s: { id: string }) => s.id)).toContain(cheap);
    expect(res.body.services).toHaveLength(2);
    const unknown = await t.request('GET', `/api/v1/coach/${randomUUID()}/profile`);
    expect(unknown.body).toEqual({ error: 'coach_not_found', message: expect.any(String), code: 404 });
    expect((await t.request('GET', `/api/v1/coach/${coach.id}/profile`, { token: 'garbage' })).status).toBe(
      401,
    );
  });

  it('gives the great-circle distance between the default addresses of caller and coach', async () => {
    const coach = await newCoach();
    const client = await newClient();
    const addr = (token: string, lat: number, lng: number) =>
      t.request('POST', '/api/v1/nav/addreses', {
        token,
        body: { lat, lng, name: 'home', address: 'somewhere' },
      });
    expect((await addr(client.token, 38.7223, -9.1393)).status).toBe(200); // Lisbon
    const path = `/api/v1/coach/${coach.id}/profile`;
    expect((await t.request('GET', path, { token: client.token })).body.distance).toBeNull(); // coach has no address yet
    expect((await addr(coach.token, 41.1579, -8.6291)).status).toBe(200); // Porto
    const res = await t.request('GET', path, { token: client.token });
    expect(res.body.distance).toBeGreaterThan(272);
    expect(res.body.distance).toBeLessThan(276);
    expect((await t.request('GET', path)).body.distance).toBeNull(); // no token, no caller address
  });
});
