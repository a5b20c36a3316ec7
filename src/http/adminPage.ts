import fs from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { notFound } from './errors';

/**
 * public/admin of the package, found upwards from here: src/http under ts-jest, dist/src/http once built
 * (dist/ has a package.json of its own, so the folder itself is what is looked for).
 */
function adminDir(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'public', 'admin');
    if (fs.existsSync(path.join(candidate, 'index.html'))) return candidate;
    if (path.dirname(dir) === dir) throw new Error(`public/admin not found above ${__dirname}`);
  }
}
const DIR = adminDir();
const PAGE_POLICY = [
  "default-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
const ASSETS: Record<string, string> = {
  'admin.js': 'application/javascript; charset=utf-8',
  'admin.css': 'text/css; charset=utf-8',
};

/**
 * Endpoint 31 for a browser: a request that prefers text/html gets the operators' page (no token needed to
 * load it; the page signs in with an admin token and reads the JSON API). Any other request goes on to the
 * JSON counts and their admin guard.
 */
export function adminPageForBrowsers(): Middleware {
  return async (ctx, next) => {
    // One URL, two answers chosen by Accept: caches (a browser's included) must key them apart, or the
    // counts the page's script reads here are shown for the page itself (RFC 9110, 12.5.5).
    ctx.vary('Accept');
    if (ctx.accepts('json', 'html') !== 'html') return next();
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-cache');
    // The page holds an admin token: it is never framed (clickjacking; X-Frame-Options for browsers without
    // frame-ancestors), never sends a form (a sign-in pressed before the script ran would be a GET carrying
    // the token into the URL), and names no page it came from.
    ctx.set('Content-Security-Policy', PAGE_POLICY);
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.body = fs.createReadStream(path.join(DIR, 'index.html'));
  };
}

/** The page's script and style sheet. */
export function adminAssetRoutes(): Router {
  const router = new Router();
  router.get('/admin/assets/:asset', (ctx) => {
    const asset = ctx.params.asset ?? '';
    // Own names only: `constructor` or `__proto__` would find Object's, and stream a file that is not there.
    const type = Object.hasOwn(ASSETS, asset) ? ASSETS[asset] : undefined;
    if (!type) throw notFound('not_found', `no such asset: ${asset}`);
    ctx.type = type;
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.body = fs.createReadStream(path.join(DIR, asset));
  });
  return router;
}
