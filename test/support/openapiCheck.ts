import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';

/**
 * Checks an answer of the running service against its own /openapi.json: the operation of the method and
 * path, the schema of the status. Every API test's `request()` runs it (test/support/system.ts), so the
 * document cannot drift from the code. An answer the document does not describe (a status the operation
 * does not list, a 200 of another shape) fails; a path no route serves must answer an ErrorResponse. A
 * request it carried out (2xx) must be one the document allows (its path and query parameters, its JSON
 * body): a client generated from the document, checking its requests, would otherwise refuse to send it.
 */
export interface AnswerCheck {
  (
    method: string,
    url: string,
    status: number,
    contentType: string | null,
    body: unknown,
    /** The request's JSON body as sent (a string is sent as is, not as JSON). */
    request?: { body?: unknown },
  ): void;
}

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema: unknown;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: unknown }> };
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

export function answerChecker(document: Record<string, any>): AnswerCheck {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'openapi', components: document.components });
  const compiled = new Map<unknown, ValidateFunction>();
  const validator = (schema: unknown) => {
    let v = compiled.get(schema);
    if (!v) {
      const text = JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/');
      v = ajv.compile(JSON.parse(text));
      compiled.set(schema, v);
    }
    return v;
  };
  const routes = Object.entries(document.paths as Record<string, Record<string, Operation>>).map(
    ([p, ops]) => ({
      re: new RegExp(`^${p.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}$`),
      path: p,
      ops,
    }),
  );
  const errorSchema = { $ref: '#/components/schemas/ErrorResponse' };

  // Parameters arrive as text: `limit=10` is the integer 10 to the schema, as to the route's codec.
  const params = new Ajv2020({ strict: false, allErrors: true, coerceTypes: true });
  addFormats(params);
  params.addSchema({ $id: 'openapi', components: document.components });
  const paramValidators = new Map<unknown, ValidateFunction>();
  const paramValidator = (schema: unknown) => {
    let v = paramValidators.get(schema);
    if (!v) {
      const text = JSON.stringify({ type: 'object', properties: { v: schema } }).replaceAll(
        '"#/components/',
        '"openapi#/components/',
      );
      v = params.compile(JSON.parse(text));
      paramValidators.set(schema, v);
    }
    return v;
  };

  const decode = (x: string) => {
    try {
      return decodeURIComponent(x);
    } catch {
      return x;
    }
  };
  /**
   * A request the service carried out (2xx) must be one the document allows: a generated client that
   * checks its requests would refuse to send it otherwise. Its path and query parameters, and its JSON body.
   */
  const checkRequest = (
    method: string,
    url: string,
    route: (typeof routes)[number],
    op: Operation,
    request: { body?: unknown },
  ) => {
    const what = `${method} ${url} was carried out`;
    const problems: string[] = [];
    const u = new URL(url, 'http://x');
    const segments = u.pathname.split('/');
    const pattern = route.path.split('/');
    // Percent-decoded as the route reads it; a `+` stays a `+` (an offset sent unencoded, `+01:00`, which
    // the routes take back from the space a form decoder makes of it).
    const query = new Map(
      u.search
        .slice(1)
        .split('&')
        .filter(Boolean)
        .map((kv) => {
          const at = kv.indexOf('=');
          return at < 0 ? [decode(kv), ''] : [decode(kv.slice(0, at)), decode(kv.slice(at + 1))];
        }),
    );
    for (const p of op.parameters ?? []) {
      let value: string | undefined;
      if (p.in === 'path') value = decode(segments[pattern.indexOf(`{${p.name}}`)] ?? '');
      else if (p.in === 'query') value = query.get(p.name);
      else continue;
      if (value === undefined) {
        if (p.required) problems.push(`required ${p.in} parameter ${p.name} missing`);
        continue;
      }
      const v = paramValidator(p.schema);
      if (!v({ v: value }))
        problems.push(`${p.in} parameter ${p.name}=${JSON.stringify(value)}: ${params.errorsText(v.errors)}`);
    }
    const json = op.requestBody?.content['application/json']?.schema;
    if (json && typeof request.body !== 'string') {
      if (request.body === undefined) {
        if (op.requestBody?.required) problems.push('no body, but the requestBody is required');
      } else {
        const v = validator(json);
        if (!v(request.body))
          problems.push(
            `body: ${ajv.errorsText(v.errors, { separator: '; ' })} ${JSON.stringify(request.body).slice(0, 500)}`,
          );
      }
    }
    if (problems.length)
      throw new Error(
        `${what}, but /openapi.json does not allow the request: ${problems.join('; ')} ` +
          '(request codecs: commands/*/codecs.ts, queries/*.ts; route table: src/http/openapi/routes.ts)',
      );
  };

  const checkAll: AnswerCheck = (method, url, status, contentType, body, request) => {
    const path = url.split('?')[0]!;
    const route = routes.find((r) => r.re.test(path) && r.ops[method.toLowerCase()]);
    if (route && request && status >= 200 && status < 300)
      checkRequest(method, url, route, route.ops[method.toLowerCase()]!, request);
    if (!contentType?.includes('application/json')) return;
    const what = `${method} ${path} answered ${status}`;
    let schema: unknown;
    if (!route) {
      // No operation: the service's own 404/405 (or the HTTP server's 400/408/417/431), an ErrorResponse.
      if (status < 400) throw new Error(`${what}, but /openapi.json has no such operation`);
      schema = errorSchema;
    } else {
      const op = route.ops[method.toLowerCase()]!;
      const response = op.responses[String(status)];
      if (!response)
        throw new Error(
          `${what}: /openapi.json lists no ${status} for ${method} ${route.path} (src/http/openapi/document.ts)`,
        );
      schema = response.content?.['application/json']?.schema;
      if (!schema) throw new Error(`${what} with JSON: /openapi.json has no JSON answer for ${status}`);
    }
    const validate = validator(schema);
    if (!validate(body))
      throw new Error(
        `${what}; the body does not match /openapi.json: ${ajv.errorsText(validate.errors, { separator: '; ' })}` +
          ' (answer codecs: src/resources/codecs.ts; route table: src/http/openapi/routes.ts)\n' +
          JSON.stringify(body).slice(0, 2000),
      );
  };
  return checkAll;
}
