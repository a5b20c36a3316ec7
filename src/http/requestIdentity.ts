import { createHash } from 'node:crypto';

/** A path segment that is a whole uuid: the handlers read it in any letter case (the same id). */
const UUID_SEGMENT = /(?<=\/)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?=\/|$)/gi;

/**
 * The path as the routes read it, its uuid segments in lower case and without a trailing slash (the router
 * takes `/approve/` as `/approve`): a retry naming the same resource so is the same request, not 422
 * `idempotency_key_reused`. A path already in that form is unchanged, so the hashes (and tags) of such
 * requests are as they were.
 */
const canonicalPath = (path: string) =>
  path.replace(UUID_SEGMENT, (id) => id.toLowerCase()).replace(/(?<=.)\/+$/, '');

const hashOf = (method: string, path: string, json: string) =>
  createHash('sha256')
    .update(`${method} ${canonicalPath(path)}\n${json}`)
    .digest('hex');

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
