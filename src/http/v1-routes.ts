// The read-only /v1 facade: parse, authorize, call the read model, present. HEAD is served by the
// GET routes (express strips the body); every other method on a known path is 405.
import { Router, type Request, type RequestHandler } from 'express';
import type { Pool } from 'pg';
import type { Principal } from '../auth/api-keys.ts';
import { principalFromHeader, requireScope } from '../auth/bearer.ts';
import { parseId } from '../catalog/input.ts';
import { type CatalogReads, renderPage } from '../catalog/read-model.ts';
import { notFound } from '../errors.ts';
import { methodNotAllowed } from './problem.ts';
import { parsePagingQuery } from './paging.ts';

const JSON_TYPE = 'application/json; charset=utf-8';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

export function requireKeyWithScope(pool: Pool, scope: 'catalog:read'): RequestHandler {
  return async (req, _res, next) => {
    const principal = await principalFromHeader(pool, req.get('authorization'));
    requireScope(principal, scope);
    req.principal = principal;
    next();
  };
}

export function v1Router(deps: { pool: Pool; reads: CatalogReads }): Router {
  const router = Router();
  const auth = requireKeyWithScope(deps.pool, 'catalog:read');
  const onlyGet = methodNotAllowed(['GET', 'HEAD']);

  router.get('/learning-opportunities', auth, async (req: Request, res) => {
    const { limit, offset } = parsePagingQuery(req.query as Record<string, unknown>);
    const page = await deps.reads.getPage(limit, offset, 'public');
    res.type(JSON_TYPE).send(renderPage(page));
  });
  router.all('/learning-opportunities', onlyGet);

  router.get('/learning-opportunities/:id', auth, async (req: Request, res) => {
    const id = parseId(req.params.id);
    const doc = await deps.reads.getOne(id, 'public');
    if (doc === null) throw notFound(`Learning opportunity ${id}`);
    res.type(JSON_TYPE).send(doc);
  });
  router.all('/learning-opportunities/:id', onlyGet);

  return router;
}
