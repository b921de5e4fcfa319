// RFC 7807 problem details: every non-2xx answer of the HTTP surface goes through here.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { AppError, ClientGone, ERROR_CODES, type ErrorCode, type InvalidParam, toAppError } from '../kernel/errors.ts';
import type { Logger } from '../kernel/logger.ts';
import { redactKeysInAnyEncoding, withoutKeys } from './request-target.ts';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
export const problemType = (code: ErrorCode): string => `/problems/${ERROR_CODES[code].slug}`;

/**
 * The problem+json body of `code` (and its status): the one shape of every problem the service
 * writes. `instance` is the request target, without any `key` parameter (request-target.ts).
 */
export function problemBody(
  code: ErrorCode,
  detail: string,
  instance: string,
  invalidParams?: readonly InvalidParam[],
): { status: number; body: string } {
  const { status, title } = ERROR_CODES[code];
  const problem: Record<string, unknown> = {
    type: problemType(code),
    title,
    status,
    // A key sent where a parameter's name or a path was expected is quoted back nowhere.
    detail: redactKeysInAnyEncoding(detail),
    instance: withoutKeys(instance),
  };
  if (invalidParams)
    problem.invalidParams = invalidParams.map((p) => ({
      ...p,
      name: redactKeysInAnyEncoding(p.name),
      reason: redactKeysInAnyEncoding(p.reason),
    }));
  return { status, body: JSON.stringify(problem) };
}

/**
 * A 401 or 403 ends the connection: `Connection: close`, and Node closes the socket once the answer
 * is written instead of reading (and discarding) the rest of the refused caller's body.
 */
export function closeIfRefused(res: ServerResponse, status: number): void {
  if (status === 401 || status === 403) res.setHeader('Connection', 'close');
}

/** Writes `error` as problem+json on a plain node:http response (express's included). */
export function writeProblem(res: ServerResponse, instance: string, error: AppError): void {
  const { status, body } = problemBody(error.code, error.message, instance, error.invalidParams);
  res.statusCode = status;
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  closeIfRefused(res, status);
  res.setHeader('Content-Type', `${PROBLEM_CONTENT_TYPE}; charset=utf-8`);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

export function sendProblem(req: Request, res: Response, error: AppError): void {
  writeProblem(res, req.originalUrl, error);
}

/** Answers whatever a handler threw: known errors as they are, anything else as a generic 500 (logged). */
export function answerError(
  log: Logger,
  req: IncomingMessage,
  res: ServerResponse,
  err: unknown,
  instance: string,
): void {
  if (err instanceof ClientGone) return void res.destroy(); // the client went away: no one to answer
  const error = mapHttpError(err);
  const path = withoutKeys(instance.split('?', 1)[0]!);
  if (error.code === 'INTERNAL_SERVER_ERROR')
    log.error({ err: err as Error, method: req.method, path }, 'unhandled error');
  // A database error mapped to 503, or a 503 of the service's own (the long polls or the query
  // class full, a read past its deadline: its detail says which).
  else if (error.code === 'SERVICE_UNAVAILABLE')
    log.warn(
      { err: (err as Error)?.message, path },
      err instanceof AppError ? 'service unavailable' : 'database unavailable',
    );
  if (res.headersSent) return void res.end();
  writeProblem(res, instance, error);
}

/** The last error handler of the express app. */
export function problemErrorHandler(logger: Logger): ErrorRequestHandler {
  // req.log carries the request id (http/request-context.ts)
  return (err, req, res, _next) => answerError(req.log ?? logger, req, res, err, req.originalUrl);
}

/** A path segment that is not valid percent-encoding (the path is at fault, not a body). */
export const badPathEncoding = (): AppError =>
  new AppError('BAD_USER_INPUT', 'The request path is not valid percent-encoding', {
    invalidParams: [{ name: 'path', reason: 'is not valid percent-encoding' }],
  });

function parsesAsJson(body: unknown): boolean {
  if (typeof body !== 'string') return false;
  try {
    JSON.parse(body);
    return true;
  } catch {
    return false;
  }
}

/** Errors raised by express's own parsers carry a status; keep their meaning, not their text. */
function mapHttpError(err: unknown): AppError {
  const status = (err as { status?: unknown; type?: unknown })?.status;
  const type = (err as { type?: unknown })?.type;
  if (!(err instanceof AppError) && typeof status === 'number') {
    if (status === 413)
      return new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than this endpoint accepts');
    // body-parser names what it could not read: a body in JSON but encoded or in a charset it lacks.
    const what = err as { encoding?: unknown; charset?: unknown };
    if (status === 415 && type === 'encoding.unsupported')
      return new AppError(
        'UNSUPPORTED_MEDIA_TYPE',
        `Content-Encoding ${String(what.encoding).slice(0, 64)} is not supported: send the body as is, or with gzip, deflate or br`,
      );
    if (status === 415 && type === 'charset.unsupported')
      return new AppError(
        'UNSUPPORTED_MEDIA_TYPE',
        `Charset ${String(what.charset).slice(0, 64)} is not supported: send the body as UTF-8`,
      );
    if (status === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be application/json');
    if (status === 400 && type === 'body.not.utf8')
      return new AppError('BAD_USER_INPUT', 'The request body is not valid UTF-8', {
        invalidParams: [{ name: 'body', reason: 'is not valid UTF-8' }],
      });
    if (status === 400 && type === 'entity.parse.failed')
      return parsesAsJson((err as { body?: unknown }).body)
        ? // The strict parser takes objects and arrays only: `"x"`, `1` or `null` is JSON all the same.
          new AppError('BAD_USER_INPUT', 'The request body must be a JSON object', {
            invalidParams: [{ name: 'body', reason: 'must be a JSON object' }],
          })
        : new AppError('BAD_USER_INPUT', 'The request body is not valid JSON', {
            invalidParams: [{ name: 'body', reason: 'is not valid JSON' }],
          });
    // The router could not percent-decode a path segment: the path is at fault, not a body.
    if (status === 400 && err instanceof URIError) return badPathEncoding();
    if (status === 400)
      return new AppError('BAD_USER_INPUT', 'The request could not be read', {
        invalidParams: [{ name: 'body', reason: 'could not be read' }],
      });
  }
  return toAppError(err);
}

export const notFoundHandler: RequestHandler = (req, res) => {
  sendProblem(req, res, new AppError('NOT_FOUND', `No resource at ${withoutKeys(req.path)}`));
};

/** For a known path: any method not in `allowed` is 405 with Allow. */
export function methodNotAllowed(allowed: string[]): RequestHandler {
  return (req, res) => sendProblem(req, res, notAllowed(req.method, allowed));
}

export const notAllowed = (method: string | undefined, allowed: string[]): AppError =>
  new AppError('METHOD_NOT_ALLOWED', `${method} is not allowed here; use ${allowed.join(' or ')}`, {
    headers: { Allow: allowed.join(', ') },
  });
