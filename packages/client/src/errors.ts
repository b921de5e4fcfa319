// What a client call can fail with. Every failure is a CatalogClientError carrying the number of
// attempts made, so a caller can tell "refused at once" from "gave up after retrying".
import type { ProblemDetails } from './types.ts';

export class CatalogClientError extends Error {
  /** The request that failed (method and URL; never the key). */
  readonly request: string;
  /** How many times the request was sent before giving up (1 for errors that are never retried). */
  readonly attempts: number;
  constructor(message: string, options: { request: string; attempts: number; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = 'CatalogClientError';
    this.request = options.request;
    this.attempts = options.attempts;
  }
}

/**
 * The service answered with a non-2xx status. 429 and 5xx were retried before this was thrown,
 * unless their Retry-After was longer than maxRetryDelayMs; any other status (400, 401, 403, 404,
 * ...) fails at once: retrying cannot change the answer.
 */
export class CatalogHttpError extends CatalogClientError {
  readonly status: number;
  /** The problem details of the response, or null when the body was not problem+json. */
  readonly problem: ProblemDetails | null;
  /** Retry-After of the response in milliseconds, when present and readable. */
  readonly retryAfterMs: number | null;
  constructor(options: {
    request: string;
    attempts: number;
    status: number;
    statusText: string;
    problem: ProblemDetails | null;
    retryAfterMs: number | null;
  }) {
    const { status, problem } = options;
    const what = problem
      ? `${problem.title}${problem.detail ? `: ${problem.detail}` : ''}`
      : options.statusText || 'no problem details';
    super(`${options.request} answered ${status} (${what})`, options);
    this.name = 'CatalogHttpError';
    this.status = status;
    this.problem = problem;
    this.retryAfterMs = options.retryAfterMs;
  }

  /** True for the statuses that are worth retrying: 429 and 5xx. */
  get retryable(): boolean {
    return isRetryableStatus(this.status);
  }
}

/** No usable answer: connection refused or reset, DNS failure, or no response within the timeout. */
export class CatalogNetworkError extends CatalogClientError {
  readonly timedOut: boolean;
  constructor(options: { request: string; attempts: number; timedOut: boolean; timeoutMs: number; cause: unknown }) {
    const reason = options.timedOut ? `no response within ${options.timeoutMs} ms` : describeCause(options.cause);
    super(`${options.request} failed: ${reason}`, options);
    this.name = 'CatalogNetworkError';
    this.timedOut = options.timedOut;
  }
}

/** A 2xx answer whose body is not what /v1 promises (not JSON, or not the documented shape). */
export class CatalogResponseError extends CatalogClientError {
  constructor(message: string, options: { request: string; attempts: number; cause?: unknown }) {
    super(`${options.request}: ${message}`, options);
    this.name = 'CatalogResponseError';
  }
}

export const isRetryableStatus = (status: number): boolean => status === 429 || (status >= 500 && status <= 599);

/** fetch reports "fetch failed" and hides the useful part (ECONNREFUSED, ...) in the cause. */
function describeCause(cause: unknown): string {
  const messages: string[] = [];
  for (let e: unknown = cause, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    const message = (e as { message?: unknown }).message;
    const text =
      typeof code === 'string' && typeof message === 'string' && !message.includes(code)
        ? `${code} ${message}`
        : String(message ?? e);
    if (!messages.includes(text)) messages.push(text);
  }
  return messages.join(': ') || 'network error';
}
