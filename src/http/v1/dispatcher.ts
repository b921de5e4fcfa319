// The /v1 room's one door: a node:http request listener in front of express (service.ts) that
// serves every /v1 endpoint (routes.ts) itself. Express never sees these paths: it cost as much CPU
// per request as everything else on the read path together (bench/README.md). For a path under
// /v1/, in this order: CORS (cors.ts; a preflight is answered here), the exact route (an unknown
// path goes on to express, whose 404 answers every unknown path alike), the request id, access log
// line and metrics (trackRequest), 405 with Allow for another method, the one admission step
// (admission.ts: key and scope, then the rate limit) unless the route is public, the endpoint.
// Every problem is answered through the one problem writer (problem+json), as express's are; its
// `instance` (the request target) leaves any `key` parameter out (problem.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ListReads } from '../../catalog/list-query.ts';
import type { CatalogReads } from '../../catalog/read-model.ts';
import type { ChangeFeed } from '../../feed/change-feed.ts';
import type { Logger } from '../../kernel/logger.ts';
import { answerError, notAllowed } from '../problem.ts';
import { trackRequest } from '../request-context.ts';
import { originForm } from '../request-target.ts';
import { admit, type Admission } from './admission.ts';
import { calendarEndpoint } from './calendar.ts';
import { cors } from './cors.ts';
import { eventEndpoints } from './events.ts';
import { learningOpportunityEndpoints } from './learning-opportunities.ts';
import { openApiDocument } from './openapi-document.ts';
import { routeOf, V1_PREFIX, V1_ROUTES, type V1Route, type V1Serve } from './routes.ts';
import { runAsKey } from '../../db/key-connections.ts';

export type V1Deps = Admission & {
  reads: CatalogReads;
  lists: ListReads;
  feed: ChangeFeed;
  logger: Logger;
  /** CORS_ORIGINS (empty: CORS off). */
  corsOrigins: readonly string[];
  /** PAGE_MAX_BYTES, the bound of a calendar's bytes (default: the service's default). */
  pageMaxBytes?: number;
};

/** The request listener of /v1: true when it answered (the path is one of its endpoints, or a CORS preflight). */
export function v1Dispatcher(deps: V1Deps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const catalog = learningOpportunityEndpoints(deps);
  const feed = eventEndpoints(deps);
  const endpoints: Record<V1Route, V1Serve> = {
    '/v1/learning-opportunities': catalog.list,
    '/v1/learning-opportunities/:id': catalog.one,
    '/v1/events': feed.events,
    '/v1/events/head': feed.head,
    '/v1/calendar.ics': calendarEndpoint(deps),
    '/v1/openapi.json': openApiDocument(),
  };
  const corsHeaders = cors(deps.corsOrigins);

  async function serve(
    route: V1Route,
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    query: string,
  ): Promise<void> {
    const { methods, scope, queryKey } = V1_ROUTES[route];
    if (!methods.includes(req.method!)) throw notAllowed(req.method, [...methods]);
    const principal =
      scope === null ? null : await admit(deps, req, res, scope, queryKey ? { query, scope: queryKey } : null);
    // The endpoint's reads on the main pool count against its key's connections (db/key-connections.ts).
    const run = () => endpoints[route](req, res, { path, query, principal });
    await (principal ? runAsKey(principal.keyId, run) : run());
  }

  return (req, res) => {
    const started = process.hrtime.bigint();
    const url = originForm(req.url ?? '');
    if (!url.startsWith(V1_PREFIX)) return false;
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const route = routeOf(path);
    const track = () =>
      trackRequest(deps.logger, req, res, { started, route: () => route ?? undefined, path: () => url });
    if (corsHeaders?.(req, res, track)) return true;
    if (route === null) return false;
    const tracked = track();
    const query = q < 0 ? '' : url.slice(q + 1);
    serve(route, req, res, path, query).catch((error: unknown) => answerError(tracked.log(), req, res, error, url));
    return true;
  };
}
