// The read-only /v1 facade, served on node:http in front of express: these two endpoints are most
// of the load, and express costs as much CPU per request as everything else on the path together
// (bench/README.md). Each endpoint is one handler mounted once; express never sees these paths.
// Every outcome is answered here: the record or page, 304, and every problem (405, 401, 403, 400,
// 404, 503, 500) through the same problem writer as express.
// The key is checked first, from the process's key cache (auth/key-cache.ts: a request is one round
// trip, the read), and always before the input: an invalid key is 401/403 whatever the input, and
// a 400 or 404 is only ever shown to a caller whose key holds catalog:read.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import type { Principal, Scope } from '../auth/api-keys.ts';
import { authenticate } from '../auth/bearer.ts';
import { parseId } from '../ids.ts';
import type { KeyCache } from '../auth/key-cache.ts';
import { type CatalogReads, pageOf, renderedPageBytes, renderPage } from '../catalog/read-model.ts';
import { notFound } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { heldTags, sendCacheable } from './conditional.ts';
import { parsePagingQuery } from '../paging.ts';
import type { RateLimiter } from './rate-limit.ts';
import { answerError, badPathEncoding, notAllowed } from './problem.ts';
import { trackRequest } from './request-context.ts';

const SCOPE: Scope = 'catalog:read';
const LIST_PATH = '/v1/learning-opportunities';
const ONE_PREFIX = '/v1/learning-opportunities/';
const READ_METHODS = ['GET', 'HEAD'];

/** The endpoints served here, with their methods (the OpenAPI document's test compares them). */
export const V1_READ_ROUTES = [LIST_PATH, `${ONE_PREFIX}:id`].map((path) => ({ path, methods: READ_METHODS }));

/** What admission needs: the key cache and the per-key limiter (null: limits off). */
export type Admission = { keys: KeyCache; limiter: RateLimiter | null };
type Deps = Admission & { reads: CatalogReads; logger: Logger };
type Endpoint = { route: string; serve: (req: IncomingMessage, res: ServerResponse, path: string, query: string) => Promise<void> };

/** The request listener of the /v1 reads: true when the path is one of theirs (and it answered). */
export function v1Reads(deps: Deps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const list: Endpoint = { route: V1_READ_ROUTES[0]!.path, serve: (req, res, _path, query) => servePage(deps, req, res, query) };
  const one: Endpoint = { route: V1_READ_ROUTES[1]!.path, serve: (req, res, path) => serveRecord(deps, req, res, path.slice(ONE_PREFIX.length)) };
  return (req, res) => {
    const started = process.hrtime.bigint();
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const endpoint = path === LIST_PATH ? list : isOneSegmentBelow(path) ? one : null;
    if (!endpoint) return false;
    const tracked = trackRequest(deps.logger, req, res, { started, route: () => endpoint.route, path: () => url });
    const answered = READ_METHODS.includes(req.method!)
      ? endpoint.serve(req, res, path, q < 0 ? '' : url.slice(q + 1))
      : Promise.reject(notAllowed(req.method, READ_METHODS));
    answered.catch((error: unknown) => answerError(tracked.log(), req, res, error, url));
    return true;
  };
}

const isOneSegmentBelow = (path: string): boolean => path.length > ONE_PREFIX.length && path.startsWith(ONE_PREFIX) && !path.includes('/', ONE_PREFIX.length);

// With If-None-Match, the read leaves the body out when the stored tag matches (`held`); `*`
// matches any tag, so the body is not needed either.
async function serveRecord(deps: Deps, req: IncomingMessage, res: ServerResponse, segment: string): Promise<void> {
  await admit(deps, req, res);
  const id = parseId(decodeSegment(segment));
  const held = heldTags(req.headers['if-none-match']);
  const row = await deps.reads.conditional.getOne(id, held);
  if (!row) throw notFound(`Learning opportunity ${id}`);
  sendCacheable(res, row.etag, held === '*' ? null : row.doc, row.doc_bytes);
}

async function servePage(deps: Deps, req: IncomingMessage, res: ServerResponse, query: string): Promise<void> {
  await admit(deps, req, res);
  const { limit, offset } = parsePagingQuery(parseQuery(query));
  const held = heldTags(req.headers['if-none-match']);
  const row = await deps.reads.conditional.getPage(limit, offset, held === '*' ? null : held);
  if (held === '*' || row.docs === null) return sendCacheable(res, row.etag, null);
  const page = pageOf(row, limit, offset);
  const body = renderPage(page, row.n);
  sendCacheable(res, row.etag, body, renderedPageBytes(body, page, row.docs_bytes));
}

/**
 * Authenticates the request (401/403) and counts it against the key's rate limit (429); the answer
 * carries the RateLimit headers. Every /v1 endpoint admits through here, before it looks at its
 * input, with the process's one limiter (the feed too, feed-routes.ts).
 */
export async function admit(deps: Admission, req: IncomingMessage, res: ServerResponse): Promise<Principal> {
  const principal = await authenticate(req.headersDistinct.authorization, SCOPE, deps.keys);
  deps.limiter?.admit(principal, res);
  return principal;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badPathEncoding();
  }
}
