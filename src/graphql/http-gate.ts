// What POST /graphql checks before Apollo parses or runs anything, in this order: a live key
// holding a GraphQL scope (401/403, or 503 while the database is unreachable, answered as a GraphQL
// error with its stable code and HTTP status, as GraphQL clients expect), the key's rate limit (the
// same budget, RateLimit headers and 429 problem as /v1, before the body is read), then a JSON body
// (415), the key's pace of body bytes (body-pacing.ts: a body beyond it waits unread, or 429; a
// compressed one is charged its decoded bytes too), its
// size and syntax (413/400, problem+json like every
// other HTTP-level refusal). Apollo only ever sees authorized callers and parsed JSON, so its own
// plain-text answers (missing body, CSRF) cannot occur. Last, the document's tokens are counted
// (graphql-js's lexer, stopping at GRAPHQL_MAX_TOKENS + 1): a larger document is refused as
// QUERY_TOO_COMPLEX before Apollo hashes or parses it, so refusing a 1 MiB document costs about
// what a small one does (parsing one whole took ~0.45 s of the main thread per MiB).
import { isUtf8 } from 'node:buffer';
import express, { type RequestHandler, type Response } from 'express';
import { Lexer, Source, TokenKind } from 'graphql';
import { GRAPHQL_SCOPES, type Principal } from '../auth/api-keys.ts';
import { authenticate, requireAnyScope } from '../auth/bearer.ts';
import type { KeyCache } from '../auth/key-cache.ts';
import { runAsKey } from '../db/key-connections.ts';
import { AppError, ClientGone, toAppError } from '../kernel/errors.ts';
import { closeIfRefused, writeProblem } from '../http/problem.ts';
import type { RateLimiter } from '../http/rate-limit.ts';
import { chargeDecoded, endBodyTurn, paceBodies } from './body-pacing.ts';
import type { BytePace } from '../kernel/byte-pace.ts';
import type { ResponsePacing } from '../http/response-pacing.ts';

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by the gate for the GraphQL context (graphql/server.ts). */
    principal?: Principal;
  }
}

/** The body of a request refused as a whole (also the 503 and 429 of refusal-status.ts). */
export function graphQLErrorBody(error: AppError): { errors: [{ message: string; extensions: { code: string } }] } {
  return { errors: [{ message: error.message, extensions: { code: error.code } }] };
}

function sendGraphQLError(res: Response, error: AppError): void {
  closeIfRefused(res, error.status);
  res.status(error.status).set(error.headers).json(graphQLErrorBody(error));
}

/** Deepest nesting of brackets, braces and parentheses read: graphql-js parses each level by recursion. */
export const MAX_NESTING = 100;
const OPENING = new Set<TokenKind>([TokenKind.BRACE_L, TokenKind.BRACKET_L, TokenKind.PAREN_L]);
const CLOSING = new Set<TokenKind>([TokenKind.BRACE_R, TokenKind.BRACKET_R, TokenKind.PAREN_R]);

/**
 * Why `document` is refused before it is parsed: more than `max` tokens (comments excepted), or
 * nested deeper than MAX_NESTING (2,400 nested list brackets overflowed the parser's stack, answered
 * "Maximum call stack size exceeded"); null when neither. Lexes at most max + 1 tokens. A syntax
 * error is Apollo's to report.
 */
function tooComplex(document: string, max: number): string | null {
  const lexer = new Lexer(new Source(document));
  try {
    for (let n = 0, depth = 0, kind = lexer.advance().kind; kind !== TokenKind.EOF; kind = lexer.advance().kind) {
      if (++n > max)
        return `The query has more than ${max} tokens: send records as variables, and fewer fields per request`;
      if (OPENING.has(kind) && ++depth > MAX_NESTING)
        return `The query nests brackets, braces or parentheses more than ${MAX_NESTING} deep`;
      if (CLOSING.has(kind)) depth--;
    }
  } catch {
    return null;
  }
  return null;
}

// A body that is not UTF-8 is refused (400, as REST refuses such a query string), not read with
// U+FFFD in place of its bytes: what the caller sent would silently not be what is written.
function requireUtf8(_req: unknown, _res: unknown, body: Buffer, encoding: string): void {
  // A body declared UTF-16 or UTF-32 is decoded as declared.
  if (encoding.toLowerCase() === 'utf-8' && !isUtf8(body))
    throw Object.assign(new Error('body is not UTF-8'), { status: 400, type: 'body.not.utf8' });
}

export function graphqlGate(deps: {
  keys: KeyCache;
  limiter: RateLimiter | null;
  maxBodyBytes: number;
  maxTokens: number;
  pacing: BytePace;
  /** The pace of the bytes answered per key, shared with /v1 (http/response-pacing.ts). */
  responsePace?: ResponsePacing | null;
}): RequestHandler[] {
  const authorize: RequestHandler = async (req, res, next) => {
    try {
      const principal = await authenticate(req.headersDistinct.authorization, null, deps.keys);
      requireAnyScope(principal, GRAPHQL_SCOPES);
      req.principal = principal;
      deps.limiter?.admit(principal, res);
      await deps.responsePace?.serve(principal.keyId, req, res);
    } catch (error) {
      if (error instanceof ClientGone) return void res.destroy(); // gone while its key's answers were paced
      // 401, 403, and 503 while the database is unreachable; anything else is a bug, logged here.
      const appError = toAppError(error);
      if (appError.code === 'RATE_LIMITED') return writeProblem(res, req.originalUrl, appError);
      if (appError.code === 'INTERNAL_SERVER_ERROR') req.log.error({ err: error as Error }, 'unhandled error');
      return sendGraphQLError(res, appError);
    }
    // What follows (and Apollo's resolvers) reads as this key (db/key-connections.ts).
    runAsKey(req.principal.keyId, next);
  };
  const requireJson: RequestHandler = (req, _res, next) => {
    if (req.is('application/json')) return next();
    next(
      new AppError('UNSUPPORTED_MEDIA_TYPE', 'POST /graphql takes a JSON body: send "Content-Type: application/json"'),
    );
  };
  // A decoded body is charged to the key's pace by its decoded size (body-pacing.ts, chargeDecoded),
  // and so is one refused for inflating past the limit: it cost the inflating up to there.
  const readJson = express.json({
    limit: deps.maxBodyBytes,
    verify: (req, res, body, encoding) => {
      chargeDecoded(deps.pacing, req, body.length);
      requireUtf8(req, res, body, encoding);
    },
  });
  const parseJson: RequestHandler = (req, res, next) =>
    readJson(req, res, (error?: unknown) => {
      if ((error as { type?: unknown } | undefined)?.type === 'entity.too.large')
        chargeDecoded(deps.pacing, req, deps.maxBodyBytes);
      endBodyTurn(req);
      next(error);
    });
  const limitTokens: RequestHandler = (req, res, next) => {
    const query = (req.body as { query?: unknown } | undefined)?.query;
    const refusal = typeof query === 'string' ? tooComplex(query, deps.maxTokens) : null;
    if (refusal === null) return next();
    sendGraphQLError(res, new AppError('QUERY_TOO_COMPLEX', refusal));
  };
  return [authorize, requireJson, paceBodies(deps.pacing, deps.maxBodyBytes), parseJson, limitTokens];
}
