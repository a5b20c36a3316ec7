import { randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { ROLES, guardOf, type Role } from '../../src/http/auth';
import { routers } from '../../src/routes';
import { marketplace } from '../support/marketplace';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * The rule "bad input always gets a clear 4xx in the documented error shape, never a 500", checked on
 * every route the routers declare (enumerated from the routers themselves, so a new route is covered
 * without editing this file). Each request below is bad for every caller: the answer must be a 4xx with
 * `{error, message, code}` or, for 422, `{detail: [{loc, msg, type}]}`.
 */

/** Routes in src/routes.ts when this test was written; the enumeration must find at least these. */
const KNOWN_ROUTE_COUNT = 51;

const NOW = new Date('2026-12-01T08:00:00Z');
const SLOT = '2026-12-02T10:00:00';
const OTHER_SLOT = '2026-12-02T12:00:00';

interface Route {
  method: string;
  path: string;
  /** Roles the guard admits: null public, [] any authenticated caller. */
  roles: readonly Role[] | null;
}

/**
 * How a route takes its body. A route without a spec (a new one) still gets every battery that is bad for
 * any route: tokens, roles, path parameters, an unknown method, malformed and non-JSON bodies.
 */
type BodyKind = 'required' | 'optional' | 'none' | 'multipart';

interface Spec {
  body?: BodyKind;
  /** A body that passes validation; each of its fields is sent again with wrong types. */
  valid?: Record<string, unknown>;
  /** Query parameters the route reads, with bad values for each. */
  query?: Record<string, string[]>;
  /** The route creates what an unknown id names (an upsert): an unknown id is not bad input there. */
  createsUnknown?: boolean;
  /** Caller able to act on the real ids (default: a user with the guard's first role). */
  caller?: () => string;
  /** Free-form JSON fields (any shape, bounded depth and size): each is sent too deep and too large. */
  freeForm?: string[];
  /** Optional fields where `null` is read as not sent (docs/api.md): null is no wrong value there. */
  nullable?: string[];
  /** Further bodies bad for this route (e.g. dates out of range), sent with the valid fields. */
  extra?: [string, Record<string, unknown>][];
  /** The route takes an Idempotency-Key: hostile bodies are sent with one too (its hash walks the body). */
  idempotent?: boolean;
}

interface Case {
  route: Route;
  what: string;
  /** When set, the answer must be a 422 naming exactly this loc. */
  loc?: (string | number)[];
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | FormData;
}

interface Answer {
  status: number;
  body: unknown;
}

const PAGING = {
  limit: ['abc', '0', '-1', '1.5', '201', '1e3', '99999999999999999999', ''],
  offset: ['-1', 'x', '1000001', '99999999999999999999'],
};
const RANGE = {
  from_date: [
    '2026-02-30',
    '2026-13-01',
    '2026-00-10',
    '20261201',
    'yesterday',
    '9999-99-99',
    '',
    '0000-01-01',
    '1899-12-31',
    '2201-01-01',
    '2026-12-01%00',
    '%ED%A0%80',
  ],
  to_date: ['2026-11-30', '2027-12-01', '2026-02-31', 'x'],
  address_id: ['x', '%00'],
  user: ['not-a-uuid'],
};
const AT = {
  at: [
    'garbage',
    '2026-02-30T10:00:00Z',
    '2026-13-01T00:00:00Z',
    '1e309',
    '',
    '0000-01-01T00:00:00Z',
    '-000001-01-01T00:00:00Z',
    '2026-12-01T00:00:00Z%00',
  ],
};

const BAD_PARAMS: [string, string][] = [
  ['x', 'x'],
  ['traversal', '..%2F..%2Fetc%2Fpasswd'],
  ['raw traversal', '../../etc'],
  ['300 chars', 'a'.repeat(300)],
  ['NUL', '%00'],
  ['bad escape', '%ZZ'],
  ['bad UTF-8', '%E0%A4%A'],
  ['uuid with newline', `${randomUUID()}%0A`],
  ['uuid without dashes', randomUUID().replace(/-/g, '')],
  ['number', '12345'],
];

/** Markers replaced, in the JSON text, by literals JSON.stringify cannot produce (1e309 parses to Infinity). */
const RAW = { huge: '__1E309__', negZero: '__NEG0__' };
const rawJson = (v: unknown) =>
  JSON.stringify(v).replaceAll(`"${RAW.huge}"`, '1e309').replaceAll(`"${RAW.negZero}"`, '-0');

/** Values of another type than `v` (or out of every bound), for a field that holds `v`. */
function wrongValues(v: unknown): unknown[] {
  const long = 'x'.repeat(100_000);
  if (typeof v === 'string') return [123, true, null, [], {}, long, RAW.huge, RAW.negZero, [v]];
  if (typeof v === 'number') return ['1', 'NaN', true, null, [], {}, RAW.huge, '-1e309', long];
  if (typeof v === 'boolean') return ['true', 1, null, [], {}];
  if (Array.isArray(v)) return ['x', {}, null, 1, [null], [long], [RAW.huge]];
  return ['x', [], 1, null, RAW.huge];
}

const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
/** A JSON object n levels deep, as a value (built without recursion). */
const deepValue = (n: number) => {
  let v: unknown = 1;
  for (let i = 0; i < n; i++) v = { a: v };
  return v;
};
/** Strings PostgreSQL cannot store or UTF-8 cannot encode: each must be a 422 at the field's loc. */
const HOSTILE_TEXT: [string, string][] = [
  ['NUL', 'a\u0000b'],
  ['lone high surrogate', 'x\ud800'],
  ['lone low surrogate', '\udc00y'],
  ['reversed surrogate pair', '\udc00\ud800'],
];
const deepArray = (n: number) => '['.repeat(n) + ']'.repeat(n);

function expectedShape(a: Answer): string | null {
  if (!(a.status >= 400 && a.status < 500)) return `status ${a.status} is not a 4xx`;
  const b = a.body as Record<string, unknown> | null;
  if (typeof b !== 'object' || b === null || Array.isArray(b)) return 'body is not a JSON object';
  const keys = Object.keys(b).sort().join(',');
  if (a.status === 422 && keys === 'detail') {
    const detail = b.detail;
    if (!Array.isArray(detail) || detail.length === 0) return 'detail is not a non-empty array';
    for (const d of detail as Record<string, unknown>[]) {
      if (typeof d !== 'object' || d === null || Object.keys(d).sort().join(',') !== 'loc,msg,type')
        return 'a detail entry is not {loc, msg, type}';
      if (
        !Array.isArray(d.loc) ||
        d.loc.length === 0 ||
        !d.loc.every((l) => typeof l === 'string' || typeof l === 'number') ||
        !['body', 'path', 'query', 'header'].includes(d.loc[0] as string)
      )
        return 'a detail loc is not [body|path|query|header, ...]';
      if (typeof d.msg !== 'string' || !d.msg || typeof d.type !== 'string' || !d.type)
        return 'a detail msg or type is not a non-empty string';
    }
    return null;
  }
  if (keys !== 'code,error,message') return `body keys are {${keys}}, not {error, message, code}`;
  if (typeof b.error !== 'string' || !/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/.test(b.error))
    return 'error is not a snake_case string';
  if (typeof b.message !== 'string' || !b.message) return 'message is not a non-empty string';
  if (b.code !== a.status) return `code ${String(b.code)} differs from status ${a.status}`;
  return null;
}

/** A 422 whose detail names `loc` (hostile text is refused at the field that holds it). */
function locProblem(a: Answer, loc: (string | number)[]): string | null {
  if (a.status !== 422) return `status ${a.status}, expected 422 at ${JSON.stringify(loc)}`;
  const detail = (a.body as { detail: { loc: unknown[] }[] }).detail;
  return detail.some((d) => JSON.stringify(d.loc) === JSON.stringify(loc))
    ? null
    : `no detail at ${JSON.stringify(loc)}`;
}

let t: TestSystem;
const routes: Route[] = [];
const cases: Case[] = [];
/** Routes the specs below describe; each must still exist (a renamed route would lose its deeper checks). */
const specKeys: string[] = [];

beforeAll(async () => {
  t = await startTestSystem({ clock: () => NOW });
  const m = marketplace(t);

  for (const router of routers(t.system.deps))
    for (const layer of router.stack)
      for (const method of layer.methods)
        // HEAD runs the GET handler (koa-router adds it); OPTIONS is answered by allowedMethods.
        if (method !== 'HEAD' && typeof layer.path === 'string')
          routes.push({ method, path: layer.path, roles: guardOf(layer.stack) });

  // A small marketplace: a coach with an approved service, a client with a booking (session, payment).
  const coach = await m.coach();
  const serviceId = await m.offering(coach);
  const client = await m.client();
  const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
    token: client.token,
    body: { slots: [SLOT] },
  });
  if (booked.status !== 200) throw new Error(`booking: ${booked.status} ${JSON.stringify(booked.body)}`);
  const session = booked.body[0] as { id: string; paymentId: string; groupId: string };

  const as = (role: Role) => () => t.token(randomUUID(), [role]);
  const real: Record<string, string> = {
    service_id: serviceId,
    coach_id: coach.id,
    session_id: session.id,
    payment_id: session.paymentId,
    group_id: session.groupId,
    user_id: client.id,
    client_id: client.id,
  };
  const specs: Record<string, Spec> = {
    'PUT /api/v1/coach/schedule': {
      body: 'required',
      valid: { timezone: 'Europe/Berlin', weekly: { monday: [{ start: '09:00', end: '17:00' }] } },
      caller: () => coach.token,
    },
    'POST /api/v1/service/:service_id': {
      body: 'required',
      valid: { slots: [OTHER_SLOT], method: 'card', orderDescription: 'x', position: { lat: 1, lng: 2 } },
      caller: () => client.token,
      freeForm: ['card'],
      nullable: ['method', 'orderDescription', 'position'],
      idempotent: true,
      extra: [
        ['slot in year 0', { slots: ['0000-12-02T10:00:00'] }],
        ['slot in 1899', { slots: ['1899-12-02T10:00:00'] }],
        ['slot in 2201', { slots: ['2201-12-02T10:00:00'] }],
        ['position 1e308', { position: { lat: 1e308, lng: -1e308 } }],
      ],
    },
    'POST /api/v1/session/:session_id/approve': { body: 'none', caller: () => coach.token, idempotent: true },
    'POST /api/v1/session/:session_id/complete': {
      body: 'none',
      caller: () => coach.token,
      idempotent: true,
    },
    'POST /api/v1/session/:session_id/decline': {
      valid: { reason: 'r' },
      nullable: ['reason'],
      caller: () => coach.token,
      idempotent: true,
    },
    'POST /api/v1/session/:session_id/cancel': {
      valid: { reason: 'r' },
      nullable: ['reason'],
      caller: () => client.token,
      idempotent: true,
    },
    'POST /api/v1/session/:session_id/dispute': {
      body: 'required',
      valid: { reason: 'r' },
      caller: () => client.token,
      idempotent: true,
    },
    'POST /api/v1/session/:session_id/review': {
      body: 'required',
      valid: { rating: 5, comment: 'c' },
      nullable: ['comment'],
      caller: () => client.token,
      idempotent: true,
    },
    'GET /api/v1/session/:session_id': { caller: () => client.token },
    'GET /api/v1/sessions': {
      query: {
        ...PAGING,
        state: ['pending', 'new,', ',', ''],
        as: ['admin', ''],
        from: ['tomorrow', '2026-02-30T10:00:00Z', ''],
        to: ['2026-12-01', ''],
      },
    },
    'GET /api/v1/audit/sessions/:session_id/events': { query: AT },
    'GET /api/v1/audit/streams/:stream': { query: { ...AT, revision: ['x', '-1', '1.5', '%00'] } },
    'GET /api/v1/audit/events': {
      query: { from: AT.at, to: AT.at, after: ['x', '-1', '1/2/3', '%00'], stream_prefix: ['a'.repeat(300)] },
    },
    'GET /api/v1/audit/events/:event_id/chain': {},
    'GET /api/v1/service/:service_id/availability': { query: RANGE },
    'GET /api/v1/coach/:coach_id/availability': { query: RANGE },
    'POST /api/v1/nav/addreses': {
      body: 'required',
      valid: { lat: 1, lng: 2, name: 'n', address: 'a', zoom: 3, isDefault: true },
    },
    'GET /api/v1/nav/addreses': { query: PAGING },
    'PUT /api/v1/users/:user_id': {
      valid: {
        firstName: 'A',
        lastName: 'B',
        email: 'a@example.com',
        type: 'client',
        languages: ['en'],
        description: 'd',
      },
      createsUnknown: true,
      extra: [
        ['birthDate in year 0', { birthDate: '0000-01-01' }],
        ['birthDate in 1899', { birthDate: '1899-12-31' }],
        ['experience 1e308', { experience: 1e308 }],
        // Addresses a mail header would read as more (or other) recipients than one.
        ['email naming two mailboxes', { email: 'a,b@example.com' }],
        ['email with a semicolon', { email: 'a;b@example.com' }],
        ['email with quotes', { email: '"a"@example.com' }],
        ['email with a fullwidth comma in its domain', { email: 'x@evil.com\uff0cy.org' }],
      ],
    },
    'POST /api/v1/coach/services': {
      body: 'required',
      valid: { name: 'n', price: 1, priceCurrency: 'EUR', sessionMinutesDuration: 60, promo: true },
      caller: () => coach.token,
      idempotent: true,
      extra: [['price 1e308', { price: 1e308 }]],
    },
    'PUT /api/v1/coach/services/:service_id': {
      valid: { name: 'n', price: 1, serviceTypes: ['x'], groupSession: false },
      caller: () => coach.token,
    },
    'POST /api/v1/admin/services/:service_id/approve': { body: 'none' },
    'POST /api/v1/admin/services/:service_id/reject': { valid: { reason: 'r' }, nullable: ['reason'] },
    'GET /api/v1/coach/client/:client_id': { caller: () => coach.token },
    'GET /api/v1/service/:coach_id/reviews': { query: PAGING },
    'POST /api/v1/payment/private/payment/:payment_id/update': {
      body: 'required',
      valid: { status: 'checkout', providerEventId: 'e', checkout: { a: 1 } },
      freeForm: ['checkout'],
    },
    'POST /api/v1/payment/private/payment/:payment_id/cancel': { body: 'none' },
    'POST /api/v1/payment/private/user/:user_id/update': {
      body: 'required',
      valid: { status: 'checkout', clientSecret: 's' },
    },
    'GET /api/v1/payment/:payment_id': { caller: () => client.token },
    'GET /api/v1/audit/payments/:payment_id/events': { query: AT },
    'POST /api/v1/storage/video': { body: 'multipart' },
    'PUT /api/v1/storage/video/:video_id': { body: 'multipart' },
    'PUT /api/v1/storage/videos/order': { body: 'required', valid: { order: [randomUUID()] } },
    'DELETE /api/v1/storage/video/:video_id': { body: 'none' },
    'POST /api/v1/storage/profile/media': { body: 'multipart' },
    'PUT /api/v1/notifications': { body: 'required', valid: { notifications: [randomUUID()] } },
    'POST /api/v1/notification/event': { body: 'required', valid: { notificationIds: [randomUUID()] } },
    'POST /api/v1/notification/channel': {
      body: 'required',
      valid: { type: 'email', address: 'a@example.com' },
    },
    'POST /api/v1/notification/channel/mailprovider-init': { body: 'none' },
    'GET /api/v1/notifications': { query: { ...PAGING, unread: ['yes', '1', ''] } },
    'GET /api/v1/admin/services': { query: { ...PAGING, status: ['x', 'REVIEW', ''] } },
    'GET /api/v1/admin/emails': { query: { ...PAGING, status: ['x', 'SENT', ''] } },
    'GET /manage/admin/notifications': {
      query: { ...PAGING, user: ['x', '%00'], type: ['', 'x'.repeat(101)] },
    },
    'POST /api/v1/notification/private/email/:user_id/verification': {
      body: 'required',
      valid: { code: '1', link: 'https://example.com/verify' },
      nullable: ['code', 'link'],
    },
    'GET /api/v1/storage/profile/media': { query: { kind: ['', 'media', 'x'.repeat(300)] } },
    'DELETE /api/v1/storage/profile/media/:media_id': { body: 'none' },
    'GET /manage/admin/webhook-deliveries': {
      query: { ...PAGING, user: ['x', '%00'], status: ['', 'sent', 'x'.repeat(101)] },
    },
  };
  for (const tpl of [
    'session/:group_id/booking',
    ...['approve', 'cancel', 'decline', 'dispute'].map((a) => `session/:session_id/${a}`),
  ])
    specs[`POST /api/v1/notification/private/email/:user_id/${tpl}`] = {
      valid: { reason: 'r' },
      nullable: ['reason'],
    };

  const garbageTokens: [string, string][] = [
    ['garbage token', 'Bearer garbage'],
    ['empty bearer', 'Bearer '],
    ['basic scheme', 'Basic dXNlcjpwYXNz'],
    [
      'token signed with another secret',
      `Bearer ${jwt.sign({ sub: randomUUID(), roles: ['admin'] }, 'other')}`,
    ],
    [
      'expired token',
      `Bearer ${jwt.sign({ sub: randomUUID(), roles: ['admin'], exp: 1 }, t.config.jwt.secret!)}`,
    ],
    [
      'alg none token',
      `Bearer ${jwt.sign({ sub: randomUUID(), roles: ['admin'] }, '', { algorithm: 'none' })}`,
    ],
  ];

  specKeys.push(...Object.keys(specs));
  for (const route of routes) {
    const spec = specs[`${route.method} ${route.path}`] ?? {};
    const hasBody = ['POST', 'PUT', 'PATCH'].includes(route.method);
    const kind: BodyKind = spec.body ?? (hasBody && spec.valid ? 'optional' : 'none');
    const names = [...route.path.matchAll(/:(\w+)/g)].map((x) => x[1]!);
    const url = (params: Record<string, string>, query = '') =>
      route.path.replace(/:(\w+)/g, (_, n: string) => params[n] ?? randomUUID()) + query;
    const realParams = Object.fromEntries(names.map((n) => [n, real[n] ?? randomUUID()]));
    const rightRole: Role = route.roles?.[0] ?? 'client';
    const caller = spec.caller ?? as(rightRole);
    const validBody = spec.valid ? rawJson(spec.valid) : kind === 'required' ? '{}' : undefined;
    const json = { 'content-type': 'application/json' };
    const push = (what: string, c: Partial<Case> & { url: string }) =>
      cases.push({ route, what, method: route.method, headers: {}, ...c });
    const authed = (token: string, extra: Record<string, string> = {}) => ({
      authorization: `Bearer ${token}`,
      ...extra,
    });
    // What a caller with the right role would send, apart from the one thing each case makes bad.
    const good = (token = caller()) => ({
      headers: authed(token, validBody !== undefined ? json : {}),
      ...(validBody !== undefined ? { body: validBody } : {}),
    });

    // Authentication and roles. An unknown id keeps public routes' answers a 404 (never a 200).
    const authParams = route.roles === null ? {} : realParams;
    for (const [what, header] of garbageTokens)
      push(what, { url: url(authParams), ...good(), headers: { ...good().headers, authorization: header } });
    if (route.roles !== null) {
      const { authorization: _none, ...noAuth } = good().headers;
      push('no token', { url: url(realParams), ...good(), headers: noAuth });
      push('token without user id', {
        url: url(realParams),
        ...good(),
        headers: {
          ...good().headers,
          authorization: `Bearer ${jwt.sign({ roles: [rightRole] }, t.config.jwt.secret!)}`,
        },
      });
      for (const wrong of ROLES.filter((r) => route.roles!.length && !route.roles!.includes(r)))
        push(`wrong role ${wrong}`, { url: url(realParams), ...good(t.token(randomUUID(), [wrong])) });
    }

    // Path parameters: not uuids, and unknown uuids.
    for (const name of names) {
      for (const [what, value] of BAD_PARAMS)
        push(`path ${name}: ${what}`, { url: url({ ...realParams, [name]: value }), ...good() });
      if (!spec.createsUnknown)
        push(`path ${name}: unknown uuid`, { url: url({ ...realParams, [name]: randomUUID() }), ...good() });
    }

    // A method the path does not have.
    push('method not allowed', { method: 'PATCH', url: url(realParams), ...good() });

    // Headers beyond Node's limit (16 kB in all): answered by the server's clientError handler.
    push('20 kB Authorization header', {
      url: url(realParams),
      ...good(),
      headers: { ...good().headers, authorization: `Bearer ${'x'.repeat(20_000)}` },
    });
    push('40 kB of headers', {
      url: url(realParams),
      ...good(),
      headers: {
        ...good().headers,
        ...Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`x-filler-${i}`, 'y'.repeat(1000)])),
      },
    });

    if (kind === 'required' || kind === 'optional') {
      const bodies: [string, string][] = [
        ['body 0', '0'],
        ['body -0', '-0'],
        ['body 1e309', '1e309'],
        ['body string', '"a string"'],
        ['body "NaN"', '"NaN"'],
        ['body true', 'true'],
        ['body []', '[]'],
        ['body [valid]', `[${validBody ?? '{}'}]`],
        ['body 100k string', JSON.stringify('x'.repeat(100_000))],
        ['body nested 5000 deep', deep(5000)],
        ['body array nested 50000 deep', deepArray(50_000)],
        ['body with an unknown field', rawJson({ ...(spec.valid ?? {}), unknownField: 1 })],
        [
          'body with __proto__',
          `{"__proto__": {"polluted": true}${validBody && validBody !== '{}' ? ',' + validBody.slice(1) : '}'}`,
        ],
        ['body over the JSON limit', JSON.stringify({ x: 'x'.repeat(300_000) })],
      ];
      if (kind === 'required') bodies.push(['body null', 'null'], ['body {}', '{}'], ['no body', '']);
      for (const [k, v] of Object.entries(spec.valid ?? {}))
        for (const w of wrongValues(v).filter((w) => !(w === null && spec.nullable?.includes(k))))
          bodies.push([`field ${k} = ${JSON.stringify(w).slice(0, 40)}`, rawJson({ ...spec.valid, [k]: w })]);
      for (const [what, extra] of spec.extra ?? []) bodies.push([what, rawJson({ ...spec.valid, ...extra })]);
      for (const field of spec.freeForm ?? [])
        bodies.push(
          [
            `free-form ${field} nested 40000 deep`,
            rawJson({ ...spec.valid, [field]: '__DEEP__' }).replace('"__DEEP__"', deep(40_000)),
          ],
          [`free-form ${field} nested 9 deep`, rawJson({ ...spec.valid, [field]: deepValue(9) })],
          [
            `free-form ${field} of 200 kB`,
            rawJson({ ...spec.valid, [field]: { blob: 'x'.repeat(200_000) } }),
          ],
          [
            `free-form ${field} of 17 kB in keys`,
            rawJson({
              ...spec.valid,
              [field]: Object.fromEntries(Array.from({ length: 1700 }, (_, i) => [`key${i}`, 'xxxxx'])),
            }),
          ],
        );
      const idem = spec.idempotent ? [false, true] : [false];
      for (const withKey of idem)
        for (const [what, body] of bodies)
          push(withKey ? `${what} (with an Idempotency-Key)` : what, {
            url: url(realParams),
            headers: authed(caller(), { ...json, ...(withKey ? { 'idempotency-key': randomUUID() } : {}) }),
            ...(body === '' ? {} : { body }),
          });
      // Hostile text in every string of the valid body, nested ones too: a 422 naming that very field.
      const strings: { loc: (string | number)[]; set: (s: string) => unknown }[] = [];
      const collect = (v: unknown, loc: (string | number)[], set: (x: unknown) => unknown) => {
        if (typeof v === 'string') strings.push({ loc, set: (x) => set(x) });
        else if (Array.isArray(v))
          v.forEach((item, i) => collect(item, [...loc, i], (x) => set(v.map((o, j) => (j === i ? x : o)))));
        else if (v && typeof v === 'object')
          for (const [k, item] of Object.entries(v))
            collect(item, [...loc, k], (x) => set({ ...(v as object), [k]: x }));
      };
      collect(spec.valid ?? {}, ['body'], (x) => x);
      for (const { loc, set } of strings)
        for (const [what, text] of HOSTILE_TEXT)
          push(`${what} in ${loc.join('.')}`, {
            url: url(realParams),
            headers: authed(caller(), json),
            body: rawJson(set(text)),
            loc,
          });
      // Hostile text in a key.
      push('NUL in a key', {
        url: url(realParams),
        headers: authed(caller(), json),
        body: rawJson({ ...spec.valid, 'k\u0000': 1 }),
      });
    }
    if (hasBody) {
      // Bodies that are not JSON, or not labelled as JSON.
      const payload = validBody ?? '{"reason":"r"}';
      const labelled: [string, Record<string, string>, string][] = [
        ['malformed JSON', json, '{"a": '],
        ['malformed JSON (trailing comma)', json, '{"a": 1,}'],
        ['text/plain body', { 'content-type': 'text/plain' }, payload],
        ['multipart without boundary', { 'content-type': 'multipart/form-data' }, payload],
        ['multipart with a garbage body', { 'content-type': 'multipart/form-data; boundary=xyz' }, 'garbage'],
        ['form-urlencoded body', { 'content-type': 'application/x-www-form-urlencoded' }, 'a=1&b=2'],
        ['no content type', {}, payload],
      ];
      for (const [what, headers, body] of labelled)
        push(what, { url: url(realParams), headers: authed(caller(), headers), body });
    }
    if (kind === 'multipart') {
      const noFile = new FormData();
      noFile.append('title', 'x');
      const wrongType = new FormData();
      wrongType.append('file', new Blob(['x'], { type: 'text/html' }), 'x.html');
      const unknownField = new FormData();
      unknownField.append('other', new Blob(['x'], { type: 'video/mp4' }), 'x.mp4');
      const longTitle = new FormData();
      longTitle.append('title', 'x'.repeat(201));
      for (const [what, body] of [
        ['multipart without the file', noFile],
        ['multipart file of the wrong type', wrongType],
        ['multipart unknown file field', unknownField],
        ['multipart title over 200 characters', longTitle],
      ] as const)
        push(what, { url: url(realParams), headers: authed(caller()), body });
    }

    // Query parameters of the wrong type, out of range, repeated.
    for (const [name, values] of Object.entries(spec.query ?? {})) {
      for (const v of values)
        push(`query ${name}=${v.slice(0, 30)}`, { url: url(realParams, `?${name}=${v}`), ...good() });
      push(`query ${name} repeated`, { url: url(realParams, `?${name}=1&${name}=2`), ...good() });
    }
    if (spec.query?.from_date)
      push('query range over 62 days', {
        url: url(realParams, '?from_date=2026-12-01&to_date=2027-03-01'),
        ...good(),
      });
  }
}, 60_000);

afterAll(() => t?.close());

async function send(c: Case): Promise<Answer> {
  const res = await fetch(t.baseUrl + c.url, { method: c.method, headers: c.headers, body: c.body });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON: reported as such */
  }
  return { status: res.status, body };
}

it('enumerates every route of the routers', () => {
  expect(routes.length).toBeGreaterThanOrEqual(KNOWN_ROUTE_COUNT);
  // Every route is reached through a URL the server knows (no route is skipped by the enumeration).
  expect(new Set(cases.map((c) => `${c.route.method} ${c.route.path}`)).size).toBe(routes.length);
  const declared = new Set(routes.map((r) => `${r.method} ${r.path}`));
  expect(specKeys.filter((k) => !declared.has(k))).toEqual([]);
});

it('answers every bad request with a 4xx in the documented error shape', async () => {
  const violations: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const c = cases[next++]!;
      const a = await send(c);
      const problem = expectedShape(a) ?? (c.loc ? locProblem(a, c.loc) : null);
      if (problem) {
        const body = typeof c.body === 'string' ? c.body.slice(0, 120) : c.body ? '<FormData>' : '';
        violations.push(
          `${c.route.method} ${c.route.path} [${c.what}]\n  request: ${c.method} ${c.url.slice(0, 160)} ${body}\n` +
            `  answer: ${a.status} ${JSON.stringify(a.body)?.slice(0, 300)}\n  problem: ${problem}`,
        );
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  if (violations.length)
    console.log(`${violations.length} violations of ${cases.length} requests:\n\n${violations.join('\n\n')}`);
  expect(violations).toEqual([]);
}, 120_000);
