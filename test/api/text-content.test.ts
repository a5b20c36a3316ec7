import { randomUUID } from 'node:crypto';
import { type TestSystem } from '../support/system';
import { apiSuite, type Marketplace } from '../support/apiSuite';

/**
 * What a text field must hold beyond its length: a name is more than blanks, and a link shown on the public
 * profile cannot run script (`javascript:`, `data:`), however its scheme is cased or broken up.
 */
let t: TestSystem;
let m: Marketplace;
apiSuite('2026-12-01T08:00:00Z', (system, market) => {
  t = system;
  m = market;
});

// Blanks, and characters that show nothing (zero-width space, a bidi override, a word joiner with a variation
// selector, the Hangul filler): a name of these alone is as empty on the screen.
const BLANKS = ['   ', '\t\n', '\u00a0\u3000', '\u200b', '\u202e', '\u2060\ufe0f', ' \u3164 '];
const fieldsAt = (res: { body: { detail?: { loc: string[] }[] } }) =>
  (res.body.detail ?? []).map((d) => d.loc.join('.'));

describe('a required name of blanks only is 422 at its field', () => {
  it.each(BLANKS)('address name and address %j', async (blank) => {
    const token = t.token(randomUUID(), ['client']);
    const home = { lat: 52.52, lng: 13.405, name: 'Home', address: 'Alexanderplatz 1' };
    for (const field of ['name', 'address']) {
      const res = await t.request('POST', '/api/v1/nav/addreses', {
        token,
        body: { ...home, [field]: blank },
      });
      expect(res.status).toBe(422);
      expect(fieldsAt(res)).toEqual([`body.${field}`]);
    }
    const list = await t.request('GET', '/api/v1/nav/addreses', { token });
    expect(list.body).toEqual([]);
  });

  it.each(BLANKS)("a profile's first and last name and a language %j", async (blank) => {
    const id = randomUUID();
    const base = { firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', type: 'client' };
    for (const [field, value] of [
      ['firstName', blank],
      ['lastName', blank],
      ['languages', ['en', blank]],
    ] as const) {
      const res = await t.request('PUT', `/api/v1/users/${id}`, {
        token: m.service(),
        body: { ...base, [field]: value },
      });
      expect(res.status).toBe(422);
      expect(fieldsAt(res)[0]).toMatch(new RegExp(`^body\\.${field}`));
    }
    expect((await t.request('GET', `/api/v1/coach/client/${id}`, { token: m.admin() })).status).toBe(404);
  });

  it.each(BLANKS)("a service's name and a service type %j, on create and on edit", async (blank) => {
    const coach = await m.coach();
    const service = {
      name: 'Tennis basics',
      price: 40,
      priceCurrency: 'EUR',
      sessionMinutesDuration: 60,
      serviceTypes: ['tennis'],
    };
    for (const body of [
      { ...service, name: blank },
      { ...service, serviceTypes: [blank] },
    ]) {
      const res = await t.request('POST', '/api/v1/coach/services', { token: coach.token, body });
      expect(res.status).toBe(422);
    }
    const id = await m.offering(coach);
    const edit = await t.request('PUT', `/api/v1/coach/services/${id}`, {
      token: coach.token,
      body: { name: blank },
    });
    expect(edit.status).toBe(422);
    expect(fieldsAt(edit)).toEqual(['body.name']);
    const shown = await t.request('GET', `/api/v1/service/${id}`);
    expect(shown.body.name).toBe('Tennis basics');
  });

  it('takes a name with blanks around or inside it as sent', async () => {
    const token = t.token(randomUUID(), ['client']);
    const res = await t.request('POST', '/api/v1/nav/addreses', {
      token,
      body: { lat: 52.52, lng: 13.405, name: ' My home ', address: 'Alexanderplatz 1' },
    });
    expect(res.status).toBe(200);
    expect(res.body[0].name).toBe(' My home ');
  });
});

describe("a profile's links (avatarUrl, mediaUrl, mediaPreviewUrl)", () => {
  const put = (id: string, body: Record<string, unknown>) =>
    t.request('PUT', `/api/v1/users/${id}`, {
      token: m.service(),
      body: { firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', type: 'coach', ...body },
    });

  it.each([
    'javascript:alert(document.cookie)',
    'JavaScript:alert(1)',
    ' javascript:alert(1)',
    'java\tscript:alert(1)',
    'java\nscript:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'vbscript:msgbox(1)',
    'file:///etc/passwd',
    ' '.repeat(100) + 'javascript:alert(1)',
  ])('refuse %j (422 at the field, nothing stored)', async (link) => {
    for (const field of ['avatarUrl', 'mediaUrl', 'mediaPreviewUrl']) {
      const id = randomUUID();
      const res = await put(id, { [field]: link });
      expect(res.status).toBe(422);
      expect(fieldsAt(res)).toEqual([`body.${field}`]);
      expect((await t.request('GET', `/api/v1/coach/${id}/profile`)).status).toBe(404);
    }
  });

  it.each(['', 'https://cdn.example.com/a.png', 'HTTP://cdn.example.com/a.png', '/files/a.png', 'a.png'])(
    'take %j and show it on the public profile',
    async (link) => {
      const id = randomUUID();
      const res = await put(id, { avatarUrl: link, mediaUrl: link });
      expect(res.status).toBe(200);
      expect(res.body.avatarUrl).toBe(link);
      expect(res.body.mediaUrl).toBe(link);
    },
  );
});

it('/openapi.json says it: names have a non-blank pattern, links their rule in a description', async () => {
  const doc = (await (await fetch(`${t.baseUrl}/openapi.json`)).json()) as any;
  const body = (path: string, method: string): any => {
    const s = doc.paths[path][method].requestBody.content['application/json'].schema;
    return s.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s;
  };
  const user = body('/api/v1/users/{user_id}', 'put').properties;
  for (const name of [
    body('/api/v1/nav/addreses', 'post').properties.name,
    body('/api/v1/coach/services', 'post').properties.name,
    user.firstName,
  ])
    expect(name).toMatchObject({
      type: 'string',
      minLength: 1,
      pattern: '[^\\s\\p{Default_Ignorable_Code_Point}]',
    });
  expect(body('/api/v1/coach/services', 'post').properties.serviceTypes.items).toMatchObject({
    pattern: '[^\\s\\p{Default_Ignorable_Code_Point}]',
  });
  // ECMA-262 patterns, compiled with the `u` flag as JSON Schema validators do.
  const visible = new RegExp(user.firstName.pattern, 'u');
  expect(['Ada', ' \u200bA', '\u05d0'].every((n) => visible.test(n))).toBe(true);
  expect(BLANKS.some((n) => visible.test(n))).toBe(false);
  const language = new RegExp(user.languages.items.pattern, 'u');
  expect(['en', 'Swiss German', ' fr '].every((l) => language.test(l))).toBe(true);
  expect(['', '  ', 'en,de', '\u00a0', '\u200b'].some((l) => language.test(l))).toBe(false);
  expect(user.avatarUrl).toMatchObject({
    type: 'string',
    maxLength: 2000,
    description: 'Input should be a path or an http(s) URL of at most 2000 characters',
  });
});
