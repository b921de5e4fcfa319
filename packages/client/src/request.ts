// One GET against /v1 with a per-attempt timeout and p-retry around it. Retried: network errors,
// timeouts, 429 and 5xx, never before the service's Retry-After. Never retried: any other status, a
// 2xx whose body is not JSON, and an answer whose Retry-After is longer than maxRetryDelayMs (asking
// earlier would only be refused again: the caller gets that answer at once).
import { setTimeout as sleep } from 'node:timers/promises';
import pRetry, { AbortError } from 'p-retry';
import { CatalogHttpError, CatalogNetworkError, CatalogResponseError, isRetryableStatus } from './errors.ts';
import type { ProblemDetails } from './types.ts';

export type RetryInfo = {
  /** The request that failed (method and URL). */
  request: string;
  /** The attempt that just failed (1 = the first try). */
  attempt: number;
  error: Error;
  /** How long the client waits before the next attempt. */
  delayMs: number;
};

export type RequestSettings = {
  apiKey: string;
  fetch: typeof globalThis.fetch;
  retries: number;
  timeoutMs: number;
  minRetryDelayMs: number;
  maxRetryDelayMs: number;
  userAgent: string;
  onRetry: ((info: RetryInfo) => void) | undefined;
};

/** What a 2xx body must look like, and what it is called in the error when it does not. */
export type Expect<T> = { is: (body: unknown) => body is T; what: string };

/** GETs `url` and returns the parsed JSON body of a 2xx answer. */
export async function getJson<T>(
  url: URL,
  expect: Expect<T>,
  settings: RequestSettings,
  signal?: AbortSignal,
): Promise<T> {
  const request = `GET ${url.href}`;
  return await pRetry((attempt) => attemptOnce(url, expect, request, attempt, settings, signal), {
    retries: settings.retries,
    // The waits are ours (the backoff or Retry-After, whichever is longer): p-retry 7, the last major
    // that runs on Node 20, does not tell onFailedAttempt the delay it would wait. It counts and stops.
    minTimeout: 0,
    signal,
    onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
      if (retriesLeft <= 0) return;
      const retryAfter = error instanceof CatalogHttpError ? (error.retryAfterMs ?? 0) : 0;
      const delayMs = Math.max(backoff(attemptNumber, settings), retryAfter);
      settings.onRetry?.({ request, attempt: attemptNumber, error, delayMs });
      // Cancelled while waiting: the caller gets their own reason back, as from the request itself.
      await sleep(delayMs, undefined, { signal }).catch((cause: unknown) => {
        throw signal?.aborted ? signal.reason : cause;
      });
    },
  });
}

/**
 * Doubles from minRetryDelayMs up to maxRetryDelayMs, with jitter (x1 to x2) so that many consumers
 * failing together do not come back together. The exponent stops growing long before 2 ** n becomes
 * Infinity (0 * Infinity is NaN).
 */
function backoff(attempt: number, settings: RequestSettings): number {
  const exponential = settings.minRetryDelayMs * 2 ** Math.min(attempt - 1, 40);
  return Math.min(Math.round(exponential * (1 + Math.random())), settings.maxRetryDelayMs);
}

async function attemptOnce<T>(
  url: URL,
  expect: Expect<T>,
  request: string,
  attempts: number,
  settings: RequestSettings,
  signal: AbortSignal | undefined,
): Promise<T> {
  const timeout = AbortSignal.timeout(settings.timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  // A failure while connecting or reading the body is a network error (retried), unless the
  // caller cancelled: then their reason is what they get back.
  const networkError = (cause: unknown): Error => {
    if (signal?.aborted)
      return new AbortError(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
    return new CatalogNetworkError({
      request,
      attempts,
      timedOut: timeout.aborted,
      timeoutMs: settings.timeoutMs,
      cause,
    });
  };

  let response: Response;
  let text: string;
  try {
    response = await settings.fetch(url, {
      headers: {
        authorization: `Bearer ${settings.apiKey}`,
        accept: 'application/json',
        'user-agent': settings.userAgent,
      },
      // The key must not follow a redirect to wherever it points: a 3xx is reported, not followed.
      redirect: 'manual',
      signal: combined,
    });
    text = await response.text();
  } catch (error) {
    throw networkError(error);
  }

  if (response.status >= 200 && response.status <= 299) {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (cause) {
      throw new AbortError(new CatalogResponseError('the response body is not JSON', { request, attempts, cause }));
    }
    // A wrong shape means the base URL points at something else than the service: not retried.
    if (!expect.is(body))
      throw new AbortError(new CatalogResponseError(`the response body is not ${expect.what}`, { request, attempts }));
    return body;
  }

  const error = new CatalogHttpError({
    request,
    attempts,
    status: response.status,
    statusText:
      response.status >= 300 && response.status <= 399
        ? `redirected to ${response.headers.get('location') ?? '(no location)'}; use that base URL`
        : response.statusText,
    problem: parseProblem(text),
    retryAfterMs: parseRetryAfter(response.headers.get('retry-after')),
  });
  const waitTooLong = error.retryAfterMs !== null && error.retryAfterMs > settings.maxRetryDelayMs;
  if (isRetryableStatus(response.status) && !waitTooLong) throw error;
  throw new AbortError(error);
}

function parseProblem(text: string): ProblemDetails | null {
  try {
    const body = JSON.parse(text) as unknown;
    if (
      body &&
      typeof body === 'object' &&
      typeof (body as ProblemDetails).title === 'string' &&
      typeof (body as ProblemDetails).status === 'number'
    )
      return body as ProblemDetails;
  } catch {
    // not JSON: a proxy's HTML error page, for instance
  }
  return null;
}

/** Retry-After is either delay-seconds or an HTTP date; anything else is ignored. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d{1,9}$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
