import type { Middleware } from 'koa';
import { ValidationError, type ValidationIssue } from './errors';

/**
 * Input hygiene shared by every route (the middleware for bodies and query strings, `decode` for path
 * parameters): text PostgreSQL cannot store and nesting that recursive code cannot walk are refused with
 * 422 at the field's `loc` before any route, codec, idempotency hash or event store sees them.
 */

/** Deepest nesting any request body may have; free-form fields have their own, smaller limit. */
export const MAX_BODY_DEPTH = 32;

/**
 * A string PostgreSQL refuses (`\u0000` in text and jsonb) or that is not well-formed UTF-16 (a lone
 * surrogate cannot be encoded as UTF-8; jsonb rejects `\ud800`, text would store a replacement character).
 */
export function badText(s: string): string | null {
  if (s.includes('\u0000')) return 'String should not contain the NUL character';
  if (!(s as string & { isWellFormed(): boolean }).isWellFormed())
    return 'String should not contain a lone UTF-16 surrogate';
  return null;
}

/**
 * Most items an array, or keys an object, of a request may hold: far more than any endpoint takes (a
 * reorder's 1000 ids is the most), far fewer than 256 kB of JSON can carry (120,000 items). Each item of a
 * wider one was walked, decoded and answered an issue of its own: seconds of the event loop, every other
 * client waiting, for one request.
 */
export const MAX_ITEMS = 10_000;

/** A value met while walking a request: its place is kept as a link to its parent, built only for an issue. */
interface Visit {
  v: unknown;
  key: string | number;
  parent: Visit | null;
  depth: number;
}

const locOf = (where: string, at: Visit | null, ...tail: (string | number)[]) => {
  const keys: (string | number)[] = [];
  for (let x = at; x?.parent; x = x.parent) keys.push(x.key);
  return [where, ...keys.reverse(), ...tail];
};

/**
 * Every bad string (values and keys), the first place nested deeper than `maxDepth` and every array or
 * object wider than MAX_ITEMS, found without recursion (a 50,000-deep array must not overflow the stack
 * here either) and without copying a path per value. At most 20 issues.
 */
export function inputIssues(
  value: unknown,
  where: 'body' | 'path' | 'query' | 'header',
  maxDepth = MAX_BODY_DEPTH,
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const stack: Visit[] = [{ v: value, key: where, parent: null, depth: 0 }];
  while (stack.length && issues.length < 20) {
    const at = stack.pop()!;
    const v = at.v;
    if (typeof v === 'string') {
      const msg = badText(v);
      if (msg) issues.push({ loc: locOf(where, at), msg, type: 'string_invalid_text' });
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (at.depth >= maxDepth) {
      issues.push({
        loc: locOf(where, at),
        msg: `Input should be nested at most ${maxDepth} levels deep`,
        type: 'too_deep',
      });
      continue;
    }
    const keys = Array.isArray(v) ? null : Object.keys(v);
    if ((keys ?? (v as unknown[])).length > MAX_ITEMS) {
      issues.push({
        loc: locOf(where, at),
        msg: `Input should have at most ${MAX_ITEMS} items`,
        type: 'too_long',
      });
      continue;
    }
    const depth = at.depth + 1;
    if (!keys) {
      const items = v as unknown[];
      for (let i = items.length - 1; i >= 0; i--) stack.push({ v: items[i], key: i, parent: at, depth });
      continue;
    }
    for (let i = keys.length - 1; i >= 0; i--) {
      const k = keys[i]!;
      const msg = badText(k);
      if (msg) issues.push({ loc: locOf(where, at, k), msg: `Key: ${msg}`, type: 'key_invalid_text' });
      else stack.push({ v: (v as Record<string, unknown>)[k], key: k, parent: at, depth });
    }
  }
  return issues;
}

/** Refuses a body or query string with bad text or too deep nesting (runs right after the body parser). */
export function inputHygiene(): Middleware {
  return async (ctx, next) => {
    const issues = [...inputIssues(ctx.request.body, 'body'), ...inputIssues(ctx.query, 'query')];
    if (issues.length) throw new ValidationError(issues);
    await next();
  };
}

/** Depth of a JSON value (a scalar is 0), without recursion. */
export function depthOf(value: unknown, stopAt = Infinity): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    const here = d + 1;
    if (here > max) max = here;
    if (max > stopAt) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, here]);
  }
  return max;
}
