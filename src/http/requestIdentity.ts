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
 * body as a JSON value (the order its object keys came in does not count).
 */
export const requestHash = (method: string, path: string, body: unknown) =>
  hashOf(method, path, JSON.stringify(body ?? null, sortedKeys));

/**
 * Hash of the request with its body's text in the order it arrived: what keys were compared by before
 * bodies were compared as values, and what a keyed request's tag (so its ids) is still derived from.
 */
export const receivedRequestHash = (method: string, path: string, body: unknown) =>
  hashOf(method, path, JSON.stringify(body ?? null));
