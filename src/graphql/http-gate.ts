// What POST /graphql checks before Apollo parses or runs anything, in this order: a live key
// holding a GraphQL scope (401/403), a JSON body (415), its size and syntax (413/400). Every refusal
// here is a problem+json answer; Apollo only ever sees authorized callers and parsed JSON, so its
// own plain-text answers (missing body, CSRF) cannot occur.
import express, { type RequestHandler } from 'express';
import type { Pool } from 'pg';
import { GRAPHQL_SCOPES } from '../auth/api-keys.ts';
import { principalFromHeader, requireAnyScope } from '../auth/bearer.ts';
import { AppError } from '../errors.ts';

export function graphqlGate(deps: { pool: Pool; maxBodyBytes: number }): RequestHandler[] {
  const authorize: RequestHandler = async (req, _res, next) => {
    const principal = await principalFromHeader(deps.pool, req.get('authorization'));
    requireAnyScope(principal, GRAPHQL_SCOPES);
    req.principal = principal;
    next();
  };
  const requireJson: RequestHandler = (req, _res, next) => {
    if (req.is('application/json')) return next();
    next(new AppError('UNSUPPORTED_MEDIA_TYPE', 'POST /graphql takes a JSON body: send "Content-Type: application/json"'));
  };
  return [authorize, requireJson, express.json({ limit: deps.maxBodyBytes })];
}
