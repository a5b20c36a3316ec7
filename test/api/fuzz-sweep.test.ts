import jwt from 'jsonwebtoken';
import type { Role } from '../../src/http/auth';
import { marketplace } from '../support/marketplace';
import { answerChecker, type AnswerCheck } from '../support/openapiCheck';
import { startTestSystem, type TestSystem } from '../support/system';

/**
 * A seeded sweep of hostile requests over every operation of /openapi.json. For each operation and each
 * role its security names (anonymous and a client on public reads, a client and a coach where any caller
 * may come), it builds the candidate mutations of a request that would pass (the document's example, or one
 * made from the schemas, on the ids of a small marketplace): path parameters of the wrong shape, query
 * parameters of the wrong type or out of range, repeated or reversed, JSON bodies with each field (nested
 * ones too) replaced by a hostile value, fields missing, doubled or unknown, bodies that are not objects or
 * not JSON, wrong content types and encodings, multipart forms with odd parts and file names, odd headers
 * (ranges, conditions, ids) and tokens with odd claims. A fixed seed picks a few dozen of them per role
 * (QUOTA). Then each operation's passing request goes eight at once per role (one Idempotency-Key where it
 * takes one), and every GET is read back as it is, over what the sweep got stored. Every answer must be below
 * 500, a 4xx in the documented error shape (`{error, message, code}`, or a 422's `{detail: [{loc, msg,
 * type}]}`), and what /openapi.json says the operation answers (test/support/openapiCheck.ts), a request
 * it carried out included. A failure prints each request as a curl command line with the seed.
 * test/api/bad-input.test.ts sends a fixed battery per route; this one follows the document.
 */

const SEED = 0x5eed_f022;
/** Requests per operation and role, split over the kinds of mutation below. */
const QUOTA = { path: 6, query: 8, field: 12, body: 6, form: 6, header: 2, auth: 2 };
const NOW = new Date('2026-12-01T08:00:00Z');
const SLOT = '2026-12-02T10:00:00';

/** mulberry32: a tiny seeded PRNG (the sweep is the same on every run). */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    /** A uuid of nothing (version 4 form), from the seed. */
    uuid() {
      const hex = Array.from({ length: 32 }, () => Math.floor(next() * 16).toString(16)).join('');
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
    },
    /** `n` of `items`, in a seeded order (all of them when there are fewer). */
    pick<T>(items: readonly T[], n: number): T[] {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [copy[i], copy[j]] = [copy[j]!, copy[i]!];
      }
      return copy.slice(0, n);
    },
  };
}
type Rng = ReturnType<typeof prng>;

/** Markers replaced in the JSON text by literals JSON.stringify cannot write. */
const RAW: Record<string, string> = {
  __NEG0__: '-0',
  __1E309__: '1e309',
  __BIGINT__: '9007199254740993',
  __HUGEINT__: '123456789012345678901234567890',
  __NEG_BIGINT__: '-9007199254740993',
  __PROTO__: '{"__proto__":{"polluted":true}}',
  __CONSTRUCTOR__: '{"constructor":{"prototype":{"polluted":true}}}',
};
const rawJson = (v: unknown): string => {
  let text = JSON.stringify(v);
  for (const [marker, literal] of Object.entries(RAW)) text = text.replaceAll(`"${marker}"`, literal);
  return text;
};

/** Values put in place of one field of a body. */
const FIELD_VALUES: [string, unknown][] = [
  ['null', null],
  ['true', true],
  ['0', 0],
  ['-1', -1],
  ['-0', '__NEG0__'],
  ['0.1+0.2', 0.1 + 0.2],
  ['1e308', 1e308],
  ['-1e308', -1e308],
  ['1e309', '__1E309__'],
  ['2^53+1', '__BIGINT__'],
  ['-(2^53+1)', '__NEG_BIGINT__'],
  ['30-digit integer', '__HUGEINT__'],
  ['empty string', ''],
  ['blanks', ' \t\n'],
  ['10k characters', 'x'.repeat(10_000)],
  ['emoji', '😀👩‍👩‍👧‍👦🇩🇪'.repeat(20)],
  ['RTL override', '\u202egnp.exe\u202c'],
  ['Arabic', 'مرحبا بالعالم'],
  ['NUL', 'a\u0000b'],
  ['zero-width space only', '\u200b'],
  ['lone surrogate', 'x\ud800'],
  ['numeric string', '42'],
  ['"NaN"', 'NaN'],
  ['"Infinity"', 'Infinity'],
  ['invalid date', '2026-02-30'],
  ['leap day of a common year', '2026-02-29'],
  ['leap day of a common year, 10:00', '2026-02-29T10:00:00'],
  ['leap day of 2100, 10:00', '2100-02-29T10:00:00'],
  ['year 0', '0000-01-01T00:00:00'],
  ['far future', '9999-12-31T23:59:59'],
  ['hour 24', '2026-12-02T24:00:00'],
  ['time 23:60', '23:60'],
  ['time 24:00', '24:00'],
  ['uuid of nothing', '0f0e0d0c-0000-4000-8000-0000000000ff'],
  ['zone file path', '../../../../etc/passwd'],
  ['zone posixrules', 'posixrules'],
  ['zone Etc/GMT+14', 'Etc/GMT+14'],
  ['zone that skipped a day', 'Pacific/Apia'],
  ['zone of +05:45', 'Asia/Kathmandu'],
  ['zone with a 2-hour DST', 'Antarctica/Troll'],
  ['javascript: URL', 'javascript:alert(1)'],
  ['backslash', '\\'],
  ['LIKE wildcards', '%_%'],
  ['SQL quote', "' OR 1=1--"],
  ['empty array', []],
  ['array of null', [null]],
  ['nested arrays', [[[[]]]]],
  ['empty object', {}],
  ['nested objects', { a: { b: { c: { d: {} } } } }],
  ['object with __proto__', '__PROTO__'],
  ['object with constructor', '__CONSTRUCTOR__'],
  ['array of 10k strings', ['x'.repeat(10_000)]],
  ['500 numbers', Array.from({ length: 500 }, (_, i) => i)],
];

/** Path parameter values, as they go on the wire (already percent-encoded where needed). */
const PATH_VALUES = (rng: Rng): [string, string][] => [
  ['blank', '%20'],
  ['dot', '.'],
  ['encoded dots', '%2e%2e'],
  ['traversal', '..%2f..%2fetc%2fpasswd'],
  ['NUL', '%00'],
  ['NUL after a uuid', `${rng.uuid()}%00`],
  ['2000 characters', 'a'.repeat(2000)],
  ['emoji', '%F0%9F%98%80'],
  ['RTL override', '%E2%80%AE'],
  ['lone surrogate in UTF-8', '%ED%A0%80'],
  ['bad escape', '%G1'],
  ['number', '42'],
  ['negative number', '-1'],
  ['1e308', '1e308'],
  ['uuid of nothing', rng.uuid()],
  ['nil uuid', '00000000-0000-0000-0000-000000000000'],
  ['upper-case uuid of nothing', rng.uuid().toUpperCase()],
  ['uuid in braces', `%7B${rng.uuid()}%7D`],
  ['__proto__', '__proto__'],
  ['constructor', 'constructor'],
  ['JSON', '%7B%22a%22%3A1%7D'],
  ['semicolon parameter', `${rng.uuid()};x=1`],
];

/** Query parameter values for any parameter, percent-encoded. */
const QUERY_VALUES: [string, string][] = [
  ['empty', ''],
  ['word', 'abc'],
  ['-1', '-1'],
  ['0', '0'],
  ['1.5', '1.5'],
  ['-0', '-0'],
  ['1e308', '1e308'],
  ['1e309', '1e309'],
  ['2^53+1', '9007199254740993'],
  ['20 digits', '99999999999999999999'],
  ['NaN', 'NaN'],
  ['Infinity', 'Infinity'],
  ['hex', '0x10'],
  ['padded', '%201%20'],
  ['Arabic-Indic digit', '%D9%A3'],
  ['true', 'true'],
  ['NUL', '%00'],
  ['emoji', '%F0%9F%98%80'],
  ['lone surrogate in UTF-8', '%ED%A0%80'],
  ['bad escape', '%ZZ'],
  ['5000 characters', 'q'.repeat(5000)],
  ['invalid date', '2026-02-30'],
  ['leap day of a common year', '2026-02-29'],
  ['leap day of 2100', '2100-02-29'],
  ['year 0', '0000-01-01'],
  ['far future', '9999-12-31'],
  ['year 275760', '%2B275760-09-13'],
  ['negative year', '-000001-01-01'],
  ['hour 24', '2026-12-01T24:00:00Z'],
  ['leap second', '2026-12-31T23:59:60Z'],
  ['offset +25:00', '2026-12-01T10:00:00%2B25:00'],
  ['13-digit timestamp', '1796112000000'],
  ['ISO week date', '2026-W49-2'],
  ['uuid of nothing', '0f0e0d0c-0000-4000-8000-0000000000ff'],
  ['backslash', '%5C'],
  ['LIKE wildcards', '%25_%25'],
  ['SQL quote', "'%20OR%201=1--"],
  ['commas only', '%2C%2C'],
  ['denormal', '1e-320'],
  ['just past 90', '90.000000001'],
];

/** Content types (and encodings) other than plain JSON, with the body they come with. */
const CONTENT_TYPES: [string, Record<string, string>][] = [
  ['text/plain', { 'content-type': 'text/plain' }],
  ['application/xml', { 'content-type': 'application/xml' }],
  ['form-urlencoded', { 'content-type': 'application/x-www-form-urlencoded' }],
  ['multipart without boundary', { 'content-type': 'multipart/form-data' }],
  ['multipart with a boundary', { 'content-type': 'multipart/form-data; boundary=zz' }],
  ['JSON in UTF-16', { 'content-type': 'application/json; charset=utf-16' }],
  ['JSON with a broken parameter', { 'content-type': 'application/json;;;charset' }],
  ['two content types', { 'content-type': 'application/json, text/plain' }],
  ['*/*', { 'content-type': '*/*' }],
  ['empty content type', { 'content-type': '' }],
  ['JSON said gzip', { 'content-type': 'application/json', 'content-encoding': 'gzip' }],
  ['JSON said compress', { 'content-type': 'application/json', 'content-encoding': 'compress' }],
];

/** Headers with odd values, sent on any operation (conditional and range reads, ids, origins). */
const HEADER_VALUES: [string, Record<string, string>][] = [
  ['Range reversed', { range: 'bytes=5-1' }],
  ['Range -0', { range: 'bytes=-0' }],
  ['Range past 2^64', { range: 'bytes=99999999999999999999-' }],
  ['Range of 500 parts', { range: `bytes=${Array.from({ length: 500 }, (_, i) => `${i}-${i}`).join(',')}` }],
  ['Range in items', { range: 'items=0-1' }],
  ['Range garbage', { range: 'bytes=abc' }],
  ['If-None-Match *', { 'if-none-match': '*' }],
  ['If-None-Match unterminated', { 'if-none-match': '"' }],
  ['If-None-Match of 5000 characters', { 'if-none-match': `"${'e'.repeat(5000)}"` }],
  ['If-Modified-Since garbage', { 'if-modified-since': 'garbage' }],
  [
    'If-Modified-Since of a day that does not exist',
    { 'if-modified-since': 'Sun, 29 Feb 2026 00:00:00 GMT' },
  ],
  ['If-Range garbage', { 'if-range': 'garbage', range: 'bytes=0-1' }],
  ['Accept text/html', { accept: 'text/html' }],
  ['Accept with a bad q', { accept: 'application/json;q=abc, */*;q=-1' }],
  ['Accept-Encoding with odd weights', { 'accept-encoding': 'gzip;q=2, br;q=-1, x;q=NaN' }],
  ['X-Request-Id traversal', { 'x-request-id': '../../x' }],
  ['X-Correlation-Id of 500 characters', { 'x-correlation-id': 'c'.repeat(500) }],
  ['Origin null', { origin: 'null' }],
  ['X-HTTP-Method-Override', { 'x-http-method-override': 'DELETE' }],
];

/** One part of a multipart body, written out by hand (so a failure prints bytes one can send again). */
interface Part {
  name?: string;
  filename?: string;
  type?: string;
  value: string;
  /** The part's whole header block instead of the one made from name, filename and type. */
  raw?: string;
}
const BOUNDARY = 'fuzzBoundary7MA4YWxk';
const multipart = (parts: Part[], boundary = BOUNDARY, end = true) =>
  parts
    .map(
      (p) =>
        `--${boundary}\r\n` +
        (p.raw ??
          `Content-Disposition: form-data${p.name !== undefined ? `; name="${p.name}"` : ''}` +
            `${p.filename !== undefined ? `; filename="${p.filename}"` : ''}\r\n` +
            (p.type !== undefined ? `Content-Type: ${p.type}\r\n` : '')) +
        `\r\n${p.value}\r\n`,
    )
    .join('') + (end ? `--${boundary}--\r\n` : '');

interface Operation {
  method: string;
  path: string;
  op: any;
}

interface Request {
  /** The operation, `METHOD /path` as /openapi.json names it. */
  op: string;
  what: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  /** The bytes sent (a string), or none. */
  body?: string;
}

/** A value the schema takes, for a body field the document gives no example of. */
function sample(schema: any, components: any, ids: Record<string, string>, all = false, depth = 0): unknown {
  if (!schema || depth > 6) return null;
  const inner = (s: any) => sample(s, components, ids, all, depth + 1);
  if (schema.$ref) return inner(components[schema.$ref.split('/').pop()]);
  if (schema.example !== undefined) return schema.example;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  if (schema.anyOf || schema.oneOf) {
    const options = (schema.anyOf ?? schema.oneOf).filter((s: any) => s.type !== 'null');
    return inner(options[0]);
  }
  switch (schema.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const name of all ? Object.keys(schema.properties ?? {}) : (schema.required ?? []))
        out[name] = inner(schema.properties?.[name]);
      return out;
    }
    case 'array':
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => inner(schema.items));
    case 'integer':
    case 'number':
      return schema.minimum !== undefined && schema.minimum > 1 ? schema.minimum : 1;
    case 'boolean':
      return true;
    case 'string':
      if (schema.format === 'uuid') return ids.any!;
      if (schema.format === 'date-time') return '2026-12-02T10:00:00Z';
      if (schema.format === 'date') return '2026-12-02';
      if (schema.format === 'uri') return 'https://example.com/x';
      if (schema.pattern?.includes('T([01]')) return SLOT;
      return 'fuzz';
    default:
      return null;
  }
}

/** Every place in `value` (objects and arrays, nested) and the setter of a new value there. */
function places(value: unknown): { loc: string; set: (x: unknown) => unknown }[] {
  const out: { loc: string; set: (x: unknown) => unknown }[] = [];
  const walk = (v: unknown, loc: string, set: (x: unknown) => unknown) => {
    if (Array.isArray(v))
      v.forEach((item, i) => {
        const at = (x: unknown) => set(v.map((o, j) => (j === i ? x : o)));
        out.push({ loc: `${loc}[${i}]`, set: at });
        walk(item, `${loc}[${i}]`, at);
      });
    else if (v && typeof v === 'object')
      for (const [k, item] of Object.entries(v)) {
        const at = (x: unknown) => set({ ...(v as object), [k]: x });
        out.push({ loc: `${loc}.${k}`, set: at });
        walk(item, `${loc}.${k}`, at);
      }
  };
  walk(value, 'body', (x) => x);
  return out;
}

/** What is wrong with an answer, or null: below 500, and a 4xx in the documented error shape. */
function shapeProblem(status: number, contentType: string | null, body: unknown): string | null {
  if (status >= 500) return `status ${status}`;
  if (status < 400) return null;
  if (!contentType?.startsWith('application/json')) return `a ${status} of content type ${contentType}`;
  const b = body as Record<string, unknown> | null;
  if (typeof b !== 'object' || b === null || Array.isArray(b)) return 'the body is not a JSON object';
  const keys = Object.keys(b).sort().join(',');
  if (status === 422 && keys === 'detail') {
    const detail = b.detail as Record<string, unknown>[];
    if (!Array.isArray(detail) || detail.length === 0) return 'detail is not a non-empty array';
    for (const d of detail) {
      if (typeof d !== 'object' || d === null || Object.keys(d).sort().join(',') !== 'loc,msg,type')
        return 'a detail entry is not {loc, msg, type}';
      const loc = d.loc as unknown[];
      if (
        !Array.isArray(loc) ||
        !['body', 'path', 'query', 'header'].includes(loc[0] as string) ||
        !loc.every((l) => typeof l === 'string' || typeof l === 'number')
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
  if (b.code !== status) return `code ${String(b.code)} differs from status ${status}`;
  return null;
}

let t: TestSystem;
let document: any;
let check: AnswerCheck;
const operations: Operation[] = [];
const requests: Request[] = [];
const readBack: Request[] = [];
/** Each operation's passing request, eight at once per role, after the sweep. */
const bursts: Request[] = [];

beforeAll(async () => {
  t = await startTestSystem({ clock: () => NOW });
  document = await (await fetch(`${t.baseUrl}/openapi.json`)).json();
  check = answerChecker(document);
  const m = marketplace(t);

  // A small marketplace: a coach with an approved service, a client with a booked session and an address.
  const coach = await m.coach();
  const serviceId = await m.offering(coach);
  const client = await m.client();
  const booked = await t.request('POST', `/api/v1/service/${serviceId}`, {
    token: client.token,
    body: { slots: [SLOT] },
  });
  if (booked.status !== 200) throw new Error(`booking: ${booked.status} ${JSON.stringify(booked.body)}`);
  const session = booked.body[0] as { id: string; paymentId: string; groupId: string };
  const addresses = await t.request('POST', '/api/v1/nav/addreses', {
    token: client.token,
    body: { name: 'Home', address: 'Kastanienallee 10, Berlin', lat: 52.5, lng: 13.4 },
  });
  if (addresses.status !== 200) throw new Error(`address: ${addresses.status}`);

  const upload = await fetch(`${t.baseUrl}/api/v1/storage/video`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${coach.token}`,
      'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
    },
    body: multipart([
      { name: 'title', value: 'Serve' },
      { name: 'file', filename: 'serve.mp4', type: 'video/mp4', value: 'v'.repeat(3000) },
    ]),
  });
  const video = (await upload.json()) as { id: string; url: string };
  if (upload.status !== 200) throw new Error(`upload: ${upload.status} ${JSON.stringify(video)}`);

  const rng = prng(SEED);
  const ids: Record<string, string> = {
    service_id: serviceId,
    coach_id: coach.id,
    session_id: session.id,
    payment_id: session.paymentId,
    group_id: session.groupId,
    user_id: client.id,
    client_id: client.id,
    address_id: addresses.body[0].id,
    stream: `session-${session.id}`,
    delivery_id: `delivery-${rng.uuid()}-${client.id}`,
    video_id: video.id,
    key: video.url.slice(video.url.indexOf('/files/') + '/files/'.length),
    file: 'x.ics',
    asset: 'admin.js',
    any: rng.uuid(),
  };
  const tokens: Record<string, () => string> = {
    client: () => client.token,
    coach: () => coach.token,
    admin: () => t.token(rng.uuid(), ['admin']),
    service: () => t.token(rng.uuid(), ['service']),
    auditor: () => t.token(rng.uuid(), ['auditor']),
  };
  const secret = t.config.jwt.secret!;
  const claims = (c: Record<string, unknown>) => `Bearer ${jwt.sign(c, secret, { expiresIn: 3600 })}`;

  for (const [path, ops] of Object.entries(document.paths as Record<string, Record<string, any>>))
    for (const [method, op] of Object.entries(ops))
      operations.push({ method: method.toUpperCase(), path, op });

  for (const { method, path, op } of operations) {
    // The callers: each role the security names; a client and a coach where any caller may come;
    // nobody and a client on public reads.
    const security = (op.security ?? []) as Record<string, string[]>[];
    const isPublic = security.some((s) => Object.keys(s).length === 0);
    const scopes = security.flatMap((s) => s.bearerAuth ?? []);
    const roles: (Role | null)[] = isPublic
      ? [null, 'client']
      : scopes.length
        ? (scopes.slice(0, 2) as Role[])
        : ['client', 'coach'];
    const parameters = (op.parameters ?? []) as { name: string; in: string; schema: any }[];
    const pathParams = parameters.filter((p) => p.in === 'path').map((p) => p.name);
    const queryParams = parameters.filter((p) => p.in === 'query');
    const idempotent = parameters.some((p) => p.in === 'header' && p.name === 'Idempotency-Key');
    const content = op.requestBody?.content ?? {};
    const jsonSchema = content['application/json']?.schema;
    const base =
      jsonSchema &&
      (content['application/json'].example ?? sample(jsonSchema, document.components.schemas, ids));
    const takesBody = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method);

    for (const role of roles) {
      const url = (params: Record<string, string> = {}, query = '') =>
        path.replace(/\{(\w+)\}/g, (_, n: string) => params[n] ?? ids[n] ?? ids.any!) + query;
      const auth = (): Record<string, string> => (role ? { authorization: `Bearer ${tokens[role]!()}` } : {});
      const json = (text: string | undefined): Pick<Request, 'headers' | 'body'> =>
        text === undefined
          ? { headers: auth() }
          : { headers: { ...auth(), 'content-type': 'application/json' }, body: text };
      const baseBody = jsonSchema ? rawJson(base) : undefined;
      const who = role ?? 'anonymous';
      const add = (list: Request[], what: string, r: Omit<Request, 'op' | 'what' | 'method'>) =>
        list.push({ op: `${method} ${path}`, method, what: `${who}: ${what}`, ...r });

      const byPath: Request[] = [];
      for (const name of pathParams)
        for (const [what, value] of PATH_VALUES(rng))
          add(byPath, `path ${name} ${what}`, { url: url({ [name]: value }), ...json(baseBody) });

      const byQuery: Request[] = [];
      for (const p of queryParams) {
        for (const [what, value] of QUERY_VALUES)
          add(byQuery, `query ${p.name} ${what}`, { url: url({}, `?${p.name}=${value}`), ...json(baseBody) });
        add(byQuery, `query ${p.name} repeated`, {
          url: url({}, `?${p.name}=1&${p.name}=2`),
          ...json(baseBody),
        });
        add(byQuery, `query ${p.name} as an array`, { url: url({}, `?${p.name}[]=1`), ...json(baseBody) });
        add(byQuery, `query ${p.name} as an object`, { url: url({}, `?${p.name}[a]=1`), ...json(baseBody) });
        add(byQuery, `query ${p.name} without =`, { url: url({}, `?${p.name}`), ...json(baseBody) });
      }
      // Ranges reversed, far apart, and a day that does not exist in one of them.
      const names = queryParams.map((p) => p.name);
      for (const [from, to] of [
        ['from_date', 'to_date'],
        ['from', 'to'],
      ] as const)
        if (names.includes(from) && names.includes(to)) {
          const dates = from === 'from' ? (d: string) => `${d}T00:00:00Z` : (d: string) => d;
          for (const [what, a, b] of [
            ['reversed', '2026-12-10', '2026-12-01'],
            ['10,000 years apart', '0001-01-01', '9999-12-31'],
            ['ending on a day that does not exist', '2026-12-01', '2027-02-29'],
            ['of one instant', '2026-12-01', '2026-12-01'],
          ])
            add(byQuery, `range ${from}..${to} ${what}`, {
              url: url({}, `?${from}=${dates(a!)}&${to}=${dates(b!)}`),
              ...json(baseBody),
            });
        }
      // Names every object has: a route that reads its query as a plain object must not trip over them.
      for (const name of ['__proto__', 'constructor', 'hasOwnProperty', 'toString', '__proto__[x]'])
        add(byQuery, `query ${name}`, { url: url({}, `?${name}=1`), ...json(baseBody) });
      if (names.includes('lat'))
        add(byQuery, 'lat without lng', { url: url({}, '?lat=52.5'), ...json(baseBody) });
      if (names.includes('limit') && names.includes('offset'))
        add(byQuery, 'limit and offset at their ends', {
          url: url({}, '?limit=200&offset=1000000'),
          ...json(baseBody),
        });

      const byField: Request[] = [];
      const byBody: Request[] = [];
      if (jsonSchema) {
        // The example's places, and those of a body with every field the schema has (nested ones too).
        const full = {
          ...(sample(jsonSchema, document.components.schemas, ids, true) as object),
          ...(base as object),
        };
        const fieldPlaces = places(base);
        for (const p of places(full)) if (!fieldPlaces.some((q) => q.loc === p.loc)) fieldPlaces.push(p);
        const schemaProps = Object.keys(jsonSchema.properties ?? {});
        for (const { loc, set } of fieldPlaces)
          for (const [what, value] of FIELD_VALUES)
            add(byField, `${loc} = ${what}`, { url: url(), ...json(rawJson(set(value))) });
        for (const name of (jsonSchema.required ?? []) as string[]) {
          const { [name]: _gone, ...rest } = base as Record<string, unknown>;
          add(byField, `body.${name} missing`, { url: url(), ...json(rawJson(rest)) });
        }
        add(byField, 'an unknown field', {
          url: url(),
          ...json(rawJson({ ...(base as object), zzUnknown: 1 })),
        });
        const inner = (baseBody ?? '{}').slice(1);
        const withKey = (key: string) => `{${key}${inner === '}' ? '}' : `,${inner}`}`;
        add(byField, '__proto__ key', { url: url(), ...json(withKey('"__proto__":{"isDefault":true}')) });
        add(byField, 'constructor key', { url: url(), ...json(withKey('"constructor":{"prototype":{}}')) });
        add(byField, 'prototype key', { url: url(), ...json(withKey('"prototype":1')) });
        add(byField, 'hasOwnProperty key', { url: url(), ...json(withKey('"hasOwnProperty":1')) });
        add(byField, 'toString key', { url: url(), ...json(withKey('"toString":"x"')) });
        add(byField, 'valueOf key', { url: url(), ...json(withKey('"valueOf":{}')) });
        const first = schemaProps[0];
        if (first) add(byField, `body.${first} twice`, { url: url(), ...json(withKey(`"${first}":null`)) });
      }
      if (takesBody) {
        const payload = baseBody ?? '{"reason":"r"}';
        for (const [what, text] of [
          ['null', 'null'],
          ['an array at the top', `[${payload}]`],
          ['an empty array', '[]'],
          ['a number', '42'],
          ['-0', '-0'],
          ['a string', '"x"'],
          ['true', 'true'],
          ['{}', '{}'],
          ['empty', ''],
          ['only blanks', ' \r\n '],
          ['not JSON', 'hello'],
          ['malformed JSON', '{"a":'],
          ['two JSON values', `${payload}${payload}`],
          ['trailing garbage', `${payload}x`],
          ['a NUL byte in the text', `{"a\u0000":1}`],
          ['a byte-order mark and JSON', `\ufeff${payload}`],
        ] as const)
          add(byBody, `body ${what}`, { url: url(), ...json(text) });
        for (const [what, headers] of CONTENT_TYPES)
          add(byBody, `content type ${what}`, {
            url: url(),
            headers: { ...auth(), ...headers },
            body: headers['content-type']?.startsWith('multipart') ? '--zz\r\ngarbage' : payload,
          });
        add(byBody, 'JSON without a content type', { url: url(), headers: auth(), body: payload });
        if (idempotent) {
          // One key for every body of the operation: the first is kept, the others reuse it with another body.
          const key = `fuzz-${method}-${path}`.replace(/[^\w-]/g, '_').slice(0, 100);
          for (const [what, k] of [
            ['reused', key],
            ['empty', ''],
            ['300 characters', 'k'.repeat(300)],
            ['with spaces', 'a key with spaces'],
          ])
            add(byBody, `Idempotency-Key ${what}`, {
              url: url(),
              ...json(payload),
              headers: { ...json(payload).headers, 'idempotency-key': k! },
            });
        }
      }

      const byForm: Request[] = [];
      const form = content['multipart/form-data'];
      if (form) {
        const props = (form.schema.properties ?? {}) as Record<string, any>;
        const fileType = (name: string) =>
          /video/.test(form.encoding?.[name]?.contentType ?? '') &&
          !/image\/\*,/.test(form.encoding[name].contentType)
            ? 'video/mp4'
            : 'image/png';
        const baseParts: Part[] = Object.entries(props)
          .filter(([name]) => name !== 'preview')
          .map(([name, p]) =>
            p.contentMediaType
              ? {
                  name,
                  filename: `${name}.${fileType(name).split('/')[1]}`,
                  type: fileType(name),
                  value: 'f'.repeat(600),
                }
              : { name, value: p.enum?.[0] ?? 'fuzz' },
          );
        const sendForm = (
          what: string,
          parts: Part[],
          opts: { boundary?: string; header?: string; end?: boolean } = {},
        ) =>
          add(byForm, `multipart ${what}`, {
            url: url(),
            headers: {
              ...auth(),
              'content-type': opts.header ?? `multipart/form-data; boundary=${opts.boundary ?? BOUNDARY}`,
            },
            body: multipart(parts, opts.boundary, opts.end),
          });
        const withPart = (i: number, over: Partial<Part>) =>
          baseParts.map((p, j) => (j === i ? { ...p, ...over } : p));
        baseParts.forEach((part, i) => {
          if (part.filename === undefined)
            for (const [what, value] of FIELD_VALUES)
              sendForm(
                `${part.name} = ${what}`,
                withPart(i, { value: typeof value === 'string' ? value : rawJson(value) }),
              );
          else {
            for (const [what, filename] of [
              ['empty', ''],
              ['traversal', '../../../etc/passwd'],
              ['1000 characters', `${'n'.repeat(1000)}.mp4`],
              ['with NUL', 'a\u0000.mp4'],
              ['Cyrillic and emoji', 'видео😀.mp4'],
              ['with a quote', 'a".mp4'],
              ['with CRLF', 'a\r\nX-Evil: 1.mp4'],
            ])
              sendForm(`${part.name} filename ${what}`, withPart(i, { filename }));
            sendForm(`${part.name} without a filename`, withPart(i, { filename: undefined }));
            for (const type of [
              undefined,
              '',
              'application/x-msdownload',
              'image/svg+xml',
              'video/mp4; charset=utf-16',
              'video/*',
              'video',
            ])
              sendForm(`${part.name} of type ${String(type)}`, withPart(i, { type }));
            sendForm(`${part.name} empty`, withPart(i, { value: '' }));
            sendForm(`${part.name} twice`, [...baseParts, part]);
            sendForm(
              `without ${part.name}`,
              baseParts.filter((_, j) => j !== i),
            );
          }
        });
        sendForm('an unknown text field', [...baseParts, { name: 'zzUnknown', value: '1' }]);
        sendForm('an unknown file field', [
          ...baseParts,
          { name: 'zzFile', filename: 'x.mp4', type: 'video/mp4', value: 'x' },
        ]);
        sendForm('a __proto__ field', [...baseParts, { name: '__proto__', value: '{"polluted":true}' }]);
        sendForm('a constructor file', [
          ...baseParts,
          { name: 'constructor', filename: 'c.png', type: 'image/png', value: 'x' },
        ]);
        sendForm('a part without a name', [...baseParts, { value: 'x' }]);
        sendForm('a part without headers', [...baseParts, { raw: '', value: 'x' }]);
        sendForm('a part of multipart/mixed', [
          ...baseParts,
          {
            raw: 'Content-Disposition: form-data; name="files"\r\nContent-Type: multipart/mixed; boundary=inner\r\n',
            value: '--inner\r\n\r\nx\r\n--inner--',
          },
        ]);
        sendForm('without the closing boundary', baseParts, { end: false });
        sendForm('with a boundary of 200 characters', baseParts, { boundary: 'b'.repeat(200) });
        sendForm('with a quoted boundary', baseParts, {
          header: `multipart/form-data; boundary="${BOUNDARY}"`,
        });
        sendForm('with another boundary than the header', baseParts, {
          header: 'multipart/form-data; boundary=other',
        });
        sendForm('with a charset', baseParts, {
          header: `multipart/form-data; boundary=${BOUNDARY}; charset=utf-16`,
        });
        sendForm('only the closing boundary', []);
      }

      const byHeader: Request[] = [];
      for (const [what, headers] of HEADER_VALUES)
        add(byHeader, `header ${what}`, {
          url: url(),
          ...json(baseBody),
          headers: { ...json(baseBody).headers, ...headers },
        });

      const byAuth: Request[] = [];
      for (const [what, header] of [
        ['sub not a uuid', claims({ sub: '../admin', roles: [role ?? 'client'] })],
        ['sub a number', claims({ sub: 42, roles: [role ?? 'client'] })],
        ['sub of 1000 characters', claims({ sub: 'a'.repeat(1000), roles: [role ?? 'client'] })],
        ['roles a string', claims({ sub: ids.any, roles: role ?? 'client' })],
        ['roles of numbers', claims({ sub: ids.any, roles: [1, 2] })],
        ['roles an object', claims({ sub: ids.any, roles: { __proto__: null, admin: true } })],
        ['no roles', claims({ sub: ids.any })],
        ['an unknown role', claims({ sub: ids.any, roles: ['root'] })],
        // A string payload is signed as it is (jsonwebtoken checks the claims of an object only).
        [
          'exp a string',
          `Bearer ${jwt.sign(JSON.stringify({ sub: ids.any, roles: ['admin'], exp: 'x' }), secret)}`,
        ],
        ['nbf in the future', claims({ sub: ids.any, roles: ['admin'], nbf: 4102444800 })],
      ] as const)
        add(byAuth, `token ${what}`, {
          url: url(),
          ...json(baseBody),
          headers: { ...json(baseBody).headers, authorization: header },
        });

      requests.push(
        ...rng.pick(byPath, QUOTA.path),
        ...rng.pick(byQuery, QUOTA.query),
        ...rng.pick(byField, QUOTA.field),
        ...rng.pick(byBody, QUOTA.body),
        ...rng.pick(byForm, QUOTA.form),
        ...rng.pick(byHeader, QUOTA.header),
        ...rng.pick(byAuth, QUOTA.auth),
      );
      // Then the request as it would pass, eight at once (with one Idempotency-Key where it takes one):
      // requests racing each other must not fail either.
      const burstHeaders = (i: number): Record<string, string> => ({
        ...(form
          ? { ...auth(), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }
          : json(baseBody).headers),
        ...(idempotent
          ? { 'idempotency-key': `burst-${method}-${path}`.replace(/[^\w-]/g, '_').slice(0, 100) }
          : {}),
        'x-request-id': `burst-${i}`,
      });
      const formBody = form
        ? multipart(
            Object.entries((form.schema.properties ?? {}) as Record<string, any>)
              .filter(([name]) => name !== 'preview')
              .map(([name, p]) =>
                p.contentMediaType
                  ? {
                      name,
                      filename: 'b.mp4',
                      type: /video/.test(form.encoding?.[name]?.contentType ?? '')
                        ? 'video/mp4'
                        : 'image/png',
                      value: 'b'.repeat(500),
                    }
                  : { name, value: p.enum?.[0] ?? 'burst' },
              ),
          )
        : undefined;
      for (let i = 0; i < 8; i++)
        add(bursts, `burst ${i + 1} of 8`, {
          url: url(),
          headers: burstHeaders(i),
          ...(form ? { body: formBody } : baseBody !== undefined ? { body: baseBody } : {}),
        });
      // Afterwards, every read as it is: what the sweep got stored must not break a read of it.
      if (method === 'GET') {
        add(readBack, 'read back', { url: url(), headers: auth() });
        if (names.includes('from_date'))
          add(readBack, 'read back a month', {
            url: url({}, '?from_date=2026-12-01&to_date=2026-12-31'),
            headers: auth(),
          });
      }
    }
  }
}, 60_000);

afterAll(() => t?.close());

/** The request as text to send again (curl), for the failure message. */
const reproduce = (r: Request) =>
  [
    `curl -X ${r.method} '${new URL(t.baseUrl + r.url).href.slice(0, 300)}'`,
    ...Object.entries(r.headers).map(([k, v]) => `-H '${k}: ${v.length > 80 ? `${v.slice(0, 80)}...` : v}'`),
    ...(r.body !== undefined ? [`--data-raw ${JSON.stringify(r.body.slice(0, 400))}`] : []),
  ].join(' ');

async function send(r: Request): Promise<string | null> {
  // What goes on the wire: the URL parser drops dot segments (`/x/.`, `/x/%2e%2e`) before it is sent.
  const target = new URL(t.baseUrl + r.url);
  // The router takes `/x/` as `/x` (the document names paths without the slash).
  const described = target.pathname.replace(/(.)\/$/, '$1') + target.search;
  const res = await fetch(target, { method: r.method, headers: r.headers, body: r.body });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON: the shape check says so */
  }
  const contentType = res.headers.get('content-type');
  const problem = shapeProblem(res.status, contentType, body);
  if (problem) return `${problem}: ${res.status} ${JSON.stringify(body)?.slice(0, 300)}`;
  let sent: unknown = r.body;
  try {
    sent = r.body === undefined ? undefined : JSON.parse(r.body);
  } catch {
    /* sent as text */
  }
  try {
    check(r.method, described, res.status, contentType, body, {
      body: r.headers['content-type'] === 'application/json' ? sent : r.body,
    });
  } catch (e) {
    return (e as Error).message.slice(0, 600);
  }
  return null;
}

it('sweeps every operation of /openapi.json, as each of its roles', () => {
  expect(operations.length).toBeGreaterThanOrEqual(78);
  const swept = new Set(requests.map((r) => r.op));
  expect(operations.map((o) => `${o.method} ${o.path}`).filter((o) => !swept.has(o))).toEqual([]);
  expect(readBack.length).toBeGreaterThanOrEqual(operations.filter((o) => o.method === 'GET').length);
});

it('answers every hostile request below 500, a 4xx in the documented error shape, as /openapi.json says', async () => {
  const failures: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const r = requests[next++]!;
      const problem = await send(r);
      if (problem) failures.push(`[${r.what}]\n  ${reproduce(r)}\n  ${problem}`);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  for (let i = 0; i < bursts.length; i += 8)
    await Promise.all(
      bursts.slice(i, i + 8).map(async (r) => {
        const problem = await send(r);
        if (problem) failures.push(`[${r.what}]\n  ${reproduce(r)}\n  ${problem}`);
      }),
    );
  for (const r of readBack) {
    const problem = await send(r);
    if (problem) failures.push(`[${r.what}]\n  ${reproduce(r)}\n  ${problem}`);
  }
  if (failures.length)
    console.log(
      `seed ${SEED}: ${failures.length} of ${requests.length} requests failed:\n\n${failures.join('\n\n')}`,
    );
  expect(failures).toEqual([]);
}, 120_000);
