import fs from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import { notFound } from '../errors';
import { buildOpenApi } from './document';

/** The renderer's files, served from node_modules (no CDN: the service may run offline). */
const SWAGGER_UI_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'docs.js': 'application/javascript; charset=utf-8',
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Coaching booking service: API reference</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/swagger-ui-standalone-preset.js"></script>
  <script src="/docs/docs.js"></script>
</body>
</html>
`;

/** Swagger UI pointed at our document, with the bearer token kept across reloads. */
const INIT = `window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    persistAuthorization: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: 'StandaloneLayout',
  });
};
`;

/**
 * `GET /openapi.json` (built once, from every router the app mounts: `routers` is called on first use, so
 * this router can describe itself) and `GET /docs`, the reference page rendered by Swagger UI.
 */
export function openApiRoutes(routers: () => Router[], version: string): Router {
  const router = new Router();
  let document: Record<string, unknown> | null = null;
  router.get('/openapi.json', (ctx) => {
    document ??= buildOpenApi(routers(), { version }).document;
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = document;
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    // The page keeps a bearer token (persistAuthorization) and sends requests on a click: another site
    // framing it could lure those clicks (clickjacking). Never shown in a frame, as the admin page.
    ctx.set('Content-Security-Policy', "frame-ancestors 'none'");
    ctx.set('X-Frame-Options', 'DENY');
    ctx.body = PAGE;
  });
  router.get('/docs/:asset', (ctx) => {
    const asset = ctx.params.asset ?? '';
    // Own names only: `constructor` or `__proto__` would find Object's, and stream a file that is not there.
    const type = Object.hasOwn(ASSETS, asset) ? ASSETS[asset] : undefined;
    if (!type) throw notFound('not_found', `no such asset: ${asset}`);
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = asset === 'docs.js' ? INIT : fs.createReadStream(path.join(SWAGGER_UI_DIR, asset));
  });
  return router;
}
