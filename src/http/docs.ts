// GET /docs: the API reference, Swagger UI (swagger-ui-dist) rendering GET /v1/openapi.json. Public
// like the document itself. Every asset is served from here, never from a CDN, and the page's
// Content-Security-Policy lets the browser load nothing from anywhere else (Swagger UI's online
// validator is switched off too).
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { exactRouter } from './exact-router.ts';
import type { Router } from 'express';
import { methodNotAllowed } from './problem.ts';

const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'swagger-ui.css',
  'swagger-ui-bundle.js': 'swagger-ui-bundle.js',
  'favicon.png': 'favicon-32x32.png',
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Learning Opportunities Data Service: API reference</title>
  <link rel="icon" href="/docs/assets/favicon.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="reference"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/init.js"></script>
</body>
</html>
`;

const INIT = `SwaggerUIBundle({ url: '/v1/openapi.json', dom_id: '#reference', validatorUrl: null, deepLinking: true, docExpansion: 'list' });\n`;

// Swagger UI sets inline styles and shows images from data: URIs; scripts only from here.
const CSP =
  "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

export function docsRoutes(): Router {
  const router = exactRouter();
  router.get('/docs', (_req, res) => {
    res
      .set({ 'Cache-Control': 'public, max-age=300', 'Content-Security-Policy': CSP })
      .type('text/html; charset=utf-8')
      .send(PAGE);
  });
  router.get('/docs/assets/init.js', (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').type('text/javascript; charset=utf-8').send(INIT);
  });
  router.get('/docs/assets/:file', (req, res, next) => {
    const file = ASSETS[req.params.file];
    if (!file) return next();
    res.set('Cache-Control', 'public, max-age=86400').sendFile(join(SWAGGER_UI_DIR, file));
  });
  const notAllowed = methodNotAllowed(['GET', 'HEAD']);
  router.all('/docs', notAllowed);
  router.all('/docs/assets/:file', (req, res, next) =>
    req.params.file === 'init.js' || req.params.file in ASSETS ? notAllowed(req, res, next) : next(),
  );
  return router;
}
