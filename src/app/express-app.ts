// createApp(deps): the express app of GraphQL, the documentation pages, the console and the
// operations endpoints, no listen. /v1 is not here: its dispatcher (http/v1/dispatcher.ts) answers
// in front of express (service.ts), which sees only the /v1 paths that have no endpoint (404).
import express, { type Express, type RequestHandler } from 'express';
import type { Pool } from 'pg';
import type { KeyCache } from '../auth/key-cache.ts';
import { createBytePace } from '../kernel/byte-pace.ts';
import { graphqlGate } from '../graphql/http-gate.ts';
import { routeExactly } from '../http/exact-router.ts';
import { consoleRoutes } from '../http/console-routes.ts';
import { docsRoutes } from '../http/docs.ts';
import { healthRoutes } from '../http/health.ts';
import { metricsRoutes } from '../http/metrics-route.ts';
import { problemPageRoutes } from '../http/problem-pages.ts';
import { methodNotAllowed, notFoundHandler, problemErrorHandler } from '../http/problem.ts';
import type { RateLimiter } from '../http/rate-limit.ts';
import type { ResponsePacing } from '../http/response-pacing.ts';
import { requestContext } from '../http/request-context.ts';
import type { Logger } from '../kernel/logger.ts';

export type AppDeps = {
  pool: Pool;
  /** The process's API key cache, shared with /v1 (http/v1/dispatcher.ts). */
  keys: KeyCache;
  /** The process's one per-key limiter of /v1 and GraphQL (null: limits off), shared with /v1. */
  limiter: RateLimiter | null;
  logger: Logger;
  graphql: RequestHandler;
  graphqlMaxBodyBytes: number;
  graphqlMaxTokens: number;
  /** The per-key pace of GraphQL request bodies (graphql/body-pacing.ts). */
  graphqlBodyPace: { bytesPerSecond: number; burstBytes: number };
  /** The pace of the bytes answered per key, shared with /v1 (http/response-pacing.ts). */
  responsePace?: ResponsePacing | null;
  readinessTimeoutMs: number;
};

export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  routeExactly(app);

  // First: every later handler (and the problem handler) logs through req.log with the request id.
  app.use(requestContext(deps.logger));
  // Operations endpoints and the OpenAPI reference page (/docs) need no key.
  app.use(healthRoutes({ pool: deps.pool, readinessTimeoutMs: deps.readinessTimeoutMs }));
  app.use(metricsRoutes({ pool: deps.pool }));
  app.use(docsRoutes());
  // The operator console's static pages (no key needed to load them; the data comes from /graphql).
  app.use(consoleRoutes());

  // POST only: GET would put queries in URLs and logs and need Apollo's CSRF preflight header.
  app.post(
    '/graphql',
    ...graphqlGate({
      keys: deps.keys,
      limiter: deps.limiter,
      maxBodyBytes: deps.graphqlMaxBodyBytes,
      maxTokens: deps.graphqlMaxTokens,
      pacing: createBytePace(deps.graphqlBodyPace),
      responsePace: deps.responsePace,
    }),
    deps.graphql,
  );
  app.all('/graphql', methodNotAllowed(['POST']));

  // Problem type documentation: the `type` URIs of problem responses resolve here.
  app.use(problemPageRoutes());

  app.use(notFoundHandler);
  app.use(problemErrorHandler(deps.logger));
  return app;
}
