// GET /v1/openapi.json: the OpenAPI 3.1 document of /v1, kept in schema/openapi.json. It is public
// (no API key): a client needs it before it has a key. Tests validate real responses against it.
// Served by the dispatcher (dispatcher.ts) like every /v1 endpoint.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { V1Serve } from './routes.ts';

export const OPENAPI_PATH = resolve(import.meta.dirname, '../../../schema/openapi.json');

export function openApiDocument(): V1Serve {
  // Read once and served as stored; a malformed file fails at start, not on the first request.
  const text = readFileSync(OPENAPI_PATH, 'utf8');
  const body = JSON.stringify(JSON.parse(text));
  const bytes = Buffer.byteLength(body);
  return async (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', bytes);
    res.writeHead(200);
    res.end(body);
  };
}
