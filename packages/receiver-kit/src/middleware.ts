// An express (or plain node:http) handler for the consumer's webhook endpoint, following
// docs/contract.md, "Responding and retries": read the raw bytes, verify, de-duplicate on the event id, store the raw
// event, answer 2xx at once, and process after the response so that slow work never turns into a
// delivery timeout and a needless retry.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type TestEvent, WEBHOOK_TEST_EVENT_TYPE, type WebhookEvent } from './event.ts';
import { MemorySeenStore, type SeenStore } from './seen-store.ts';
import { deliveryEventId, NO_SECRET_MESSAGE, secretList, verifyDelivery, type VerifyFailureReason } from './verify.ts';

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** Structured logger (pino-compatible: fields first, constant message second). */
export type ReceiverLogger = {
  info?: (fields: object, message: string) => void;
  warn: (fields: object, message: string) => void;
  error: (fields: object, message: string) => void;
};

export type WebhookReceiverOptions = {
  /**
   * The receiver's signing secret (several during a rotation). Required: without one the handler
   * refuses to be built. Deliveries of either scheme are verified (told apart by their headers).
   */
  secret?: string | readonly string[] | null;
  /** Explicitly accept unsigned deliveries when no secret is given (the service sends unsigned to receivers without one). */
  allowUnsigned?: boolean;
  toleranceMs?: number;
  maxBodyBytes?: number;
  /** Persists the raw event before the 2xx (throwing makes the response 500 so that the service retries). */
  store?: (event: WebhookEvent, rawBody: Buffer) => Promise<void> | void;
  /** Applies the event, after the response; errors are logged, never sent back. */
  process: (event: WebhookEvent) => Promise<void> | void;
  /**
   * Seen event ids (any SeenStore: e.g. a table with a unique event id). The default, a bounded
   * in-memory store, forgets everything on restart: a delivery retried across a restart is processed again.
   */
  dedupe?: SeenStore;
  /** Events accepted but not yet processed; beyond it deliveries get 503 and are retried later. */
  maxQueued?: number;
  /** How many events are processed at once (1 keeps them in arrival order). */
  concurrency?: number;
  logger?: ReceiverLogger;
};

export type WebhookReceiverHandler = ((req: IncomingMessage & { body?: unknown }, res: ServerResponse) => void) & {
  /** Resolves when every accepted event has been processed (tests, graceful shutdown). */
  idle: () => Promise<void>;
  /** Events accepted and not yet processed. */
  readonly pending: number;
};

const consoleLogger: ReceiverLogger = {
  warn: (fields, message) => console.warn(message, fields),
  error: (fields, message) => console.error(message, fields),
};

class BodyTooLarge extends Error {}

function send(
  res: ServerResponse,
  status: number,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): void {
  const json = JSON.stringify(body);
  const type = status >= 400 ? 'application/problem+json' : 'application/json';
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(json), ...headers }).end(json);
}

const problem = (status: number, title: string, detail: string, reason?: VerifyFailureReason | string) => ({
  type: 'about:blank',
  title,
  status,
  detail,
  ...(reason ? { reason } : {}),
});

/** Reads the request body as bytes, refusing more than `limit` (by content-length up front, or while streaming). */
async function readRawBody(req: IncomingMessage & { body?: unknown }, limit: number): Promise<Buffer> {
  // A body parser that ran before us (express.raw) left the bytes; a JSON parser would have lost them.
  if (Buffer.isBuffer(req.body)) {
    if (req.body.length > limit) throw new BodyTooLarge();
    return req.body;
  }
  if (req.body !== undefined && req.readableEnded) {
    throw new Error(
      'the request body was already parsed: mount webhookReceiver before express.json() (the signature covers the raw bytes)',
    );
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw new BodyTooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BodyTooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

export function webhookReceiver(options: WebhookReceiverOptions): WebhookReceiverHandler {
  if (secretList(options.secret).length === 0 && options.allowUnsigned !== true)
    throw new TypeError(`webhookReceiver: ${NO_SECRET_MESSAGE}`);
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const maxQueued = options.maxQueued ?? 10_000;
  const concurrency = options.concurrency ?? 1;
  const seen = options.dedupe ?? new MemorySeenStore();
  const logger = options.logger ?? consoleLogger;

  const queue: WebhookEvent[] = [];
  let running = 0;
  let idleWaiters: (() => void)[] = [];

  const pump = (): void => {
    while (running < concurrency && queue.length) {
      const event = queue.shift()!;
      running++;
      void (async () => {
        try {
          await options.process(event);
        } catch (error) {
          logger.error({ eventId: event.id, eventType: event.type, err: error }, 'webhook event processing failed');
        } finally {
          running--;
          pump();
        }
      })();
    }
    if (running === 0 && queue.length === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  };

  async function handle(req: IncomingMessage & { body?: unknown }, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST')
      return send(res, 405, problem(405, 'Method not allowed', 'deliveries are POSTed'), { allow: 'POST' });
    let rawBody: Buffer;
    try {
      rawBody = await readRawBody(req, maxBodyBytes);
    } catch (error) {
      if (error instanceof BodyTooLarge) {
        // Stop reading and close: we will not consume an oversized body.
        res.setHeader('connection', 'close');
        return send(res, 413, problem(413, 'Payload too large', `a delivery body is at most ${maxBodyBytes} bytes`));
      }
      throw error;
    }

    const verified = verifyDelivery({
      rawBody,
      headers: req.headers,
      secret: options.secret,
      allowUnsigned: options.allowUnsigned,
      toleranceMs: options.toleranceMs,
    });
    if (!verified.ok) {
      logger.warn({ reason: verified.reason, eventId: deliveryEventId(req.headers) }, 'webhook delivery rejected');
      return send(
        res,
        verified.status,
        problem(
          verified.status,
          verified.status === 401 ? 'Unauthorized' : 'Bad request',
          verified.message,
          verified.reason,
        ),
      );
    }
    // A test event or a type newer than this kit: authentic, acknowledged, nothing to apply (not
    // de-duplicated, stored or processed: `process` only ever sees catalog events).
    if (verified.other) {
      const { other } = verified;
      // A test event names the receiver it was sent to (its resource).
      const receiverId = other.type === WEBHOOK_TEST_EVENT_TYPE ? (other as TestEvent).resource.id : undefined;
      logger.info?.(
        { eventId: other.id, eventType: other.type, ...(receiverId ? { receiverId } : {}) },
        'webhook event of another type acknowledged',
      );
      return send(res, 200, { received: true, ignored: verified.other.type });
    }
    const { event } = verified;

    if (!(await seen.claim(event.id))) {
      logger.info?.({ eventId: event.id, eventType: event.type }, 'duplicate webhook event ignored');
      return send(res, 200, { received: true, duplicate: true });
    }
    if (queue.length >= maxQueued) {
      await seen.release(event.id);
      return send(res, 503, problem(503, 'Service unavailable', 'too many events waiting to be processed'), {
        'retry-after': '5',
      });
    }
    try {
      await options.store?.(event, rawBody);
    } catch (error) {
      await seen.release(event.id);
      logger.error({ eventId: event.id, err: error }, 'storing webhook event failed');
      return send(res, 500, problem(500, 'Internal server error', 'the event could not be stored; retry later'));
    }
    send(res, 202, { received: true });
    queue.push(event);
    // After the response has been handed to the socket: processing never delays the acknowledgement.
    setImmediate(pump);
  }

  const handler = ((req, res) => {
    handle(req, res).catch((error: unknown) => {
      logger.error({ err: error }, 'webhook receiver failed');
      if (!res.headersSent) send(res, 500, problem(500, 'Internal server error', 'the delivery could not be handled'));
      else res.destroy();
    });
  }) as WebhookReceiverHandler;
  handler.idle = () =>
    running === 0 && queue.length === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve));
  Object.defineProperty(handler, 'pending', { get: () => running + queue.length });
  return handler;
}
