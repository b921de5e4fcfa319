// What POST /graphql checks before Apollo parses or runs anything, in this order: a live key
// holding a GraphQL scope (401/403, or 503 while the database is unreachable, answered as a GraphQL
// error with its stable code and HTTP status, as GraphQL clients expect), the key's rate limit (the
// same budget, RateLimit headers and 429 problem as /v1, before the body is read), then a JSON body (415), its size and syntax (413/400, problem+json like every
// other HTTP-level refusal). Apollo only ever sees authorized callers and parsed JSON, so its own
// plain-text answers (missing body, CSRF) cannot occur.
import express, { type RequestHandler, type Response } from 'express';
import { GRAPHQL_SCOPES, type Principal } from '../auth/api-keys.ts';
import { authenticate, requireAnyScope } from '../auth/bearer.ts';
import type { KeyCache } from '../auth/key-cache.ts';
import { AppError, toAppError } from '../errors.ts';
import { closeIfRefused, writeProblem } from '../http/problem.ts';
import type { RateLimiter } from '../http/rate-limit.ts';

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by the gate for the GraphQL context (graphql/server.ts). */
    principal?: Principal;
  }
}

function sendGraphQLError(res: Response, error: AppError): void {
  closeIfRefused(res, error.status);
  res.status(error.status).set(error.headers).json({ errors: [{ message: error.message, extensions: { code: error.code } }] });
}

export function graphqlGate(deps: { keys: KeyCache; limiter: RateLimiter | null; maxBodyBytes: number }): RequestHandler[] {
  const authorize: RequestHandler = async (req, res, next) => {
    try {
      const principal = await authenticate(req.headersDistinct.authorization, null, deps.keys);
      requireAnyScope(principal, GRAPHQL_SCOPES);
      req.principal = principal;
      deps.limiter?.admit(principal, res);
    } catch (error) {
      // 401, 403, and 503 while the database is unreachable; anything else is a bug, logged here.
      const appError = toAppError(error);
      if (appError.code === 'RATE_LIMITED') return writeProblem(res, req.originalUrl, appError);
      if (appError.code === 'INTERNAL_SERVER_ERROR') req.log.error({ err: error as Error }, 'unhandled error');
      return sendGraphQLError(res, appError);
    }
    next();
  };
  const requireJson: RequestHandler = (req, _res, next) => {
    if (req.is('application/json')) return next();
    next(new AppError('UNSUPPORTED_MEDIA_TYPE', 'POST /graphql takes a JSON body: send "Content-Type: application/json"'));
  };
  return [authorize, requireJson, express.json({ limit: deps.maxBodyBytes })];
}
