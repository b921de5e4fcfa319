// The read-only /v1 facade: parse, authorize, call the read model, present. HEAD is served by the
// GET routes (express strips the body); every other method on a known path is 405.
// The key is checked in the same statement as the read (one round trip per request, see
// auth/api-keys.ts queryWithKey), and always before the input: an invalid key is 401/403 whatever
// the input, and a 400 or 404 is only ever shown to a caller whose key holds catalog:read.
import type { Request, Router } from 'express';
import { exactRouter } from './exact-router.ts';
import type { Pool } from 'pg';
import { authenticate, type Principal } from '../auth/api-keys.ts';
import { knownKey, presentedKey, requireScope } from '../auth/bearer.ts';
import { parseId } from '../catalog/input.ts';
import { type CatalogReads, type Keyed, renderPage } from '../catalog/read-model.ts';
import { notFound } from '../errors.ts';
import { methodNotAllowed } from './problem.ts';
import { parsePagingQuery } from '../paging.ts';

// Set with setHeader: res.type() would look the full type up in the mime table on every request.
export const JSON_TYPE = 'application/json; charset=utf-8';
const SCOPE = 'catalog:read';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

/** Parses the input; if it is invalid, the key is looked up on its own first (401/403 before 400). */
async function parseAfterKey<T>(pool: Pool, key: string, parse: () => T): Promise<T> {
  try {
    return parse();
  } catch (error) {
    requireScope(knownKey(await authenticate(pool, key)), SCOPE);
    throw error;
  }
}

/** The value of a keyed read, for a live key holding catalog:read (401/403 otherwise). */
function authorized<T>(req: Request, result: Keyed<T>): T {
  const principal = knownKey(result?.principal ?? null);
  requireScope(principal, SCOPE);
  req.principal = principal;
  return result!.value;
}

export function v1Router(deps: { pool: Pool; reads: CatalogReads }): Router {
  const router = exactRouter();
  const onlyGet = methodNotAllowed(['GET', 'HEAD']);

  router.get('/learning-opportunities', async (req: Request, res) => {
    const key = presentedKey(req.get('authorization'));
    const { limit, offset } = await parseAfterKey(deps.pool, key, () => parsePagingQuery(req.query as Record<string, unknown>));
    const page = authorized(req, await deps.reads.withKey.getPage(key, SCOPE, limit, offset));
    res.setHeader('Content-Type', JSON_TYPE);
    res.send(renderPage(page!)); // authorized: the key holds the scope, so the read ran
  });
  router.all('/learning-opportunities', onlyGet);

  router.get('/learning-opportunities/:id', async (req: Request, res) => {
    const key = presentedKey(req.get('authorization'));
    const id = await parseAfterKey(deps.pool, key, () => parseId(req.params.id));
    const doc = authorized(req, await deps.reads.withKey.getOne(key, SCOPE, id));
    if (doc === null) throw notFound(`Learning opportunity ${id}`);
    res.setHeader('Content-Type', JSON_TYPE);
    res.send(doc);
  });
  router.all('/learning-opportunities/:id', onlyGet);

  return router;
}
