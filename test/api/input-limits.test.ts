import { randomUUID } from 'node:crypto';
import { MAX_SERVICE_TYPES } from '../../commands/services/codecs';
import { MAX_LANGUAGES } from '../../commands/users/codecs';
import { marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * Small input rules that were missing: a profile's time zone is stored by its canonical name whatever case
 * it came in, a language cannot hold the comma endpoint 12 joins the list with, an e-mail channel's
 * address has the 254-character limit a profile e-mail has, and a service has a bounded list of types.
 */

let t: TestSystem;
let m: ReturnType<typeof marketplace>;
beforeAll(async () => {
  t = await startTestSystem({ clock: () => new Date('2026-12-01T08:00:00Z') });
  m = marketplace(t);
});
afterAll(() => t?.close());

const putUser = (id: string, body: Record<string, unknown>) =>
  t.request('PUT', `/api/v1/users/${id}`, { token: m.service(), body });
const basics = { firstName: 'A', lastName: 'B', email: 'a@b.co', type: 'client' };

it("stores a profile's time zone by its canonical name, whatever case it was sent in", async () => {
  const id = randomUUID();
  const res = await putUser(id, { ...basics, timezone: 'europe/berlin' });
  expect(res.status).toBe(200);
  expect(res.body.timezone).toBe('Europe/Berlin');
  const upper = await putUser(id, { timezone: 'AMERICA/ARGENTINA/BUENOS_AIRES' });
  expect(upper.body.timezone).toBe('America/Argentina/Buenos_Aires');
  // IANA's current names, not the older ones ICU keeps (Europe/Kiev, Asia/Calcutta).
  expect((await putUser(id, { timezone: 'Europe/Kyiv' })).body.timezone).toBe('Europe/Kyiv');
  expect((await putUser(id, { timezone: 'Asia/Calcutta' })).body.timezone).toBe('Asia/Kolkata');
  const utc = await putUser(id, { timezone: 'utc' });
  expect(utc.body.timezone).toBe('UTC');
  expect((await putUser(id, { timezone: 'Europe/Nowhere' })).status).toBe(422);
});

it('refuses a language with a comma (the User view joins the list with commas)', async () => {
  const id = randomUUID();
  const res = await putUser(id, { ...basics, languages: ['en', 'pt,br'] });
  expect(res.status).toBe(422);
  expect(res.body.detail[0].loc).toEqual(['body', 'languages', 1]);
  expect((await putUser(id, { ...basics, languages: ['en', 'pt-BR'] })).status).toBe(200);
});

it(`refuses more than ${MAX_LANGUAGES} languages on a profile (20,000 were taken)`, async () => {
  const id = randomUUID();
  const many = Array.from({ length: MAX_LANGUAGES + 1 }, (_, i) => `lang-${i}`);
  const res = await putUser(id, { ...basics, languages: many });
  expect(res.status).toBe(422);
  expect(res.body.detail).toEqual([
    {
      loc: ['body', 'languages'],
      msg: `languages should hold at most ${MAX_LANGUAGES} entries`,
      type: 'invalid_languages',
    },
  ]);
  const fits = await putUser(id, { ...basics, languages: many.slice(0, MAX_LANGUAGES) });
  expect(fits.status).toBe(200);
  expect(fits.body.languages).toHaveLength(MAX_LANGUAGES);
});

it('refuses an e-mail channel address over 254 characters, like a profile e-mail', async () => {
  const user = await m.client();
  const long = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.example`; // 266
  expect(long.length).toBeGreaterThan(254);
  const res = await t.request('POST', '/api/v1/notification/channel', {
    token: user.token,
    body: { type: 'email', address: long },
  });
  expect(res.status).toBe(422);
  expect(res.body.detail[0].loc).toEqual(['body', 'address']);
  const fits = `${'a'.repeat(64)}@${'b'.repeat(63)}.example`;
  const ok = await t.request('POST', '/api/v1/notification/channel', {
    token: user.token,
    body: { type: 'email', address: fits },
  });
  expect(ok.status).toBe(200);
});

it(`a service has at most ${MAX_SERVICE_TYPES} service types (422 beyond, on create and edit)`, async () => {
  const coach = await m.coach();
  const types = (n: number) => Array.from({ length: n }, (_, i) => `type ${i}`);
  const body = { name: 'S', price: 10, priceCurrency: 'EUR', sessionMinutesDuration: 60 };
  const tooMany = await t.request('POST', '/api/v1/coach/services', {
    token: coach.token,
    body: { ...body, serviceTypes: types(MAX_SERVICE_TYPES + 1) },
  });
  expect(tooMany.status).toBe(422);
  expect(tooMany.body.detail[0].loc).toEqual(['body', 'serviceTypes']);
  const created = await t.request('POST', '/api/v1/coach/services', {
    token: coach.token,
    body: { ...body, serviceTypes: types(MAX_SERVICE_TYPES) },
  });
  expect(created.status).toBe(200);
  const edit = await t.request('PUT', `/api/v1/coach/services/${created.body.id}`, {
    token: coach.token,
    body: { serviceTypes: types(MAX_SERVICE_TYPES + 1) },
  });
  expect(edit.status).toBe(422);
});
