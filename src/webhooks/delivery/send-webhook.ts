// The one outbound HTTP call of the service: POST a body to a receiver with a hard deadline, keep-alive
// connections, redirects never followed (a 3xx fails the attempt), private targets refused unless
// allowed. The result is a classification; nothing in it (or in any error) carries the secret, the
// signature or the URL's query. A 429 or 503 with a valid Retry-After is `throttled`, with the wait it
// asks for (retry-policy.ts parseRetryAfter: delta-seconds or HTTP-date, at most one hour).
import http from 'node:http';
import https from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import { urlToHttpOptions } from 'node:url';
import { guardedLookup, isNonPublicAddress, literalHost } from '../receivers/target-policy.ts';
import { parseRetryAfter } from './retry-policy.ts';

/**
 * What an attempt came to. `throttled`: the receiver answered 429 or 503 with a valid Retry-After
 * (backpressure, retry-policy.ts). The worker's own, where nothing was sent: `secret_unavailable` (the
 * receiver's secret did not open) and `superseded` (LATEST_STATE: a newer event of the record waits).
 */
export type AttemptOutcome =
  | 'success'
  | 'http_error'
  | 'timeout'
  | 'connection_error'
  | 'redirect'
  | 'throttled'
  | 'secret_unavailable'
  | 'superseded';
export type SendResult = {
  outcome: AttemptOutcome;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  durationMs: number;
  /** A 429 or 503 with a valid Retry-After: the wait it asks for (ms from the answer), capped. */
  retryAfterMs?: number;
};
export type WebhookSender = {
  send: (url: string, headers: Record<string, string>, body: Buffer) => Promise<SendResult>;
  close: () => void;
};

/** Bytes of the response body kept in delivery_attempt.response_excerpt. */
export const EXCERPT_BYTES = 512;
/** Bytes of a response body read (and thrown away) to keep the connection reusable. */
const DRAIN_BYTES = 64 * 1024;

/**
 * What is kept of a receiver's answer: its first EXCERPT_BYTES as text that PostgreSQL stores
 * whatever the receiver sent. Invalid UTF-8 becomes U+FFFD, a character cut at the end is left out,
 * and NUL (which a text column refuses, failing the statement that stores it) becomes U+FFFD too.
 */
export function storedExcerpt(body: Buffer): string {
  return new StringDecoder('utf8').write(body.subarray(0, EXCERPT_BYTES)).replaceAll('\0', '\uFFFD');
}

export function createWebhookSender(options: {
  timeoutMs: number;
  allowPrivateTargets: boolean;
  maxSockets?: number;
}): WebhookSender {
  const lookup = guardedLookup(options.allowPrivateTargets);
  const agentOptions = {
    keepAlive: true,
    keepAliveMsecs: 1000,
    maxSockets: options.maxSockets ?? 256,
    maxFreeSockets: 64,
    scheduling: 'lifo' as const,
  };
  const agents = { 'http:': new http.Agent(agentOptions), 'https:': new https.Agent(agentOptions) };

  // What a URL resolves to (request options, or why it cannot be sent to), kept per URL string:
  // parsing a URL costs as much as a tenth of a delivery's own work, and the worker sends to the
  // same few receiver URLs again and again. Bounded: cleared when it grows past TARGETS_KEPT.
  const targets = new Map<string, Target | string>();
  function targetOf(rawUrl: string): Target | string {
    let target = targets.get(rawUrl);
    if (target === undefined) {
      if (targets.size >= TARGETS_KEPT) targets.clear();
      targets.set(rawUrl, (target = resolveTarget(rawUrl, options.allowPrivateTargets)));
    }
    return target;
  }

  function send(rawUrl: string, headers: Record<string, string>, body: Buffer): Promise<SendResult> {
    const started = performance.now();
    const done: Done = (outcome, statusCode, error, excerpt) => ({
      outcome,
      statusCode,
      error,
      responseExcerpt: excerpt,
      durationMs: Math.round(performance.now() - started),
    });

    const target = targetOf(rawUrl);
    if (typeof target === 'string') return Promise.resolve(done('connection_error', null, target, null));

    return post(target, { agent: agents[target.protocol], lookup, headers, body }, options.timeoutMs, done);
  }

  return {
    send,
    close: () => {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}

type Done = (
  outcome: AttemptOutcome,
  statusCode: number | null,
  error: string | null,
  excerpt: string | null,
) => SendResult;

/**
 * One POST with a hard deadline: the status decides (a 3xx fails: never followed), the first
 * EXCERPT_BYTES of the answer are kept, at most DRAIN_BYTES are read to keep the connection reusable.
 */
function post(
  target: Target,
  how: { agent: http.Agent; lookup: ReturnType<typeof guardedLookup>; headers: Record<string, string>; body: Buffer },
  timeoutMs: number,
  done: Done,
): Promise<SendResult> {
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    let status: number | null = null;
    let retryAfterMs: number | null = null;
    const chunks: Buffer[] = [];
    let received = 0;
    const finish = (result: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const excerpt = () => (chunks.length ? storedExcerpt(Buffer.concat(chunks)) : null);
    const byStatus = (code: number): SendResult => {
      if (code >= 200 && code < 300) return done('success', code, null, excerpt());
      if (retryAfterMs !== null) return { ...done('throttled', code, null, excerpt()), retryAfterMs };
      return done(code >= 300 && code < 400 ? 'redirect' : 'http_error', code, null, excerpt());
    };

    let request: http.ClientRequest;
    const timer = setTimeout(() => {
      // Headers already in: the status decides; the body was only being drained.
      finish(status === null ? done('timeout', null, 'timeout', null) : byStatus(status));
      request.destroy();
    }, timeoutMs);

    const send = (retried: boolean) => {
      request = target.module.request({
        ...target.options,
        method: 'POST',
        // The retry on a connection of its own (no agent), not on another kept-alive one.
        agent: retried ? false : how.agent,
        lookup: how.lookup,
        headers: { ...how.headers, 'content-length': String(how.body.length) },
      });
      request.on('response', onResponse);
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (status !== null) return finish(byStatus(status));
        // A kept-alive connection the receiver closed as it was being reused (its idle timeout):
        // the request never reached it. Sent once more, within the same deadline (what Node's
        // documentation advises for reusedSocket); a receiver de-duplicates anyway. Seen in the suite:
        // a replay became a connection_error dead letter its receiver never saw.
        if (!retried && !settled && request.reusedSocket && STALE_SOCKET_ERRORS.has(error.code ?? ''))
          return send(true);
        finish(done('connection_error', null, errorClass(error), null));
      });
      request.end(how.body);
    };

    const onResponse = (response: http.IncomingMessage) => {
      status = response.statusCode ?? 0;
      // Measured from the answer's arrival: the wait asked for starts then.
      if (status === 429 || status === 503) retryAfterMs = parseRetryAfter(response.headers['retry-after'], Date.now());
      response.on('data', (chunk: Buffer) => {
        if (received < EXCERPT_BYTES) chunks.push(chunk);
        received += chunk.length;
        if (received > DRAIN_BYTES) {
          finish(byStatus(status!));
          response.destroy();
        }
      });
      response.on('end', () => finish(byStatus(status!)));
      response.on('error', () => finish(byStatus(status!)));
    };
    send(false);
  });
}

/** How a reused keep-alive connection that the receiver had closed fails. */
const STALE_SOCKET_ERRORS = new Set(['ECONNRESET', 'EPIPE']);

const TARGETS_KEPT = 10_000;

type Target = { protocol: 'http:' | 'https:'; module: typeof http | typeof https; options: http.RequestOptions };

/** The request options of `rawUrl`, or the error class of a URL that is never sent to. */
function resolveTarget(rawUrl: string, allowPrivateTargets: boolean): Target | string {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return 'invalid_url';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'unsupported_protocol';
  const literal = literalHost(url);
  // An IP literal is connected to without a lookup, so it is checked here.
  if (!allowPrivateTargets && literal && isNonPublicAddress(literal)) return 'private_target';
  return { protocol: url.protocol, module: url.protocol === 'https:' ? https : http, options: urlToHttpOptions(url) };
}

/** A short, stable class for an error (its code), never its message. */
function errorClass(error: NodeJS.ErrnoException): string {
  const code = error.code ?? (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^[A-Za-z0-9_]{1,64}$/.test(code)) return code;
  return 'request_error';
}
