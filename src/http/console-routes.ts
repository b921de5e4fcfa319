// GET /console: the operator console (docs/console.md), and /console/graphql: GraphiQL. Static
// pages served by the service itself; every asset is a file of src/console/ or of an npm package,
// listed here by name (nothing else under /console is served). The pages hold no data and no key:
// they sign in with an API key kept in sessionStorage and call POST /graphql with it, like any client.
//
// Content-Security-Policy, the same for both pages: only this origin's scripts and style sheets (no
// inline script or style, no eval), requests only to this origin, and no form may submit anywhere
// (sign-in is handled by script, so a key can never end up in a URL). GraphiQL 3 (React 18 and
// CodeMirror 5, UMD builds) runs under it as it is: it sets styles through the DOM, which CSP allows,
// and needs no inline <style> or eval (test/console/console.test.ts opens its docs and completion
// with no CSP report). GraphiQL 4 and later need a bundler or an import map and Monaco's workers.
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import type { Response, Router } from 'express';
import { exactRouter } from './exact-router.ts';
import { methodNotAllowed } from './problem.ts';

const CONSOLE_DIR = resolve(import.meta.dirname, '../console');
const packageDir = (name: string) => dirname(createRequire(import.meta.url).resolve(`${name}/package.json`));

/** The console's own files (src/console/), by URL name. */
const ASSETS = new Set([
  'console.css',
  'main.js',
  'api.js',
  'dom.js',
  'chart.js',
  'labels.js',
  'receivers.js',
  'receiver-form.js',
  'receiver.js',
  'attempts.js',
  'dead-letters.js',
  'events.js',
  'graphiql-page.js',
  'graphiql-page.css',
]);
/** GraphiQL and its React peers, served from node_modules as they are published. */
const VENDOR: Record<string, string> = {
  'react.production.min.js': join(packageDir('react'), 'umd/react.production.min.js'),
  'react-dom.production.min.js': join(packageDir('react-dom'), 'umd/react-dom.production.min.js'),
  'graphiql.min.js': join(packageDir('graphiql'), 'graphiql.min.js'),
  'graphiql.min.css': join(packageDir('graphiql'), 'graphiql.min.css'),
};

export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; font-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
};

function sendPage(res: Response, file: string): void {
  res
    .set({ ...HEADERS, 'Content-Security-Policy': CONSOLE_CSP, 'Cache-Control': 'no-cache' })
    .type('text/html; charset=utf-8')
    .sendFile(join(CONSOLE_DIR, file));
}

export function consoleRoutes(): Router {
  const router = exactRouter();
  router.get('/console', (_req, res) => sendPage(res, 'index.html'));
  router.get('/console/graphql', (_req, res) => sendPage(res, 'graphql.html'));
  router.get('/console/assets/:file', (req, res, next) => {
    if (!ASSETS.has(req.params.file)) return next();
    // Revalidated on every load: a new version of the console is never mixed with cached old modules.
    res.set({ ...HEADERS, 'Cache-Control': 'no-cache' }).sendFile(join(CONSOLE_DIR, req.params.file));
  });
  router.get('/console/vendor/:file', (req, res, next) => {
    const file = VENDOR[req.params.file];
    if (!file) return next();
    res.set({ ...HEADERS, 'Cache-Control': 'public, max-age=86400' }).sendFile(file);
  });
  const notGet = methodNotAllowed(['GET', 'HEAD']);
  router.all('/console', notGet);
  router.all('/console/graphql', notGet);
  router.all('/console/assets/:file', (req, res, next) =>
    ASSETS.has(req.params.file) ? notGet(req, res, next) : next(),
  );
  router.all('/console/vendor/:file', (req, res, next) =>
    req.params.file in VENDOR ? notGet(req, res, next) : next(),
  );
  return router;
}
