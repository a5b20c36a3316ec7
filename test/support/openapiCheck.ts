import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';

/**
 * Checks an answer of the running service against its own /openapi.json: the operation of the method and
 * path, the schema of the status. Every API test's `request()` runs it (test/support/system.ts), so the
 * document cannot drift from the code. An answer the document does not describe (a status the operation
 * does not list, a 200 of another shape) fails; a path no route serves must answer an ErrorResponse.
 */
export interface AnswerCheck {
  (method: string, url: string, status: number, contentType: string | null, body: unknown): void;
}

interface Operation {
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

  return (method, url, status, contentType, body) => {
    if (!contentType?.includes('application/json')) return;
    const path = url.split('?')[0]!;
    const route = routes.find((r) => r.re.test(path) && r.ops[method.toLowerCase()]);
    const what = `${method} ${path} answered ${status}`;
    let schema: unknown;
    if (!route) {
      // No operation: the service's own 404/405 (or the HTTP server's 400/408/431), an ErrorResponse.
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
}
