import SwaggerParser from '@apidevtools/swagger-parser';
import { mountedRouters } from '../../src/http/app';
import { buildOpenApi, openApiPath, routesOf } from '../../src/http/openapi/document';
import { ROUTE_DOCS } from '../../src/http/openapi/routes';
import { startTestSystem, type TestSystem } from '../support/system';

/** Section 4 of the interface document, in its order (method and path are the contract). */
const INTERFACE_ENDPOINTS = [
  'POST /api/v1/storage/video',
  'GET /api/v1/storage/videos',
  'PUT /api/v1/storage/videos/order',
  'PUT /api/v1/storage/video/{video_id}',
  'DELETE /api/v1/storage/video/{video_id}',
  'GET /api/v1/service/{service_id}/availability',
  'GET /api/v1/service/{service_id}',
  'POST /api/v1/service/{service_id}',
  'GET /api/v1/service/{coach_id}/reviews',
  'GET /api/v1/coach/{coach_id}/services',
  'GET /api/v1/coach/{coach_id}/availability',
  'GET /api/v1/coach/client/{client_id}',
  'GET /api/v1/coach/{coach_id}/profile',
  'POST /api/v1/storage/profile/media',
  'POST /api/v1/payment/private/payment/{payment_id}/update',
  'POST /api/v1/payment/private/payment/{payment_id}/cancel',
  'POST /api/v1/payment/private/user/{user_id}/update',
  'POST /api/v1/notification/private/email/{user_id}/verification',
  'POST /api/v1/notification/private/email/{user_id}/session/{group_id}/booking',
  'POST /api/v1/notification/private/email/{user_id}/session/{session_id}/approve',
  'POST /api/v1/notification/private/email/{user_id}/session/{session_id}/cancel',
  'POST /api/v1/notification/private/email/{user_id}/session/{session_id}/decline',
  'POST /api/v1/notification/private/email/{user_id}/session/{session_id}/dispute',
  'GET /api/v1/notifications',
  'PUT /api/v1/notifications',
  'POST /api/v1/notification/event',
  'POST /api/v1/notification/channel',
  'POST /api/v1/notification/channel/mailprovider-init',
  'GET /manage/admin/notifications',
  'GET /manage/admin/notifications/{notification_id}',
  'GET /admin/notifications',
  'GET /api/v1/nav/addreses',
  'POST /api/v1/nav/addreses',
];

const ADMIN = 'a0000000-0000-4000-8000-000000000001';

let t: TestSystem;
let document: any;
beforeAll(async () => {
  t = await startTestSystem();
  const res = await fetch(`${t.baseUrl}/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  document = await res.json();
});
afterAll(() => t.close());

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(document.openapi).toBe('3.1.0');
    // validate() dereferences a copy it is given; it throws on any schema or structure error.
    await expect(SwaggerParser.validate(structuredClone(document))).resolves.toBeDefined();
  });

  it('describes every route the app serves, and nothing else', () => {
    const served = routesOf(mountedRouters(t.system.app))
      .map((r) => `${r.method} ${openApiPath(r.path)}`)
      .sort();
    const described = Object.entries(document.paths as Record<string, object>)
      .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`))
      .sort();
    expect(described).toEqual(served);
    const build = buildOpenApi(mountedRouters(t.system.app), { version: 'test' });
    expect(build.undocumented).toEqual([]);
    expect(build.unrouted).toEqual([]);
    expect(served.length).toBeGreaterThanOrEqual(51);
  });

  it('covers the 33 endpoints of the interface document, each once, with their path parameters', () => {
    const numbers = Object.values(ROUTE_DOCS)
      .map((d) => d.endpoint)
      .filter((n): n is number => n !== undefined)
      .sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 33 }, (_, i) => i + 1));
    INTERFACE_ENDPOINTS.forEach((endpoint, i) => {
      const [method, path] = endpoint.split(' ') as [string, string];
      const op = document.paths[path]?.[method.toLowerCase()];
      expect({ endpoint, described: !!op }).toEqual({ endpoint, described: true });
      expect(op.description).toContain(`Endpoint ${i + 1} of the interface document.`);
      const params = (op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => p.name);
      expect(params).toEqual([...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]));
    });
  });

  it('has path and query parameters, bodies, roles and error shapes from the code', () => {
    const book = document.paths['/api/v1/service/{service_id}'].post;
    expect(book.parameters).toEqual([
      expect.objectContaining({ name: 'service_id', in: 'path', required: true }),
      expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false }),
    ]);
    expect(book.security).toEqual([{ bearerAuth: ['client'] }]);
    const body = book.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(['slots']);
    expect(body.additionalProperties).toBe(false);
    expect(Object.keys(body.properties)).toEqual(
      expect.arrayContaining(['slots', 'addressId', 'method', 'parking', 'card']),
    );
    // Optional, and null is read as not sent.
    expect(body.properties.method).toEqual({
      anyOf: [{ type: 'string', enum: ['card', 'cash', 'bank_transfer'] }, { type: 'null' }],
    });
    expect(book.responses['200'].content['application/json'].schema).toEqual({
      type: 'array',
      items: { $ref: '#/components/schemas/Session' },
    });
    expect(book.responses['409'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/ErrorResponse',
    });
    expect(book.responses['422'].content['application/json'].schema.anyOf).toContainEqual({
      $ref: '#/components/schemas/HTTPValidationError',
    });

    const availability = document.paths['/api/v1/service/{service_id}/availability'].get;
    expect(availability.security).toEqual([{}, { bearerAuth: [] }]); // public, a token is optional
    const query = availability.parameters.filter((p: any) => p.in === 'query');
    expect(query.map((p: any) => p.name)).toEqual([
      'from_date',
      'to_date',
      'address_id',
      'user',
      'lat',
      'lng',
    ]);
    expect(query[0].schema).toEqual({ type: 'string', format: 'date' });

    const list = document.paths['/manage/admin/notifications'].get;
    expect(list.security).toEqual([{ bearerAuth: ['admin'] }]);
    expect(list.parameters.find((p: any) => p.name === 'limit').schema).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: 200,
      default: 50,
    });
    // An e-mail delivery's id is its ledger stream, not a uuid (the admin page's Retry sends it).
    const retry = document.paths['/api/v1/admin/emails/{delivery_id}/retry'].post.parameters[0];
    expect(retry.schema.format).toBeUndefined();
    expect(
      new RegExp(retry.schema.pattern).test(
        'delivery-e74ba4d6-1147-4e0b-abe9-18b26a41d53d-5eedc0ac-0000-4000-8000-0000000000ff',
      ),
    ).toBe(true);
    // Stored files are served by byte ranges too (video players ask so): 206 and 416 are listed.
    const file = document.paths['/api/v1/storage/files/{key}'].get;
    expect(file.responses['206'].headers['Content-Range']).toBeDefined();
    // A file comes with its own type (video/mp4, image/png, text/css, ...), which the answer must allow.
    for (const path of ['/api/v1/storage/files/{key}', '/admin/assets/{asset}', '/docs/{asset}'])
      expect(Object.keys(document.paths[path].get.responses['200'].content)).toEqual(['*/*']);
    expect(file.responses['416'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/ErrorResponse',
    });
    const upload = document.paths['/api/v1/storage/video'].post.requestBody.content['multipart/form-data'];
    expect(upload.schema.required).toEqual(['file']);
    // Profile media (14) takes a picture, a video or a PDF: not described as an image only.
    const media =
      document.paths['/api/v1/storage/profile/media'].post.requestBody.content['multipart/form-data'];
    expect(media.schema.properties.file.contentMediaType).toBe('application/octet-stream');
    expect(media.encoding.file.contentType).toBe('image/*, video/*, application/pdf');
    expect(upload.schema.properties.file.contentMediaType).toBe('video/*');

    expect(document.components.schemas.ErrorResponse).toEqual({
      type: 'object',
      properties: { error: { type: 'string' }, message: { type: 'string' }, code: { type: 'integer' } },
      required: ['error', 'message', 'code'],
      additionalProperties: false,
    });
    // Examples come from the seed's demo data.
    const profile = document.paths['/api/v1/users/{user_id}'].put;
    expect(profile.requestBody.content['application/json'].example.firstName).toBe('Anna');
    expect(profile.parameters[0].example).toBe('5eedc11e-0000-4000-8000-000000000001');
  });

  it("types the interface document's integer and uuid fields as integer and format uuid (section 2)", () => {
    const integers: Record<string, string[]> = {
      FileBase: ['filesize'],
      Service: [
        'sessionMinutesDuration',
        'sessionCancellationHours',
        'numberOfSessions',
        'expiresInDays',
        'maxGroupSize',
      ],
      Session: ['dayAvailability', 'minutesDuration', 'minutesTravel'],
      Payment: ['methodId'],
      UserProfileOut: ['experience', 'sessionCount', 'totalPayment'],
      PublicCoachProfileOut: ['experience', 'sessionCount'],
      ErrorResponse: ['code'],
    };
    const uuids: Record<string, string[]> = {
      FileBase: ['id'],
      Service: ['id'],
      Session: ['id', 'paymentId', 'coachId', 'clientId', 'serviceId', 'addressId', 'groupId'],
      Payment: ['coachId', 'clientId', 'serviceId'],
      User: ['id'],
      UserProfileOut: ['id'],
      Notification: ['id', 'contentId'],
      AddressOut: ['id'],
    };
    const schemas = document.components.schemas;
    // A nullable field (Session.addressId) is `anyOf: [<the type>, null]`.
    const typeOf = (s: any) => s.anyOf?.find((m: any) => m.type !== 'null') ?? s;
    for (const [name, fields] of Object.entries(integers))
      for (const f of fields)
        expect({ field: `${name}.${f}`, schema: typeOf(schemas[name].properties[f]) }).toEqual({
          field: `${name}.${f}`,
          schema: { type: 'integer' },
        });
    for (const [name, fields] of Object.entries(uuids))
      for (const f of fields)
        expect({ field: `${name}.${f}`, schema: typeOf(schemas[name].properties[f]) }).toEqual({
          field: `${name}.${f}`,
          schema: { type: 'string', format: 'uuid' },
        });
  });

  it('describes what docs/api.md promises of payments, profile media and files (values, limits, headers)', () => {
    const schemas = document.components.schemas;
    // Payment.status takes the nine values of the interface document (section 3, max length 40); its
    // currency is at most 10 characters (section 8).
    expect(schemas.Payment.properties.status).toEqual({
      type: 'string',
      enum: [
        'awaiting',
        'checkout',
        'review',
        'received',
        'canceled',
        'failed',
        'refund',
        'delivered',
        'deleted',
      ],
    });
    expect(schemas.Payment.properties.currency).toEqual({ type: 'string', maxLength: 10 });
    expect(schemas.PaymentDetail.properties.status).toEqual(schemas.Payment.properties.status);
    // profileCompletion is "an integer from 0 to 100".
    expect(schemas.UserProfileOut.properties.profileCompletion).toEqual({
      type: 'integer',
      minimum: 0,
      maximum: 100,
    });
    // 14 names the new picture or certificate in the X-Media-Id header.
    const media = document.paths['/api/v1/storage/profile/media'].post.responses['200'];
    expect(media.headers['X-Media-Id'].schema).toEqual({ type: 'string', format: 'uuid' });
    // A replay answers it too (docs/api.md, 1: "the same body and the same X-Media-Id header").
    expect(media.headers['X-Media-Id'].description).not.toMatch(/not on a replay/);
    expect(media.headers['X-Media-Id'].description).toMatch(/replay/);
    // A range past the end is 416 with `Content-Range: bytes */<size>`.
    const file = document.paths['/api/v1/storage/files/{key}'].get.responses['416'];
    expect(file.headers['Content-Range'].description).toContain('bytes */<size>');
  });

  it("describes the audits' events and the payment replay's stateAt with the fields docs/api.md lists", () => {
    const ok = (path: string) => document.paths[path].get.responses['200'].content['application/json'].schema;
    const deref = (s: any): any => (s.$ref ? document.components.schemas[s.$ref.split('/').pop()] : s);
    const replay = deref(ok('/api/v1/audit/payments/{payment_id}/events'));
    const stateAt = deref(replay.properties.stateAt.anyOf.find((m: any) => m.type !== 'null'));
    expect(stateAt.required).toEqual(
      expect.arrayContaining([
        'id',
        'groupId',
        'status',
        'price',
        'currency',
        'methodId',
        'coachId',
        'clientId',
        'serviceId',
        'expiresAt',
        'revision',
        'lastChange',
      ]),
    );
    // The secrets are shown as set, never with their value.
    expect(stateAt.properties.clientSecret).toEqual({ const: '[redacted]' });
    expect(stateAt.properties.checkout).toEqual({ const: '[redacted]' });
    expect(stateAt.properties.revision).toEqual({ type: 'integer' });
    expect(deref(stateAt.properties.lastChange).required).toEqual([
      'eventId',
      'type',
      'at',
      'reason',
      'actor',
    ]);
    // Every audit shows an event with its actor, correlation and cause (null when absent).
    const chain = ok('/api/v1/audit/events/{event_id}/chain');
    for (const event of [deref(replay.properties.events.items), deref(chain.properties.event)]) {
      expect(event.properties.revision).toEqual({ type: 'integer' });
      expect(event.properties.metadata.required).toEqual(['actor', 'correlationId', 'causationId']);
    }
  });

  it("describes channels and webhook deliveries as docs/api.md does (a listed channel's secret is never shown)", () => {
    const ok = (path: string, method = 'get') =>
      document.paths[path][method].responses['200'].content['application/json'].schema;
    const deref = (s: any): any => (s.$ref ? document.components.schemas[s.$ref.split('/').pop()] : s);
    // The secret comes once, in the answer to a new webhook's registration; the list never shows it.
    expect(deref(ok('/api/v1/notification/channel', 'post')).properties.secret).toBeDefined();
    expect(deref(ok('/api/v1/notification/channel').items).properties.secret).toBeUndefined();
    // A webhook delivery is pending, sending, delivered or failed (the list's `status` filter).
    const delivery = deref(ok('/manage/admin/webhook-deliveries').items);
    expect(delivery.properties.status).toEqual({
      type: 'string',
      enum: ['pending', 'sending', 'delivered', 'failed'],
    });
  });

  it('gives the defaults of paged lists and filters (limit 50, offset 0; admin services: review)', () => {
    const param = (path: string, name: string) =>
      document.paths[path].get.parameters.find((p: any) => p.name === name)?.schema;
    for (const path of [
      '/api/v1/notifications',
      '/manage/admin/notifications',
      '/manage/admin/webhook-deliveries',
      '/api/v1/admin/services',
      '/api/v1/admin/emails',
      '/api/v1/sessions',
      '/api/v1/service/{coach_id}/reviews',
    ]) {
      expect({ path, limit: param(path, 'limit') }).toEqual({
        path,
        limit: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
      });
      expect({ path, offset: param(path, 'offset').default }).toEqual({ path, offset: 0 });
    }
    expect(param('/api/v1/admin/services', 'status').default).toBe('review');
    // Lists answered whole unless `limit` is given have no default.
    for (const path of ['/api/v1/coach/{coach_id}/services', '/api/v1/nav/addreses'])
      expect(param(path, 'limit').default).toBeUndefined();
  });

  it("types 14's birthDate as the interface document does: a date (YYYY-MM-DD), or null while unknown", () => {
    expect(document.components.schemas.UserProfileOut.properties.birthDate).toEqual({
      anyOf: [{ type: 'string', format: 'date' }, { type: 'null' }],
    });
  });

  it("gives a service's serviceTypes and slots, and a profile's languages, their bounds as maxItems", () => {
    const body = (path: string, method: 'post' | 'put') =>
      document.paths[path][method].requestBody.content['application/json'].schema.properties;
    for (const [path, method] of [
      ['/api/v1/coach/services', 'post'],
      ['/api/v1/coach/services/{service_id}', 'put'],
    ] as const) {
      const { serviceTypes, slots, priceCurrency } = body(path, method);
      expect(serviceTypes).toMatchObject({
        type: 'array',
        items: {
          type: 'string',
          minLength: 1,
          maxLength: 100,
          pattern: '[^\\s\\p{Default_Ignorable_Code_Point}]',
        },
        maxItems: 20,
      });
      expect(slots).toMatchObject({ type: 'array', items: { type: 'string' }, maxItems: 500 });
      expect(priceCurrency).toMatchObject({ type: 'string', pattern: '^[A-Z]{3}$' });
    }
    const profile = body('/api/v1/users/{user_id}', 'put');
    expect(profile.languages).toMatchObject({
      type: 'array',
      items: {
        type: 'string',
        minLength: 1,
        maxLength: 35,
        pattern: '^[^,]*[^,\\s\\p{Default_Ignorable_Code_Point}][^,]*$',
      },
      maxItems: 50,
    });
    expect(profile.email).toMatchObject({ type: 'string', maxLength: 254 });
    for (const field of ['phone', 'whatsapp']) {
      const form = new RegExp(profile[field].pattern);
      for (const taken of ['', '+49 (30) 123-456', '1234'])
        expect({ taken, ok: form.test(taken) }).toEqual({ taken, ok: true });
      for (const refused of ['abc', '123', '+', '12 34 x'])
        expect({ refused, ok: form.test(refused) }).toEqual({ refused, ok: false });
    }
    expect(profile.birthDate).toEqual({
      anyOf: [expect.objectContaining({ type: 'string', format: 'date' }), { type: 'null' }],
    });
  });

  it('gives the bounds of 25 and 26 (1 to 200 notification ids) as minItems and maxItems', () => {
    for (const [path, method, field] of [
      ['/api/v1/notifications', 'put', 'notifications'],
      ['/api/v1/notification/event', 'post', 'notificationIds'],
    ] as const) {
      const body = document.paths[path][method].requestBody.content['application/json'].schema;
      expect(body.properties[field]).toMatchObject({
        type: 'array',
        items: { type: 'string', format: 'uuid' },
        minItems: 1,
        maxItems: 200,
      });
    }
  });

  it('describes the headers a stored file is served with (ranges, caching, no sniffing)', () => {
    const ok = document.paths['/api/v1/storage/files/{key}'].get.responses['200'];
    expect(Object.keys(ok.headers)).toEqual(
      expect.arrayContaining([
        'Accept-Ranges',
        'Cache-Control',
        'X-Content-Type-Options',
        'Content-Security-Policy',
      ]),
    );
  });

  it("lists 403 only where a role is required or the action is one side's (a session's coach or client)", () => {
    const statuses = (path: string, method: string) => Object.keys(document.paths[path][method].responses);
    // Any signed-in user may ask; another user's payment or notification is 404, never 403.
    expect(statuses('/api/v1/payment/{payment_id}', 'get')).not.toContain('403');
    expect(statuses('/api/v1/notifications', 'get')).not.toContain('403');
    expect(statuses('/api/v1/nav/addreses', 'post')).not.toContain('403');
    // A client approving, or a coach reviewing, is 403.
    for (const action of ['approve', 'decline', 'cancel', 'complete', 'dispute', 'review'])
      expect(statuses(`/api/v1/session/{session_id}/${action}`, 'post')).toContain('403');
    expect(statuses('/api/v1/service/{service_id}', 'post')).toContain('403');
    expect(statuses('/metrics', 'get')).toContain('403');
  });

  it('declares Idempotency-Key on the commands that honour it, and on no other operation', () => {
    const keyed: string[] = [];
    const postsWithout: string[] = [];
    for (const [path, ops] of Object.entries<any>(document.paths))
      for (const [method, op] of Object.entries<any>(ops)) {
        const header = (op.parameters ?? []).find((p: any) => p.name === 'Idempotency-Key');
        if (header) {
          expect(header).toMatchObject({ in: 'header', required: false, schema: { maxLength: 200 } });
          keyed.push(`${method.toUpperCase()} ${path}`);
        } else if (method === 'post') postsWithout.push(path);
      }
    // 28 checks the mail provider and changes nothing; PUTs replace a whole resource (docs/api.md).
    expect(postsWithout).toEqual(['/api/v1/notification/channel/mailprovider-init']);
    expect(keyed).toEqual(
      expect.arrayContaining([
        'POST /api/v1/service/{service_id}',
        'POST /api/v1/storage/video',
        'POST /api/v1/storage/profile/media',
        'POST /api/v1/nav/addreses',
        'DELETE /api/v1/notification/channel/{channel_id}',
      ]),
    );
    // Their 200 names the header a replayed answer comes with, and no other operation's does.
    for (const [path, ops] of Object.entries<any>(document.paths))
      for (const [method, op] of Object.entries<any>(ops)) {
        const route = `${method.toUpperCase()} ${path}`;
        expect({ route, replayed: op.responses['200'].headers?.['Idempotent-Replayed']?.schema }).toEqual({
          route,
          replayed: keyed.includes(route) ? { type: 'string', enum: ['true'] } : undefined,
        });
      }
    expect(keyed.filter((k) => !k.startsWith('POST ')).sort()).toEqual([
      'DELETE /api/v1/nav/addreses/{address_id}',
      'DELETE /api/v1/notification/channel/{channel_id}',
    ]);
  });

  it('calls a route public only when it answers without a token (GET /metrics needs one)', async () => {
    for (const [path, ops] of Object.entries(document.paths as Record<string, Record<string, any>>))
      for (const [method, op] of Object.entries(ops)) {
        const anonymous = (op.security as object[]).some((s) => Object.keys(s).length === 0);
        expect({
          route: `${method} ${path}`,
          public: /\bPublic: no token needed/.test(op.description),
        }).toEqual({
          route: `${method} ${path}`,
          public: anonymous,
        });
      }
    const metrics = document.paths['/metrics'].get;
    expect(metrics.description).toContain('admin');
    expect(metrics.description).toContain('METRICS_TOKEN');
    expect((await fetch(`${t.baseUrl}/metrics`)).status).toBe(401);
  });
});

describe('/openapi.json read by a client generator', () => {
  it('says what the keys of a free-form object hold (a bare `type: object` reads as "no keys"), and has no empty `required`', () => {
    const bare: string[] = [];
    const walk = (s: any, at: string): void => {
      if (Array.isArray(s)) return s.forEach((x, i) => walk(x, `${at}/${i}`));
      if (s === null || typeof s !== 'object') return;
      if (s.type === 'object' && !s.properties && s.additionalProperties === undefined) bare.push(at);
      for (const [k, v] of Object.entries(s)) walk(v, `${at}/${k}`);
    };
    walk(document, '#');
    expect(bare).toEqual([]);
    // Nor an empty `required` list (valid JSON Schema, but OpenAPI 3.0 tools and converters refuse it).
    expect(JSON.stringify(document)).not.toContain('"required":[]');
    // A payment provider's checkout (15, 17) is any JSON object: its keys hold anything.
    const body = document.paths['/api/v1/payment/private/payment/{payment_id}/update'].post.requestBody;
    expect(body.content['application/json'].schema.properties.checkout.additionalProperties).toBe(true);
    expect(document.components.schemas.Payment.properties.checkout.additionalProperties).toBe(true);
  });

  it("gives the booking's slots (4) their bounds and form: 1 to 100 distinct local date-times", () => {
    const body = document.paths['/api/v1/service/{service_id}'].post.requestBody.content['application/json'];
    const slots = body.schema.properties.slots;
    expect(slots).toMatchObject({ type: 'array', minItems: 1, maxItems: 100, uniqueItems: true });
    const form = new RegExp(slots.items.pattern);
    expect(body.example.slots.every((s: string) => form.test(s))).toBe(true);
    for (const taken of ['2026-12-01T10:00', '2026-12-01T10:00:00', '2026-12-01T23:59:00.000'])
      expect({ taken, ok: form.test(taken) }).toEqual({ taken, ok: true });
    for (const refused of [
      '2026-12-01T10:00:00Z',
      '2026-12-01T10:00:00+01:00',
      '2026-12-01',
      '2026-12-01T24:00',
    ])
      expect({ refused, ok: form.test(refused) }).toEqual({ refused, ok: false });
  });

  it('types the ids and dates of the availability answers (6, 11) and of a package as uuid and date', () => {
    const ok = (path: string) => document.paths[path].get.responses['200'].content['application/json'].schema;
    const uuid = { type: 'string', format: 'uuid' };
    const date = { type: 'string', format: 'date' };
    const service = ok('/api/v1/service/{service_id}/availability').properties;
    const coach = ok('/api/v1/coach/{coach_id}/availability').properties;
    const pkg = document.components.schemas.Package.properties;
    expect([service.serviceId, service.coachId, coach.coachId, pkg.packageId, pkg.serviceId]).toEqual([
      uuid,
      uuid,
      uuid,
      uuid,
      uuid,
    ]);
    expect([service.fromDate, service.toDate, coach.fromDate, coach.toDate]).toEqual([
      date,
      date,
      date,
      date,
    ]);
  });

  it("lists a session's states and its payment's statuses (Session, Package) as enums a client can switch on", () => {
    const schemas = document.components.schemas;
    expect(schemas.Session.properties.state).toEqual({
      type: 'string',
      enum: ['new', 'approved', 'declined', 'canceled', 'completed', 'disputed'],
    });
    expect(schemas.Session.properties.paymentState).toEqual(schemas.Payment.properties.status);
    expect(schemas.Package.properties.paymentState).toEqual(schemas.Payment.properties.status);
  });

  it('describes every tag it groups operations by (Swagger UI shows it above the group)', () => {
    const tags = document.tags as { name: string; description?: string }[];
    expect(tags.filter((tag) => !tag.description).map((tag) => tag.name)).toEqual([]);
    const used = new Set(
      Object.values<any>(document.paths).flatMap((ops) => Object.values<any>(ops).flatMap((op) => op.tags)),
    );
    expect(tags.map((tag) => tag.name).sort()).toEqual([...used].sort());
  });

  it('describes every field of GET /healthz (instance, leases, each projection), closed', async () => {
    const ok = document.paths['/healthz'].get.responses['200'].content['application/json'].schema;
    expect(ok.additionalProperties).toBe(false);
    expect(ok.required).toEqual(
      expect.arrayContaining(['status', 'eventStore', 'database', 'instance', 'leases', 'projections']),
    );
    const lease = ok.properties.leases.anyOf.find((m: any) => m.type === 'array').items;
    expect(lease.required).toEqual(['name', 'owner', 'expiresAt', 'mine']);
    const projection = ok.properties.projections.items;
    expect(projection.required).toEqual(['name', 'state', 'position', 'mode', 'queued']);
    expect(projection.properties.state.enum).toEqual(
      expect.arrayContaining(['running', 'failed', 'standby']),
    );
    expect(Object.keys(projection.properties)).toEqual(
      expect.arrayContaining(['lease', 'error', 'failedEvent']),
    );
    // t.request checks the answer against the document: a field it does not describe fails here.
    const res = await t.request('GET', '/healthz');
    expect(res.status).toBe(200);
    const admin = await t.request('GET', '/healthz', { token: t.token(ADMIN, ['admin']) });
    expect(admin.status).toBe(200);
    expect(admin.body.projections.some((p: any) => p.lease)).toBe(true);
  });
});

describe('the reorder of videos (3)', () => {
  it('declares its bound on the ids as maxItems, as a generated client checks it', () => {
    const body =
      document.paths['/api/v1/storage/videos/order'].put.requestBody.content['application/json'].schema;
    expect(body.properties.order).toMatchObject({
      type: 'array',
      items: { type: 'string', format: 'uuid' },
      maxItems: 1000,
    });
  });
});

describe("the HTTP server's own answers", () => {
  it('are listed on every operation (400, 408, 417, 431 come before any route), 417 as a real answer shows', async () => {
    const missing: string[] = [];
    for (const [path, ops] of Object.entries<any>(document.paths))
      for (const [method, op] of Object.entries<any>(ops))
        for (const status of ['400', '408', '417', '431'])
          if (
            op.responses[status]?.content?.['application/json']?.schema?.$ref !==
            '#/components/schemas/ErrorResponse'
          )
            missing.push(`${method} ${path} ${status}`);
    expect(missing).toEqual([]);
    // An Expect other than 100-continue, on a route the document describes.
    const { default: net } = await import('node:net');
    const { port } = new URL(t.baseUrl);
    const text = await new Promise<string>((resolve, reject) => {
      let got = '';
      const socket = net.connect(Number(port), '127.0.0.1', () =>
        socket.write('GET /api/v1/coaches HTTP/1.1\r\nHost: x\r\nExpect: 999-whatever\r\n\r\n'),
      );
      socket.on('data', (d) => (got += d.toString()));
      socket.on('close', () => resolve(got));
      socket.on('error', reject);
      setTimeout(() => socket.destroy(), 5_000);
    });
    expect(text).toMatch(/^HTTP\/1\.1 417 /);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toEqual({
      error: 'expectation_failed',
      message: expect.any(String),
      code: 417,
    });
  });
});

describe('answers that ask for a retry', () => {
  it('declare Retry-After on every 503 and 409 of the API (not on /healthz, whose 503 is a report)', () => {
    const without: string[] = [];
    for (const [path, ops] of Object.entries<any>(document.paths))
      for (const [method, op] of Object.entries<any>(ops))
        for (const status of ['409', '503'])
          if (op.responses[status] && path !== '/healthz')
            if (op.responses[status].headers?.['Retry-After']?.$ref !== '#/components/headers/RetryAfter')
              without.push(`${method} ${path} ${status}`);
    expect(without).toEqual([]);
    expect(
      document.paths['/api/v1/service/{service_id}'].post.responses['409'].headers['Retry-After'],
    ).toBeDefined();
    expect(document.paths['/healthz'].get.responses['503'].headers['Retry-After']).toBeUndefined();
    expect(document.components.headers.RetryAfter.schema).toEqual({ type: 'integer', minimum: 1 });
  });
});

describe('request and correlation ids', () => {
  it('declares the X-Request-Id answer header on every answer of every operation', () => {
    const without: string[] = [];
    for (const [path, ops] of Object.entries<any>(document.paths))
      for (const [method, op] of Object.entries<any>(ops))
        for (const [status, res] of Object.entries<any>(op.responses))
          if (res.headers?.['X-Request-Id']?.$ref !== '#/components/headers/RequestId')
            without.push(`${method} ${path} ${status}`);
    expect(without).toEqual([]);
    expect(document.components.headers.RequestId.schema).toEqual({ type: 'string', maxLength: 100 });
    expect(document.info.description).toContain('X-Request-Id');
    expect(document.info.description).toContain('X-Correlation-Id');
  });

  it('echoes a sane X-Request-Id on answers of every kind and makes up a uuid for any other', async () => {
    const ok = await t.request('GET', '/healthz', { headers: { 'X-Request-Id': 'trace_1-A' } });
    expect(ok.headers.get('x-request-id')).toBe('trace_1-A');
    const denied = await t.request('GET', '/api/v1/notifications', { headers: { 'X-Request-Id': 'r-401' } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('x-request-id')).toBe('r-401');
    for (const given of ['has space', 'x'.repeat(101), 'semi;colon', ''])
      expect(
        (await t.request('GET', '/healthz', { headers: { 'X-Request-Id': given } })).headers.get(
          'x-request-id',
        ),
      ).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe('GET /docs', () => {
  it('renders the document with Swagger UI served by the service itself (no CDN)', async () => {
    const page = await fetch(`${t.baseUrl}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.every((a) => a.startsWith('/docs/'))).toBe(true);
    for (const asset of assets) {
      const res = await fetch(t.baseUrl + asset);
      expect({ asset, status: res.status }).toEqual({ asset, status: 200 });
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(100);
    }
    const init = await (await fetch(`${t.baseUrl}/docs/docs.js`)).text();
    expect(init).toContain("url: '/openapi.json'");
    expect((await t.request('GET', '/docs/nothing.js')).status).toBe(404);
  });

  it('may not be framed by another site (the page keeps a bearer token for its Execute buttons)', async () => {
    const page = await fetch(`${t.baseUrl}/docs`);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
  });
});

describe('the answer check of every API test', () => {
  it('refuses an answer the document does not describe', async () => {
    const { answerChecker } = await import('../support/openapiCheck');
    const check = answerChecker(document);
    expect(() => check('GET', '/api/v1/service/x', 200, 'application/json', { id: 1 })).toThrow(
      /does not match/,
    );
    expect(() => check('GET', '/api/v1/sessions', 418, 'application/json', {})).toThrow(/lists no 418/);
    expect(() =>
      check('GET', '/api/v1/sessions', 401, 'application/json', {
        error: 'unauthorized',
        message: 'x',
        code: 401,
      }),
    ).not.toThrow();
  });

  it('refuses a request the service carried out but the document does not allow (a generated client would not send it)', async () => {
    const { answerChecker } = await import('../support/openapiCheck');
    const check = answerChecker(document);
    const json = 'application/json';
    expect(() => check('GET', '/api/v1/sessions?state=open', 200, json, [], {})).toThrow(
      /does not allow the request: query parameter state/,
    );
    expect(() =>
      check('GET', '/api/v1/sessions?state=new,approved&limit=10', 200, json, [], {}),
    ).not.toThrow();
    expect(() =>
      check('PUT', '/api/v1/notifications', 200, json, [], { body: { notifications: ['x'] } }),
    ).toThrow(/does not allow the request: body/);
    expect(() => check('PUT', '/api/v1/notifications', 200, json, [], {})).toThrow(/requestBody is required/);
    expect(() => check('GET', '/api/v1/session/not-a-uuid', 200, json, {}, {})).toThrow(
      /path parameter session_id/,
    );
    // A refused request is not held against the document: the service said no.
    expect(() =>
      check('PUT', '/api/v1/notifications', 422, json, { detail: [] }, { body: { notifications: ['x'] } }),
    ).not.toThrow();
  });
});

describe('request fields whose form the routes check', () => {
  /** The schema's pattern as a client generator compiles it (JSON Schema patterns are Unicode regexps). */
  const accepts = (schema: any, value: string) =>
    new RegExp(schema.pattern, 'u').test(value) &&
    (schema.maxLength === undefined || [...value].length <= schema.maxLength);
  const expectForm = (schema: any, taken: string[], refused: string[]) => {
    expect(schema.pattern).toEqual(expect.any(String));
    for (const value of taken) expect({ value, ok: accepts(schema, value) }).toEqual({ value, ok: true });
    for (const value of refused) expect({ value, ok: accepts(schema, value) }).toEqual({ value, ok: false });
  };
  const body = (path: string, method: string) =>
    document.paths[path][method].requestBody.content['application/json'].schema;
  const query = (path: string, name: string) =>
    document.paths[path].get.parameters.find((p: any) => p.name === name).schema;

  it("gives a schedule's times (HH:mm) and override dates their form, as PUT /api/v1/coach/schedule checks them", () => {
    const schedule = body('/api/v1/coach/schedule', 'put');
    const interval = schedule.properties.weekly.properties.monday.items;
    for (const field of ['start', 'end'])
      expectForm(
        interval.properties[field],
        ['09:00', '00:00', '23:59', '24:00'],
        ['9:00', '09:00:00', '25:00', '24:30', '9:5'],
      );
    const overrides = schedule.properties.overrides;
    expect(overrides.propertyNames).toMatchObject({ type: 'string', format: 'date' });
    expect(overrides.maxProperties).toBe(400);
  });

  it("gives a reschedule's slot the form of a booking's slots (a local date-time without zone)", () => {
    const booking = body('/api/v1/service/{service_id}', 'post').properties.slots.items;
    const slot = body('/api/v1/session/{session_id}/reschedule', 'post').properties.slot;
    expect(slot.pattern).toBe(booking.pattern);
    expectForm(slot, ['2026-12-01T10:00', '2026-12-01T10:00:00'], ['2026-12-01T10:00:00Z', '2026-12-01']);
  });

  it("gives a service's slots their form (HH:mm, or a weekday and HH:mm, in any letter case)", () => {
    for (const [path, method] of [
      ['/api/v1/coach/services', 'post'],
      ['/api/v1/coach/services/{service_id}', 'put'],
    ] as const)
      expectForm(
        body(path, method).properties.slots.items,
        ['09:30', 'monday 09:30', 'Sunday 23:59', ' friday 07:00 '],
        ['9:30', 'monday', 'mon 09:30', 'monday  09:30', '24:00', 'someday 09:30'],
      );
  });

  it("gives the sessions list's `state` and the audit export's filters their form and bounds", () => {
    expectForm(
      query('/api/v1/sessions', 'state'),
      ['new', 'approved,completed', 'new,approved,declined,canceled,completed,disputed'],
      ['', 'new,', 'open', 'new, approved'],
    );
    expectForm(query('/api/v1/audit/events', 'after'), ['1234', '0', '12/34'], ['', 'x', '-1', '1/2/3']);
    expect(query('/api/v1/audit/events', 'stream_prefix').maxLength).toBe(200);
    expect(query('/api/v1/audit/events', 'type').maxLength).toBe(1000);
  });

  it("says in its description what a channel's address must be for each type (27), as a schema cannot", () => {
    const address = body('/api/v1/notification/channel', 'post').properties.address;
    expect(address).toMatchObject({ type: 'string', minLength: 1, maxLength: 500 });
    for (const rule of ['`email`', '`push`', '`webhook` an https URL'])
      expect(address.description).toContain(rule);
  });

  it('says a verification e-mail (18) needs a code or a link', async () => {
    const { default: Ajv2020 } = await import('ajv/dist/2020');
    const schema = body('/api/v1/notification/private/email/{user_id}/verification', 'post');
    const valid = new Ajv2020({ strict: false, validateFormats: false }).compile(schema);
    expect(
      [{ code: '123456' }, { link: 'https://x.example/v' }, { code: '1', link: null }].map((b) => valid(b)),
    ).toEqual([true, true, true]);
    expect([{}, { code: null }, { code: null, link: null }].map((b) => valid(b))).toEqual([
      false,
      false,
      false,
    ]);
  });
});
