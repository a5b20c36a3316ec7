import type Router from '@koa/router';
import * as t from 'io-ts';
import { CLIENTS, COACHES, DEMO_IDS } from '../../cli/demoData';
import { NAMED_ANSWER_CODECS, int } from '../../resources/codecs';
import { guardOf, type Role } from '../auth';
import { honoursIdempotencyKey } from '../idempotency';
import { takesMultipart } from '../multipart';
import { toJsonSchema, type JsonSchema, type SchemaRefs } from './jsonSchema';
import { ROUTE_DOCS, type RouteDoc } from './routes';

/**
 * OpenAPI 3.1 of the service, generated from the code: paths, methods, path parameters and roles are read
 * off the routers (each route's guard says its roles); query, body and answer schemas are the io-ts codecs
 * of ROUTE_DOCS walked into JSON Schema. Error answers are the documented shapes.
 */
export interface RouterRoute {
  method: string;
  /** The router's pattern, e.g. `/api/v1/service/:service_id`. */
  path: string;
  roles: readonly Role[] | null;
  multipart: boolean;
  /** Whether the route honours `Idempotency-Key`. */
  idempotencyKey: boolean;
}

/** Every method and path the routers serve (HEAD comes with GET and is not listed). */
export function routesOf(routers: Router[]): RouterRoute[] {
  return routers.flatMap((r) =>
    r.stack.flatMap((layer) =>
      layer.methods
        .filter((m) => m !== 'HEAD')
        .map((method) => ({
          method,
          path: layer.path as string,
          roles: guardOf(layer.stack),
          multipart: takesMultipart(layer.stack),
          idempotencyKey: honoursIdempotencyKey(layer.stack),
        })),
    ),
  );
}

/** docs/api.md, Conventions: the key of a command its client may send again. */
const IDEMPOTENCY_KEY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', minLength: 1, maxLength: 200 },
  description:
    'Kept 24 h per caller: the same key and request replays the first answer (with `Idempotent-Replayed: true`); ' +
    'the same key with another request is 422 `idempotency_key_reused`; a repeat while the first still runs is 409.',
};

/** On an answer replayed for a repeated `Idempotency-Key` (docs/api.md, Conventions). */
const IDEMPOTENT_REPLAYED_HEADER = {
  schema: { type: 'string', enum: ['true'] },
  description:
    '`true` when this is the first answer to the same key and request, replayed (nothing was done again); absent otherwise',
};

export const routeKey = (method: string, path: string) => `${method} ${path}`;
export const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');
const paramNames = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);

/** Example values of path parameters: the ids the seed (`npm run seed`) creates. Read when the document is
 * built, not at import (the seed imports the system that imports this). */
const paramExamples = (): Record<string, string> => ({
  coach_id: DEMO_IDS.coaches[0],
  client_id: DEMO_IDS.clients[0],
  user_id: DEMO_IDS.clients[0],
});

/** Request bodies of the seed, as examples of the commands that made them. */
function seedExamples(): Record<string, unknown> {
  const coach = COACHES[0]!;
  return {
    'PUT /api/v1/users/:user_id': { ...coach.profile, type: 'coach' },
    'POST /api/v1/coach/services': coach.services[0],
    'PUT /api/v1/coach/services/:service_id': { price: 30, description: coach.services[0]!.description },
    'POST /api/v1/nav/addreses': { ...CLIENTS[0]!.address, isDefault: true },
    'PUT /api/v1/coach/schedule': {
      timezone: coach.profile.timezone,
      weekly: coach.weekly ?? {
        monday: [{ start: '09:00', end: '17:00' }],
        wednesday: [{ start: '09:00', end: '17:00' }],
      },
    },
  };
}

/** What each tag of ROUTE_DOCS groups (a tag without one fails test/api/openapi.test.ts). */
const TAG_DESCRIPTIONS: Record<string, string> = {
  Videos: "A coach's preview videos: upload, list, reorder, replace, delete; stored files by byte ranges",
  Services: "The service catalogue: a coach's services, weekly schedule, free slots and reviews",
  Sessions: 'Booking sessions of a service, and what coach and client do with them afterwards',
  Users:
    'User profiles (written by the account service), public coach profiles, profile pictures and certificates',
  Admin: 'Moderation of services, notifications, e-mail and webhook deliveries, projections (admin role)',
  'Payments (private)':
    "The payment provider's side: payment status updates and cancellations (service role)",
  Payments: 'A payment with its history, as its client, its coach, an admin or an auditor sees it',
  Audit: 'The event log read back: a session or payment replayed, a stream at a revision, causes and effects',
  'E-mail (private)': 'Transactional e-mails sent on behalf of other services (service role)',
  Notifications: "A user's notifications, their read marks, and the channels they are delivered to",
  'Calendar feed':
    "A private iCalendar address of the caller's sessions, for calendar apps that subscribe to a URL and send no token",
  Addresses: "A user's saved addresses",
  Operations: 'Health, metrics and this document',
};

const ErrorResponse = t.exact(t.type({ error: t.string, message: t.string, code: int }), 'ErrorResponse');
const HTTPValidationError = t.exact(
  t.type({
    detail: t.array(
      t.exact(
        t.type({
          loc: t.array(t.union([t.string, t.number])),
          msg: t.string,
          type: t.string,
        }),
      ),
    ),
  }),
  'HTTPValidationError',
);

const ERROR_TEXT: Record<number, string> = {
  400: 'Malformed request (e.g. a body that is not JSON)',
  401: 'No valid bearer token (or a token was sent and is invalid)',
  403: 'The token lacks the role, or the caller may not act on this resource',
  404: 'Not found (`*_not_found`)',
  408: 'The request (headers or body) did not arrive in time',
  409: 'Refused in the current state, or a concurrent change (`conflict`, `slot_unavailable`, ...)',
  413: 'Body or file too large',
  431: 'Request headers too large',
  415: 'Body of another media type than the route takes',
  417: 'An `Expect` header other than `100-continue` (`expectation_failed`; the connection is closed)',
  416: 'The byte range asked for starts at or past the end of the file (`range_not_satisfiable`; `Content-Range: bytes */<size>`)',
  422: 'Invalid input: `{detail: [{loc, msg, type}]}`, or a refused value as ErrorResponse',
  500: 'Unexpected error (never with a stack trace)',
  503: 'Degraded: a dependency or a projection is down, or the event store or the database is not answering (`service_unavailable`: retry shortly)',
};

/** Error statuses a route can answer, from what every route of its kind can meet. */
export function errorStatuses(route: RouterRoute, doc: RouteDoc): number[] {
  const writes = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(route.method);
  // 400, 408, 417 and 431 may come from the HTTP server itself, before any route (src/http/server.ts:
  // timeouts, limits, an Expect it does not meet).
  // 503 from any route that reads or writes events or read models while the event store or the database does
  // not answer (retry shortly).
  const statuses = new Set([400, 401, 404, 408, 417, 422, 431, 500, 503, ...(doc.extraStatuses ?? [])]);
  // 403 from the guard of a route that needs a role; a route open to every signed-in user answers another
  // user's things with 404 (docs/api.md, Conventions), and lists 403 itself where it has one (`extraStatuses`).
  if (route.roles !== null && route.roles.length > 0) statuses.add(403);
  if (writes) [409, 413, 415].forEach((s) => statuses.add(s));
  if (route.path === '/metrics') statuses.add(403);
  return [...statuses].sort((a, b) => a - b);
}

export interface OpenApiBuild {
  document: Record<string, unknown>;
  /** Routes without a description, and descriptions without a route: both must be empty. */
  undocumented: string[];
  unrouted: string[];
}

export function buildOpenApi(routers: Router[], info: { version: string }): OpenApiBuild {
  const routes = routesOf(routers);
  const refs: SchemaRefs = new Map<unknown, string>([
    [ErrorResponse, 'ErrorResponse'],
    [HTTPValidationError, 'HTTPValidationError'],
    ...Object.entries(NAMED_ANSWER_CODECS).map(([name, c]) => [c, name] as [unknown, string]),
  ]);
  const schema = (c: t.Mixed) => toJsonSchema(c, refs, false);
  const examples = seedExamples();
  const PARAM_EXAMPLES = paramExamples();
  const paths: Record<string, Record<string, unknown>> = {};
  const undocumented: string[] = [];
  const seen = new Set<string>();

  for (const route of routes) {
    const key = routeKey(route.method, route.path);
    const doc = ROUTE_DOCS[key];
    if (!doc) {
      undocumented.push(key);
      continue;
    }
    seen.add(key);
    const own = doc.params
      ? ((toJsonSchema(doc.params, refs).properties ?? {}) as Record<string, JsonSchema>)
      : {};
    const parameters: unknown[] = paramNames(route.path).map((name) => ({
      name,
      in: 'path',
      required: true,
      schema: own[name] ?? (name.endsWith('_id') ? { type: 'string', format: 'uuid' } : { type: 'string' }),
      ...(PARAM_EXAMPLES[name] ? { example: PARAM_EXAMPLES[name] } : {}),
    }));
    if (route.idempotencyKey) parameters.push(IDEMPOTENCY_KEY_PARAMETER);
    if (doc.query) {
      const q = toJsonSchema(doc.query, refs);
      const required = new Set((q.required as string[] | undefined) ?? []);
      for (const [name, s] of Object.entries((q.properties ?? {}) as Record<string, JsonSchema>))
        parameters.push({ name, in: 'query', required: required.has(name), schema: s });
    }
    const operation: Record<string, unknown> = {
      operationId: `${route.method.toLowerCase()}${route.path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c?: string) => (c ? c.toUpperCase() : ''))}`,
      tags: [doc.tag],
      summary: doc.summary,
      description: describe(route, doc),
      ...(parameters.length ? { parameters } : {}),
      security: securityOf(route),
      responses: responsesOf(route, doc, schema),
    };
    const example = doc.body?.example ?? examples[key];
    if (doc.body)
      operation.requestBody = {
        required: !doc.body.optional,
        content: {
          'application/json': {
            schema: schema(doc.body.codec),
            ...(example !== undefined ? { example } : {}),
          },
        },
      };
    if (doc.multipart) {
      const fields = toJsonSchema(doc.multipart.fields, refs);
      const files = doc.multipart.files;
      operation.requestBody = {
        required: true,
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              properties: {
                ...(fields.properties as object),
                ...Object.fromEntries(
                  files.map((f) => [
                    f.name,
                    {
                      type: 'string',
                      // One accepted type names it; several (a picture, a video or a PDF) are any bytes,
                      // and the encoding below lists the types taken.
                      contentMediaType: f.accept.includes(',') ? 'application/octet-stream' : f.accept.trim(),
                    },
                  ]),
                ),
              },
              // None at all (a replacement takes each part or not) is no `required` (OpenAPI 3.0 tools refuse `[]`).
              ...(files.some((f) => f.required)
                ? { required: files.filter((f) => f.required).map((f) => f.name) }
                : {}),
              additionalProperties: false,
            },
            encoding: Object.fromEntries(files.map((f) => [f.name, { contentType: f.accept }])),
          },
        },
      };
    }
    (paths[openApiPath(route.path)] ??= {})[route.method.toLowerCase()] = operation;
  }

  const components: Record<string, JsonSchema> = {};
  for (const [codec, name] of refs) components[name] = toJsonSchema(codec as t.Mixed, refs, true);

  return {
    undocumented,
    unrouted: Object.keys(ROUTE_DOCS).filter((k) => !seen.has(k)),
    document: {
      openapi: '3.1.0',
      info: {
        title: 'Coaching booking service',
        version: info.version,
        description:
          'Generated from the code: routes and roles from the routers, schemas from the io-ts codecs the ' +
          'routes decode with. Bearer JWT (`sub` = user uuid, `roles`); the roles a route admits are listed ' +
          'as the scopes of its security requirement. Errors: `ErrorResponse {error, message, code}`; ' +
          'invalid input is 422 `{detail: [{loc, msg, type}]}`. Commands that honour an `Idempotency-Key` list it among their parameters. ' +
          'Any request may send `X-Request-Id` (echoed in the answer, recorded as `requestId` on the events it writes) and ' +
          '`X-Correlation-Id` (recorded as `correlationId`; the request id when absent); each is kept when it is 1-100 letters, digits, `_` or `-`.',
      },
      servers: [{ url: '/' }],
      tags: [...new Set(Object.values(ROUTE_DOCS).map((d) => d.tag))].map((name) => ({
        name,
        ...(TAG_DESCRIPTIONS[name] ? { description: TAG_DESCRIPTIONS[name] } : {}),
      })),
      paths,
      components: {
        schemas: components,
        headers: {
          RetryAfter: {
            schema: { type: 'integer', minimum: 1 },
            description:
              'Seconds to wait before trying again: on a 503 `service_unavailable` (a database, the event store or ' +
              'file storage away a moment) and a 409 `conflict` (contention, or the same Idempotency-Key still running); ' +
              'not on a 409 that is an outcome (a slot taken, a move not allowed).',
          },
          RequestId: {
            schema: { type: 'string', maxLength: 100 },
            description:
              "The request's id: the `X-Request-Id` it was sent with when that is 1-100 letters, digits, `_` or `-`, " +
              'else a new uuid. It names the request in the log and in the metadata of the events it wrote.',
          },
        },
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          metricsToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'The METRICS_TOKEN of the deployment (GET /metrics only)',
          },
        },
      },
    },
  };
}

function describe(route: RouterRoute, doc: RouteDoc): string {
  const parts: string[] = [];
  if (doc.endpoint) parts.push(`Endpoint ${doc.endpoint} of the interface document.`);
  // GET /metrics has no role guard (a scraper's METRICS_TOKEN is no JWT) but is not public: it checks itself.
  if (route.path === '/metrics')
    parts.push("Needs an admin token, or the deployment's `METRICS_TOKEN` as the bearer token (a scraper).");
  else if (route.roles === null) parts.push('Public: no token needed (a token that is sent must be valid).');
  else if (route.roles.length === 0) parts.push('Any signed-in user.');
  else parts.push(`Roles: ${route.roles.join(' or ')}.`);
  if (doc.description) parts.push(doc.description);
  return parts.join(' ');
}

function securityOf(route: RouterRoute): unknown[] {
  if (route.path === '/metrics') return [{ bearerAuth: ['admin'] }, { metricsToken: [] }];
  if (route.roles === null) return [{}, { bearerAuth: [] }];
  return [{ bearerAuth: [...route.roles] }];
}

function responsesOf(route: RouterRoute, doc: RouteDoc, schema: (c: t.Mixed) => JsonSchema) {
  const ok: Record<string, unknown> = {};
  // A file is answered with its own type (the stored one: video/mp4, image/png, application/pdf; an asset's
  // text/css, application/javascript), so any media type: not one that no answer carries.
  if (doc.answer === 'binary') ok['*/*'] = { schema: { description: 'The file, with its own Content-Type' } };
  else if (doc.answer === 'prometheus')
    ok['text/plain'] = { schema: { type: 'string', description: 'Prometheus text exposition format 0.0.4' } };
  else if (doc.answer === 'html') ok['text/html'] = { schema: { type: 'string' } };
  else if (doc.answer === 'icalendar')
    ok['text/calendar'] = { schema: { type: 'string', description: 'iCalendar (RFC 5545)' } };
  else if (doc.answer === 'ndjson')
    ok['application/x-ndjson'] = {
      schema: { type: 'string', description: 'one AuditEvent (JSON) per line' },
    };
  else ok['application/json'] = { schema: schema(doc.answer) };
  if (doc.alsoHtml) ok['text/html'] = { schema: { type: 'string', description: 'the admin web page' } };
  const headers = {
    ...doc.okHeaders,
    ...(route.idempotencyKey ? { 'Idempotent-Replayed': IDEMPOTENT_REPLAYED_HEADER } : {}),
  };
  const responses: Record<string, unknown> = {
    '200': { description: 'OK', ...(Object.keys(headers).length ? { headers } : {}), content: ok },
  };
  // The calendar feed answers a poll of an unchanged feed by its tag (queries/calendarFeed.ts).
  if (doc.answer === 'icalendar')
    responses['304'] = {
      description:
        "Not Modified: `If-None-Match` names the feed's `ETag` (the feed has not changed), no body",
      headers: { ETag: { schema: { type: 'string' }, description: 'The weak tag of the feed' } },
    };
  if (doc.ranges)
    responses['206'] = {
      description:
        'One byte range of the file, asked for with `Range: bytes=a-b`, `bytes=a-` or `bytes=-n` (several ranges, or a header not read, get the whole file: 200)',
      headers: {
        'Content-Range': { schema: { type: 'string' }, description: '`bytes <first>-<last>/<size>`' },
      },
      content: ok,
    };
  const error = { $ref: '#/components/schemas/ErrorResponse' };
  for (const status of errorStatuses(route, doc)) {
    if (status === 503 && route.path === '/healthz') {
      responses['503'] = { description: ERROR_TEXT[503], content: ok };
      continue;
    }
    const body =
      status === 422 ? { anyOf: [{ $ref: '#/components/schemas/HTTPValidationError' }, error] } : error;
    responses[String(status)] = {
      description: ERROR_TEXT[status] ?? 'Error',
      ...(status === 416 && doc.ranges
        ? {
            headers: {
              'Content-Range': {
                schema: { type: 'string' },
                description: '`bytes */<size>`: the size of the file',
              },
            },
          }
        : {}),
      content: { 'application/json': { schema: body } },
    };
  }
  // Every answer carries the request id (src/http/middleware.ts), errors included: the key to its log line.
  for (const response of Object.values(responses) as { headers?: Record<string, unknown> }[])
    response.headers = { ...response.headers, 'X-Request-Id': { $ref: '#/components/headers/RequestId' } };
  // "Retry shortly" answers say when (src/http/middleware.ts): every 503, and a 409 `conflict`.
  for (const status of ['409', '503'])
    if (responses[status] && route.path !== '/healthz')
      (responses[status] as { headers: Record<string, unknown> }).headers['Retry-After'] = {
        $ref: '#/components/headers/RetryAfter',
      };
  return responses;
}
