// GET /v1/openapi.json: the OpenAPI 3.1 document of /v1, kept in schema/openapi.json. It is public
// (no API key): a client needs it before it has a key. Tests validate real responses against it.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Router } from 'express';
import { exactRouter } from './exact-router.ts';
import { methodNotAllowed } from './problem.ts';

export const OPENAPI_PATH = resolve(import.meta.dirname, '../../schema/openapi.json');

export function openApiRoutes(): Router {
  // Read once and served as stored; a malformed file fails at start, not on the first request.
  const text = readFileSync(OPENAPI_PATH, 'utf8');
  const body = JSON.stringify(JSON.parse(text));
  const router = exactRouter();
  router.get('/openapi.json', (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').type('application/json; charset=utf-8').send(body);
  });
  router.all('/openapi.json', methodNotAllowed(['GET', 'HEAD']));
  return router;
}
