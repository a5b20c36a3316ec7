import { createHash } from 'node:crypto';

const hashOf = (method: string, path: string, json: string) =>
  createHash('sha256').update(`${method} ${path}\n${json}`).digest('hex');

/** Object keys in one order (sorted by code unit); arrays keep theirs; numbers as parsed. */
const sortedKeys = (_key: string, value: unknown) =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? // fromEntries defines own properties, so a "__proto__" key stays a key.
      Object.fromEntries(
        Object.keys(value)
          .sort()
          .map((k) => [k, (value as Record<string, unknown>)[k]]),
      )
    : value;

/**
 * Hash of what makes two requests "the same request" for an Idempotency-Key: method, path and body, the
 * body as a JSON value (the order its object keys came in does not count). For a body whose keys came
 * sorted (and every body without objects of two keys or more) it is `receivedRequestHash`, the hash the
 * service took before, so such requests keep their tag (and ids) across the change.
 */
export const requestHash = (method: string, path: string, body: unknown) =>
  hashOf(method, path, JSON.stringify(body ?? null, sortedKeys));

/**
 * The hash keys claimed before the change were stored with: the body's text in the order it arrived.
 * A key row holding it still matches a retry sent in the same order (src/http/idempotency.ts).
 */
export const receivedRequestHash = (method: string, path: string, body: unknown) =>
  hashOf(method, path, JSON.stringify(body ?? null));
