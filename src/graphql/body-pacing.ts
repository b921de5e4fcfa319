// Request bodies of POST /graphql paced per key (issue 18 item 4): a key may send
// GRAPHQL_BODY_BYTES_PER_SECOND on average, with bursts up to GRAPHQL_BODY_BURST_BYTES, before its
// next body is read. Reading, JSON-parsing and lexing a 1 MiB document costs the main thread a few
// ms even when it is refused at once; sent back to back, such documents took other keys' /v1 p99
// from ~3 ms to ~60 ms. The request count limit cannot stop that (6,000 a minute is 6 GiB of 1 MiB
// documents), so bytes have a budget of their own.
// How: a generic cell rate algorithm on bytes (one instant per key, `paidUntil`; a body of n bytes
// costs n / rate seconds). A body within the burst is read at once. A body beyond it waits, unread,
// until its bytes are due: the socket is not read meanwhile, so the sender is held back by TCP
// flow control at no cost to either side. A body that would wait longer than MAX_WAIT_MS is refused
// at once (429, RATE_LIMITED, Retry-After when it would fit; the connection closes unread).
// A body without Content-Length (chunked) is charged once read, delaying the key's next body.
// Per process, in memory (like the request count between syncs): N API processes admit N times the
// rate. Defaults: 1 MiB/s (the bulk mutations write ~181 records/s, ~0.6 MiB/s of bodies, so a
// real writer is never slowed) after a 16 MiB burst (five of the largest bulk mutations, 3.1 MiB).
import type { IncomingMessage } from 'node:http';
import type { Request, RequestHandler } from 'express';
import { AppError } from '../kernel/errors.ts';

/** A body that would wait longer than this is refused instead. */
export const MAX_WAIT_MS = 10_000;

export type BodyPacing = ReturnType<typeof createBodyPacing>;

export function createBodyPacing(options: { bytesPerSecond: number; burstBytes: number; now?: () => number }) {
  const now = options.now ?? performance.now.bind(performance);
  const msPerByte = 1000 / options.bytesPerSecond;
  const burstMs = options.burstBytes * msPerByte;
  // keyId -> the instant until which the key's earlier bodies are paid for.
  const paidUntil = new Map<string, number>();

  /** When the key's bodies so far and `bytes` more are paid for, seen at `t`. */
  const paidWith = (keyId: string, bytes: number, t: number) =>
    Math.max(paidUntil.get(keyId) ?? t, t) + bytes * msPerByte;

  const forget = () => {
    const t = now();
    for (const [keyId, until] of paidUntil) if (until <= t) paidUntil.delete(keyId);
  };

  return {
    /** Reserves `bytes` for the key: how long the body must wait before it is read, or null when that is over MAX_WAIT_MS (nothing reserved). */
    reserve(keyId: string, bytes: number): number | null {
      const t = now();
      if (paidUntil.size > 10_000) forget();
      const until = paidWith(keyId, bytes, t);
      const wait = Math.max(0, until - t - burstMs);
      if (wait > MAX_WAIT_MS) return null;
      paidUntil.set(keyId, until);
      return wait;
    },
    /** Charges `bytes` already read (a chunked body): the key's next bodies wait for them. */
    charge(keyId: string, bytes: number): void {
      const t = now();
      paidUntil.set(keyId, paidWith(keyId, bytes, t));
    },
    /** How long until `bytes` would be read without refusal (for Retry-After). */
    retryAfterMs(keyId: string, bytes: number): number {
      const t = now();
      return Math.max(0, paidWith(keyId, bytes, t) - t - burstMs - MAX_WAIT_MS);
    },
  };
}

/** The gate's step between admission and reading the body (req.principal is set by then). */
export function paceBodies(pacing: BodyPacing, maxBodyBytes: number): RequestHandler {
  return (req, res, next) => {
    const keyId = req.principal!.keyId;
    const length = req.headers['content-length'];
    // Without a length (chunked) the body is charged once read (chargeRead).
    if (length === undefined) return next();
    // A declared length over the limit is answered 413 at once: express.json would first read every
    // byte (20 MB at the client's pace, uncharged). Node discards what still arrives after the answer.
    if (Number(length) > maxBodyBytes)
      return next(new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than this endpoint accepts'));
    const wait = pacing.reserve(keyId, Number(length));
    if (wait === null) {
      const seconds = Math.max(1, Math.ceil(pacing.retryAfterMs(keyId, Number(length)) / 1000));
      return next(
        new AppError(
          'RATE_LIMITED',
          `This key sends GraphQL request bodies faster than its pace allows; retry in ${seconds} s`,
          {
            headers: { 'Retry-After': String(seconds), Connection: 'close' },
          },
        ),
      );
    }
    if (wait === 0) return next();
    const timer = setTimeout(next, wait);
    res.once('close', () => clearTimeout(timer));
  };
}

/** express.json's `verify`: charges a body that came without Content-Length, now that its size is known. */
export function chargeRead(pacing: BodyPacing): (req: IncomingMessage, res: unknown, body: Buffer) => void {
  return (req, _res, body) => {
    const { principal } = req as Request;
    if (req.headers['content-length'] === undefined && principal) pacing.charge(principal.keyId, body.length);
  };
}
