// The first middleware of every request: a request id (accepted from the caller when sane, else
// generated) echoed in X-Request-Id, a child logger carrying it on req.log, one access log line and
// one observation of the HTTP duration histogram when the response is done.
import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import type { Logger } from '../logger.ts';
import { httpRequestDuration } from '../metrics.ts';

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

export function acceptRequestId(incoming: string | undefined): string {
  return incoming !== undefined && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

export function requestContext(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const requestId = acceptRequestId(req.get(REQUEST_ID_HEADER));
    req.requestId = requestId;
    req.log = logger.child({ requestId });
    res.set(REQUEST_ID_HEADER, requestId);
    const route = captureRoutePattern(req);

    res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const status = res.writableFinished ? res.statusCode : 499; // 499: the client went away first
      const routeLabel = route.pattern ?? UNMATCHED_ROUTE;
      httpRequestDuration.observe({ method: req.method, route: routeLabel, status: String(status) }, seconds);
      const path = req.originalUrl.split('?', 1)[0]; // the query string is the caller's; keep it out of logs
      const line = { method: req.method, route: routeLabel, path, status, durationMs: Math.round(seconds * 1e6) / 1e3 };
      if (QUIET_PATHS.has(req.path)) req.log.debug(line, 'request');
      else req.log.info(line, 'request');
    });
    next();
  };
}

/**
 * The full express route pattern that handled the request (e.g. /v1/learning-opportunities/:id).
 * Express sets req.route when a route matches, but a sub-router restores req.baseUrl when an error
 * leaves it, so by the time the response closes the mount prefix is gone. Reading req.baseUrl at
 * the moment req.route is assigned keeps the prefix. Metrics need the pattern, never the raw path:
 * ids in labels would make their cardinality unbounded.
 */
function captureRoutePattern(req: Request): { pattern: string | undefined } {
  const captured: { pattern: string | undefined } = { pattern: undefined };
  let current: unknown;
  Object.defineProperty(req, 'route', {
    configurable: true,
    enumerable: true,
    get: () => current,
    set: (route: { path?: unknown } | undefined) => {
      current = route;
      captured.pattern = route && typeof route.path === 'string' ? `${req.baseUrl}${route.path}` : undefined;
    },
  });
  return captured;
}
