// The first middleware of every request: a request id (accepted from the caller when sane, else
// generated) echoed in X-Request-Id, a child logger carrying it on req.log, one access log line and
// one observation of the HTTP duration histogram when the response is done.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import { holdsKey } from '../auth/api-keys.ts';
import type { Logger } from '../kernel/logger.ts';
import { httpRequestDuration } from '../kernel/metrics.ts';
import { withoutKeys } from './request-target.ts';

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by requestContext (the app's first middleware). */
    requestId: string;
    /** The app logger with this request's id bound: use it for every log line of the request. */
    log: Logger;
  }
}

export const REQUEST_ID_HEADER = 'X-Request-Id';
// Bounded and free of anything that could forge log lines or headers (no spaces, quotes, CR/LF).
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;
// Probes and scrapes arrive every few seconds: logged at debug so they do not drown the access log.
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);
export const UNMATCHED_ROUTE = 'unmatched';
// Metric labels take only these methods; any other (Node parses some thirty, WebDAV's among them)
// is 'other', so a client cannot add series by inventing requests. Routes are bounded the same way:
// the route pattern, never the path, and UNMATCHED_ROUTE for every unknown path.
const LABELLED_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
export const OTHER_METHOD = 'other';
export const methodLabel = (method: string | undefined): string =>
  method !== undefined && LABELLED_METHODS.has(method) ? method : OTHER_METHOD;

/**
 * The caller's own request id when it is safe to repeat, else a new one. One that holds a key's form
 * is not repeated: it would be echoed in the answer's header and written on every log line of the
 * request (found from outside: `X-Request-Id: <the key>` put the key in the service's log).
 */
export function acceptRequestId(incoming: string | undefined): string {
  return incoming !== undefined && SAFE_REQUEST_ID.test(incoming) && !holdsKey(incoming) ? incoming : randomUUID();
}

export function requestContext(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const route = captureRoutePattern(req);
    const tracked = trackRequest(logger, req, res, {
      started,
      route: () => route.pattern,
      path: () => req.originalUrl,
    });
    req.requestId = tracked.requestId;
    req.log = tracked.log();
    next();
  };
}

/** A tracked request: its id, and its logger (the app logger with the id bound), made on first use. */
export type TrackedRequest = { requestId: string; log: () => Logger };

/**
 * Request id, X-Request-Id, and when the response is done one access line and one histogram
 * observation. Shared by the express middleware above and the /v1 dispatcher (v1/dispatcher.ts).
 * The child logger is made only when the request writes a line of its own (an error, a warning):
 * the access line carries the id as a field, so most requests never make one.
 */
export function trackRequest(
  logger: Logger,
  req: IncomingMessage,
  res: ServerResponse,
  at: { started: bigint; route: () => string | undefined; path: () => string },
): TrackedRequest {
  const header = req.headers['x-request-id'];
  const requestId = acceptRequestId(typeof header === 'string' ? header : undefined);
  let child: Logger | undefined;
  const log = () => (child ??= logger.child({ requestId }));
  res.setHeader(REQUEST_ID_HEADER, requestId);
  // 'close' is emitted once per response; `on` spares the once-wrapper of every request.
  res.on('close', () => {
    const seconds = Number(process.hrtime.bigint() - at.started) / 1e9;
    const status = res.writableFinished ? res.statusCode : 499; // 499: the client went away first
    const routeLabel = at.route() ?? UNMATCHED_ROUTE;
    httpRequestDuration.observe(
      { method: methodLabel(req.method), route: routeLabel, status: String(status) },
      seconds,
    );
    if (!logger.isLevelEnabled('info')) return; // a level above info writes neither line (debug is below info)
    const path = withoutKeys(at.path().split('?', 1)[0]!); // the query string is the caller's; keep it out of logs (and a key pasted into the path)
    const line = {
      requestId,
      method: req.method,
      route: routeLabel,
      path,
      status,
      durationMs: Math.round(seconds * 1e6) / 1e3,
    };
    if (QUIET_PATHS.has(path)) logger.debug(line, 'request');
    else logger.info(line, 'request');
  });
  return { requestId, log };
}

// One accessor pair shared by every request, its state kept on the request under symbols: an
// accessor made of fresh closures per request gives each req its own hidden class, and every
// property access express and node:http make on it then goes megamorphic (measured: ~35-65 µs of
// CPU per request, more than express itself).
const ROUTE = Symbol('route');
const CAPTURED = Symbol('routePattern');
type RouteHolder = { [ROUTE]?: unknown; [CAPTURED]?: { pattern: string | undefined }; baseUrl: string };
const routeAccessor: PropertyDescriptor = {
  configurable: true,
  enumerable: true,
  get(this: RouteHolder) {
    return this[ROUTE];
  },
  set(this: RouteHolder, route: { path?: unknown } | undefined) {
    this[ROUTE] = route;
    this[CAPTURED]!.pattern = route && typeof route.path === 'string' ? `${this.baseUrl}${route.path}` : undefined;
  },
};

/**
 * The full express route pattern that handled the request (e.g. /v1/learning-opportunities/:id).
 * Express sets req.route when a route matches, but a sub-router restores req.baseUrl when an error
 * leaves it, so by the time the response closes the mount prefix is gone. Reading req.baseUrl at
 * the moment req.route is assigned keeps the prefix. Metrics need the pattern, never the raw path:
 * ids in labels would make their cardinality unbounded.
 */
function captureRoutePattern(req: Request): { pattern: string | undefined } {
  const captured: { pattern: string | undefined } = { pattern: undefined };
  (req as unknown as RouteHolder)[CAPTURED] = captured;
  Object.defineProperty(req, 'route', routeAccessor);
  return captured;
}
