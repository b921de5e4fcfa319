// The hottest request of the service, a successful GET /v1/learning-opportunities/{id}, answered
// straight from node:http: the same keyed read as the express route (reads.withKey.getOne), the
// same bytes, the same headers, the same access log and metrics (trackRequest). Anything that is
// not that success (another path or method, a missing, malformed, unknown or unscoped key, a bad
// id, a record that is not visible, a database error) is handed to express untouched, which
// answers it exactly as before, problem details included. Express costs as much CPU per request as
// everything else on this path together (bench/README.md), and this request is most of the load.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerToken } from '../auth/bearer.ts';
import { isUuid } from '../catalog/input.ts';
import type { CatalogReads } from '../catalog/read-model.ts';
import type { Logger } from '../logger.ts';
import { trackRequest } from './request-context.ts';
import { JSON_TYPE } from './v1-routes.ts';

const PREFIX = '/v1/learning-opportunities/';
const ROUTE = '/v1/learning-opportunities/:id';

export type FastLane = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/** Returns true when it answered the request; false when express must. */
export function fastGetOne(deps: { reads: CatalogReads; logger: Logger }): FastLane {
  return async (req, res) => {
    const url = req.url;
    if (req.method !== 'GET' || url === undefined || !url.startsWith(PREFIX)) return false;
    const started = process.hrtime.bigint();
    const query = url.indexOf('?', PREFIX.length);
    const id = url.slice(PREFIX.length, query < 0 ? undefined : query);
    const key = bearerToken(req.headers.authorization);
    if (!key || !isUuid(id)) return false;
    let doc: string | null;
    try {
      const result = await deps.reads.withKey.getOne(key, 'catalog:read', id.toLowerCase());
      doc = result?.value ?? null; // null also when the key lacks the scope (the read did not run)
    } catch {
      return false; // express meets the same error and answers it (503 when the database is down)
    }
    if (doc === null) return false;
    trackRequest(deps.logger, req, res, { started, route: () => ROUTE, path: () => url });
    res.statusCode = 200;
    res.setHeader('Content-Type', JSON_TYPE);
    res.setHeader('Content-Length', Buffer.byteLength(doc));
    res.end(doc);
    return true;
  };
}
