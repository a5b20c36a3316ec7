import { randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { startTestSystem, type TestSystem } from '../support/system';

const PATH = '/api/v1/nav/addreses';
const home = {
  lat: 52.52,
  lng: 13.405,
  name: 'Home',
  address: 'Alexanderplatz 1, Berlin',
  city: 'Berlin',
  zip: '10178',
};
const office = { lat: 48.1374, lng: 11.5755, zoom: 12, name: 'Office', address: 'Marienplatz 8, München' };

describe('saved addresses (endpoints 32, 33)', () => {
  let t: TestSystem;
  beforeAll(async () => {
    t = await startTestSystem();
  });
  afterAll(() => t.close());

  const newUser = () => {
    const id = randomUUID();
    return { id, token: t.token(id, ['client']) };
  };

  it('creates the first address as default and answers the list with position and zoom', async () => {
    const u = newUser();
    const res = await t.request('POST', PATH, { token: u.token, body: home });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        ...home,
        zoom: 15,
        isDefault: true,
        country: '',
        state: '',
        line1: '',
        line2: '',
        details: '',
        position: { type: 'Point', coordinates: [13.405, 52.52] },
      },
    ]);
  });

  it('moves the default to a new address created with isDefault: true, and GET agrees at once', async () => {
    const u = newUser();
    await t.request('POST', PATH, { token: u.token, body: home });
    const second = await t.request('POST', PATH, { token: u.token, body: { ...office, isDefault: true } });
    expect(second.body.map((a: { name: string; isDefault: boolean }) => [a.name, a.isDefault])).toEqual([
      ['Office', true],
      ['Home', false],
    ]);
    const list = await t.request('GET', PATH, { token: u.token });
    expect(list.status).toBe(200);
    expect(list.body).toEqual(second.body);
  });

  it('keeps the default when a later address does not ask for it', async () => {
    const u = newUser();
    await t.request('POST', PATH, { token: u.token, body: home });
    const res = await t.request('POST', PATH, { token: u.token, body: { ...office, isDefault: false } });
    expect(res.body.map((a: { name: string; isDefault: boolean }) => [a.name, a.isDefault])).toEqual([
      ['Office', false],
      ['Home', true],
    ]);
  });

  it('never shows one user the addresses of another', async () => {
    const a = newUser();
    const b = newUser();
    await t.request('POST', PATH, { token: a.token, body: home });
    expect((await t.request('GET', PATH, { token: b.token })).body).toEqual([]);
  });

  it('leaves exactly one default after concurrent creates by one user', async () => {
    const u = newUser();
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.request('POST', PATH, { token: u.token, body: { ...home, name: `A${i}`, isDefault: i % 3 === 0 } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
    const list = await t.request('GET', PATH, { token: u.token });
    expect(list.body).toHaveLength(12);
    expect(list.body.filter((a: { isDefault: boolean }) => a.isDefault)).toHaveLength(1);
  });

  it('answers 422 with the location of every bad field', async () => {
    const u = newUser();
    const res = await t.request('POST', PATH, {
      token: u.token,
      body: { lat: 91, lng: 'east', name: '', zoom: 99, colour: 'red' },
    });
    expect(res.status).toBe(422);
    const locs = res.body.detail.map((d: { loc: unknown[] }) => d.loc.join('.'));
    expect(locs).toEqual(
      expect.arrayContaining([
        'body.lat',
        'body.lng',
        'body.name',
        'body.address',
        'body.zoom',
        'body.colour',
      ]),
    );
    expect(res.body.detail.find((d: { loc: string[] }) => d.loc[1] === 'address')).toEqual({
      loc: ['body', 'address'],
      msg: 'Field required',
      type: 'missing',
    });
    expect((await t.request('GET', PATH, { token: u.token })).body).toEqual([]);
  });

  it.each([
    ['a JSON array', [1, 2]],
    ['null', 'null'],
    ['a number', '42'],
  ])('answers 422 (not 500) for %s as body', async (_what, body) => {
    const res = await t.request('POST', PATH, { token: newUser().token, body });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body']);
  });

  it('counts characters as code points, as the schema maxLength does: 120 emoji make a name of 120', async () => {
    const u = newUser();
    const named = (name: string) => t.request('POST', PATH, { token: u.token, body: { ...home, name } });
    const ok = await named('😀'.repeat(120));
    expect(ok.status).toBe(200);
    expect(ok.body[0].name).toBe('😀'.repeat(120));
    const long = await named('😀'.repeat(121));
    expect(long.status).toBe(422);
    expect(long.body.detail).toEqual([
      { loc: ['body', 'name'], msg: 'String should have 1 to 120 characters', type: 'invalid_string' },
    ]);
    expect((await named('é'.repeat(121))).status).toBe(422);
  });

  it('answers 400 for malformed JSON and 413 for an oversized body, in the error shape', async () => {
    const u = newUser();
    const bad = await t.request('POST', PATH, { token: u.token, body: '{"lat": ' });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'bad_request', message: 'the body is not valid JSON', code: 400 });
    // Valid JSON with a prototype key is refused too, and told so (it was "not valid JSON").
    for (const body of ['{"name":"a","__proto__":{"x":1}}', '{"position":{"__proto__":{"lat":1}}}']) {
      const proto = await t.request('POST', PATH, { token: u.token, body });
      expect(proto.status).toBe(400);
      expect(proto.body).toEqual({
        error: 'bad_request',
        message: 'the body holds a "__proto__" key, which the service does not take',
        code: 400,
      });
    }
    const huge = await t.request('POST', PATH, {
      token: u.token,
      body: { ...home, details: 'x'.repeat(300_000) },
    });
    expect(huge.status).toBe(413);
    expect(huge.body).toMatchObject({ error: 'payload_too_large', code: 413 });
  });

  it('requires a valid token: 401 in the ErrorResponse shape', async () => {
    const none = await t.request('GET', PATH);
    expect(none.status).toBe(401);
    expect(none.body).toEqual({
      error: 'unauthorized',
      message: 'a valid bearer token is required',
      code: 401,
    });
    const forged = jwt.sign({ sub: randomUUID(), roles: ['client'] }, 'not-the-secret');
    expect((await t.request('POST', PATH, { token: forged, body: home })).status).toBe(401);
    const expired = jwt.sign(
      { sub: randomUUID(), roles: ['client'], exp: Math.floor(Date.now() / 1000) - 60 },
      'test-secret',
    );
    const res = await t.request('GET', PATH, { token: expired });
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/invalid or expired/);
    const noSub = jwt.sign({ roles: ['client'] }, 'test-secret');
    expect((await t.request('GET', PATH, { token: noSub })).status).toBe(401);
  });

  it('replays the first answer for a repeated Idempotency-Key and refuses its reuse for another body', async () => {
    const u = newUser();
    const headers = { 'Idempotency-Key': randomUUID() };
    const first = await t.request('POST', PATH, { token: u.token, body: home, headers });
    const again = await t.request('POST', PATH, { token: u.token, body: home, headers });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await t.request('GET', PATH, { token: u.token })).body).toHaveLength(1);
    const reused = await t.request('POST', PATH, { token: u.token, body: office, headers });
    expect(reused.status).toBe(422);
    expect(reused.body).toMatchObject({ error: 'idempotency_key_reused', code: 422 });
    // Keys are per user: another user's identical key is a new request.
    const other = newUser();
    expect((await t.request('POST', PATH, { token: other.token, body: office, headers })).body).toHaveLength(
      1,
    );
  });

  it('answers 409 to a repeat that arrives while the first request is still running', async () => {
    const u = newUser();
    const headers = { 'Idempotency-Key': randomUUID() };
    const results = await Promise.all(
      Array.from({ length: 5 }, () => t.request('POST', PATH, { token: u.token, body: home, headers })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    expect((await t.request('GET', PATH, { token: u.token })).body).toHaveLength(1);
  });

  it('pages the list with limit and offset and rejects a bad limit', async () => {
    const u = newUser();
    for (const name of ['One', 'Two', 'Three'])
      await t.request('POST', PATH, { token: u.token, body: { ...home, name } });
    const page = await t.request('GET', `${PATH}?limit=2&offset=1`, { token: u.token });
    expect(page.body.map((a: { name: string }) => a.name)).toEqual(['Two', 'One']);
    const bad = await t.request('GET', `${PATH}?limit=1000`, { token: u.token });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['query', 'limit']);
  });

  it('lists all addresses without a limit, the first (default) one too, as POST does', async () => {
    const u = newUser();
    let created: { name: string; isDefault: boolean }[] = [];
    for (let i = 0; i < 55; i++)
      created = (await t.request('POST', PATH, { token: u.token, body: { ...home, name: `A${i}` } })).body;
    expect(created).toHaveLength(55);
    const list = await t.request('GET', PATH, { token: u.token });
    expect(list.status).toBe(200);
    expect(list.body).toEqual(created);
    expect(list.body.at(-1)).toMatchObject({ name: 'A0', isDefault: true });
  });

  it('carries request ids and answers unknown routes and methods in the error shape', async () => {
    const res = await t.request('GET', '/api/v1/nope', { headers: { 'X-Request-Id': 'trace-123' } });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-request-id')).toBe('trace-123');
    expect(res.body).toMatchObject({ error: 'not_found', code: 404 });
    const del = await t.request('DELETE', PATH, { token: newUser().token });
    expect(del.status).toBe(405);
    expect(del.body).toMatchObject({ error: 'method_not_allowed', code: 405 });
  });

  it('records who created an address in the event metadata', async () => {
    const u = newUser();
    await t.request('POST', PATH, { token: u.token, body: home, headers: { 'X-Request-Id': 'audit-1' } });
    const { events } = await t.system.deps.store.readStream(`addresses-${u.id}`);
    expect(events.map((e) => e.type)).toEqual(['AddressAdded', 'DefaultAddressChanged']);
    expect(events[0]!.metadata).toMatchObject({
      requestId: 'audit-1',
      actor: { userId: u.id, role: 'client' },
    });
  });

  it('reports health, and a projection stopped by a poison event as degraded', async () => {
    const ok = await t.request('GET', '/healthz');
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: 'ok', eventStore: { status: 'ok' }, database: { status: 'ok' } });
    expect(ok.body.projections).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'addresses', state: 'running' })]),
    );
    // One instance: it owns every process manager and sweeper, and says so.
    expect(ok.body.instance).toEqual(expect.any(String));
    expect(ok.body.leases.map((l: { name: string }) => l.name)).toEqual([
      'blob-cleanup',
      'booking-process',
      'mail',
      'notification-process',
      'payment-expiry',
      'session-reminders',
      'webhooks',
    ]);
    for (const lease of ok.body.leases) expect(lease).toMatchObject({ owner: ok.body.instance, mine: true });
    expect(ok.body.projections.find((p: { name: string }) => p.name === 'email-process')).toMatchObject({
      state: 'running',
      lease: { name: 'mail', held: true },
    });
    // An event the read model cannot store (no fields) stops the projection loudly instead of skipping it.
    await t.system.deps.store.append(`addresses-${randomUUID()}`, [
      { type: 'AddressAdded', data: { addressId: randomUUID(), userId: randomUUID() } },
    ]);
    let health = await t.request('GET', '/healthz');
    for (let i = 0; i < 50 && health.status === 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      health = await t.request('GET', '/healthz');
    }
    expect(health.status).toBe(503);
    expect(health.body.status).toBe('degraded');
    // Anyone sees that it failed; why, and on which event (a stream named after a user), only an admin.
    const shown = health.body.projections.find((p: { name: string }) => p.name === 'addresses');
    expect(shown).toMatchObject({ name: 'addresses', state: 'failed' });
    expect(shown.error).toBeUndefined();
    expect(shown.failedEvent).toBeUndefined();
    const admin = await t.request('GET', '/healthz', { token: t.token(randomUUID(), ['admin']) });
    expect(admin.status).toBe(503);
    expect(admin.body.projections.find((p: { name: string }) => p.name === 'addresses')).toMatchObject({
      name: 'addresses',
      state: 'failed',
      error: expect.any(String),
      failedEvent: { type: 'AddressAdded' },
    });
  });
});

describe('removing an address and choosing the default (added)', () => {
  let t: TestSystem;
  beforeAll(async () => {
    t = await startTestSystem();
  });
  afterAll(() => t.close());

  const newUser = () => {
    const id = randomUUID();
    return { id, token: t.token(id, ['client']) };
  };
  const save = async (token: string, body: Record<string, unknown>) =>
    (await t.request('POST', PATH, { token, body })).body[0].id as string;
  const names = (list: { name: string; isDefault: boolean }[]) => list.map((a) => [a.name, a.isDefault]);

  it('DELETE removes the address and answers the list left; GET agrees at once', async () => {
    const u = newUser();
    await save(u.token, home);
    const officeId = await save(u.token, office);
    const res = await t.request('DELETE', `${PATH}/${officeId}`, { token: u.token });
    expect(res.status).toBe(200);
    expect(names(res.body)).toEqual([['Home', true]]);
    expect((await t.request('GET', PATH, { token: u.token })).body).toEqual(res.body);
  });

  it('passes a removed default to the newest address left, so there is still exactly one', async () => {
    const u = newUser();
    const homeId = await save(u.token, home);
    await save(u.token, office);
    await save(u.token, { ...office, name: 'Gym' });
    const res = await t.request('DELETE', `${PATH}/${homeId}`, { token: u.token });
    expect(names(res.body)).toEqual([
      ['Gym', true],
      ['Office', false],
    ]);
    expect(names((await t.request('GET', PATH, { token: u.token })).body)).toEqual(names(res.body));
    // The last one goes too: no address, no default; the next one saved is the default again.
    for (const a of res.body) await t.request('DELETE', `${PATH}/${a.id}`, { token: u.token });
    expect((await t.request('GET', PATH, { token: u.token })).body).toEqual([]);
    expect(names((await t.request('POST', PATH, { token: u.token, body: office })).body)).toEqual([
      ['Office', true],
    ]);
  });

  it("answers 404 address_not_found for an unknown, removed or another user's address, and changes nothing", async () => {
    const u = newUser();
    const other = newUser();
    const theirs = await save(other.token, home);
    const mine = await save(u.token, home);
    await t.request('DELETE', `${PATH}/${mine}`, { token: u.token });
    for (const id of [randomUUID(), mine, theirs])
      for (const [method, path] of [
        ['DELETE', `${PATH}/${id}`],
        ['PUT', `${PATH}/${id}/default`],
      ] as const) {
        const res = await t.request(method, path, { token: u.token });
        expect([method, res.status, res.body]).toEqual([
          method,
          404,
          { error: 'address_not_found', message: 'no such address of yours', code: 404 },
        ]);
      }
    expect(names((await t.request('GET', PATH, { token: other.token })).body)).toEqual([['Home', true]]);
    const malformed = await t.request('DELETE', `${PATH}/not-a-uuid`, { token: u.token });
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail[0].loc).toEqual(['path', 'address_id']);
    expect((await t.request('DELETE', `${PATH}/${theirs}`)).status).toBe(401);
  });

  it('PUT .../default moves the default; asking again for the default it has changes nothing', async () => {
    const u = newUser();
    const homeId = await save(u.token, home);
    await save(u.token, { ...office, isDefault: true });
    const res = await t.request('PUT', `${PATH}/${homeId.toUpperCase()}/default`, { token: u.token });
    expect(res.status).toBe(200);
    expect(names(res.body)).toEqual([
      ['Office', false],
      ['Home', true],
    ]);
    // PUT takes no Idempotency-Key (docs/api.md): the header is ignored, the same key on another id moves it.
    const headers = { 'idempotency-key': randomUUID() };
    await t.request('PUT', `${PATH}/${homeId}/default`, { token: u.token, headers });
    const officeId = res.body[0].id;
    const moved = await t.request('PUT', `${PATH}/${officeId}/default`, { token: u.token, headers });
    expect(moved.headers.get('idempotent-replayed')).toBeNull();
    expect(names(moved.body)).toEqual([
      ['Office', true],
      ['Home', false],
    ]);
    expect((await t.request('GET', PATH, { token: u.token })).body).toEqual(moved.body);
    // Moves recorded: Home (first address), Office (created so), Home, Office; the repeat recorded nothing.
    const { events } = await t.system.deps.store.readStream(`addresses-${u.id}`);
    expect(events.map((e) => e.type)).toEqual([
      'AddressAdded',
      'DefaultAddressChanged',
      'AddressAdded',
      'DefaultAddressChanged',
      'DefaultAddressChanged',
      'DefaultAddressChanged',
    ]);
  });

  it('frees a place among the 100, and a DELETE repeated with its Idempotency-Key answers the same', async () => {
    const u = newUser();
    let last = '';
    for (let i = 0; i < 100; i++) last = await save(u.token, { ...home, name: `A${i}` });
    expect((await t.request('POST', PATH, { token: u.token, body: office })).status).toBe(409);
    const headers = { 'idempotency-key': randomUUID() };
    const first = await t.request('DELETE', `${PATH}/${last}`, { token: u.token, headers });
    const again = await t.request('DELETE', `${PATH}/${last}`, { token: u.token, headers });
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(again.body).toEqual(first.body);
    expect(first.body).toHaveLength(99);
    expect((await t.request('POST', PATH, { token: u.token, body: office })).status).toBe(200);
  });
});
