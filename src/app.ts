// createApp(deps): the express app with every route but the /v1 reads (http/v1-reads.ts, mounted in
// front of it by service.ts), no listen.
import express, { type Express, type RequestHandler } from 'express';
import type { Pool } from 'pg';
import type { KeyCache } from './auth/key-cache.ts';
import type { ChangeFeed } from './feed/change-feed.ts';
import { feedRouter } from './http/feed-routes.ts';
import { graphqlGate } from './graphql/http-gate.ts';
import { routeExactly } from './http/exact-router.ts';
import { docsRoutes } from './http/docs.ts';
import { healthRoutes } from './http/health.ts';
import { metricsRoutes } from './http/metrics-route.ts';
import { openApiRoutes } from './http/openapi.ts';
import { problemPageRoutes } from './http/problem-pages.ts';
import { methodNotAllowed, notFoundHandler, problemErrorHandler } from './http/problem.ts';
import type { RateLimiter } from './http/rate-limit.ts';
import { requestContext } from './http/request-context.ts';
import type { Logger } from './logger.ts';

export type AppDeps = {
  pool: Pool;
  /** The process's API key cache, shared with http/v1-reads.ts. */
  keys: KeyCache;
  feed: ChangeFeed;
  /** The process's one per-key limiter of /v1 (null: limits off), shared with http/v1-reads.ts. */
  limiter: RateLimiter | null;
  logger: Logger;
  graphql: RequestHandler;
  graphqlMaxBodyBytes: number;
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
  app.use('/v1', feedRouter({ keys: deps.keys, feed: deps.feed, limiter: deps.limiter }));
  // Operations endpoints, the OpenAPI document and its reference page (/docs) need no key.
  app.use(healthRoutes({ pool: deps.pool, readinessTimeoutMs: deps.readinessTimeoutMs }));
  app.use(metricsRoutes({ pool: deps.pool }));
  app.use('/v1', openApiRoutes());
  app.use(docsRoutes());

  // POST only: GET would put queries in URLs and logs and need Apollo's CSRF preflight header.
  app.post('/graphql', ...graphqlGate({ keys: deps.keys, maxBodyBytes: deps.graphqlMaxBodyBytes }), deps.graphql);
  app.all('/graphql', methodNotAllowed(['POST']));

  // Problem type documentation: the `type` URIs of problem responses resolve here.
  app.use(problemPageRoutes());

  app.use(notFoundHandler);
  app.use(problemErrorHandler(deps.logger));
  return app;
}
