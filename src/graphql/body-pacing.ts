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
// A body without Content-Length (chunked) cannot be reserved ahead, so it is paced as it is read:
// it waits, unread, for the key's debt (refused like the above past MAX_WAIT_MS), then each chunk
// is charged as it is read and reading pauses (req.pause: TCP holds the sender back) until the key
// is within its burst again. Charged only once read, such bodies let through 15 MiB/s against a
// 1 MiB/s pace, and other keys' /v1 p50 went from 8 to 304 ms.
// A body sent with Content-Encoding (gzip, deflate, br) is paced by the bytes it decodes to, which
// are what reading, parsing and lexing it cost: its wire bytes as above, then the rest once it is
// decoded (chargeDecoded), so that the key's next bodies wait for them. Charged only by the wire,
// 4 KiB of gzip that decoded to 4 MiB went through 36 MiB/s against a 1 MiB/s pace, and another
// key's GET p50 went from 3.7 to 84 ms.
// Such bodies (chunked, or encoded: their charge is known only once read) are read one at a time per
// key (bodyTurns): each waits, unread, for the one before to be read and charged, then for the debt,
// and one whose turn does not come within MAX_WAIT_MS is refused like the above. Read at once side by
// side, 30 chunked gzip bodies of one key that decoded to 3.9 MB each all went through (18 MB/s
// against a 1 MiB/s pace), and 12 chunked plain ones all waited their turn instead of being refused.
// Per process, in memory (like the request count between syncs): N API processes admit N times the
// rate. Defaults: 4 MiB/s (bulk mutations of 500 records wrote 480-530 records/s on 2 cores, from one
// writer or eight on one key: ~1.6 MiB/s of bodies; at 1 MiB/s eight such writers got mostly 429s)
// after a 16 MiB burst (five of the largest bulk mutations, 3.1 MiB).
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError } from '../kernel/errors.ts';
import { type BytePace, MAX_WAIT_MS } from '../kernel/byte-pace.ts';

/** The bytes charged for each body as it came over the wire: declared, or counted as it is read. */
const wireBytes = new WeakMap<IncomingMessage, number>();

/** The 429 of a body that would wait longer than MAX_WAIT_MS for the key's pace. */
function tooFast(pacing: BytePace, keyId: string, bytes: number): AppError {
  const seconds = Math.max(1, Math.ceil(pacing.retryAfterMs(keyId, bytes) / 1000));
  return new AppError(
    'RATE_LIMITED',
    `This key sends GraphQL request bodies faster than its pace allows; retry in ${seconds} s`,
    { headers: { 'Retry-After': String(seconds), Connection: 'close' } },
  );
}

/** Calls `next` after `wait` ms (at once when 0), unless the response closes first. */
function after(wait: number, res: Response, next: () => void): void {
  if (wait === 0) return next();
  const timer = setTimeout(next, wait);
  res.once('close', () => clearTimeout(timer));
}

/**
 * Charges each chunk of a body without Content-Length as it is read, and pauses reading while the key
 * is in debt: the chunk that ran into debt is read (it was already), the next waits until the key is
 * within its burst again. Whoever resumes the stream early (a pipe into a decompressor, on drain) lets
 * through at most a chunk, charged like any other.
 */
function paceWhileRead(pacing: BytePace, keyId: string, req: Request, res: Response): void {
  let timer: NodeJS.Timeout | undefined;
  const resumeWhenPaid = () => {
    const wait = pacing.owedMs(keyId);
    if (wait > 0) timer = setTimeout(resumeWhenPaid, wait);
    else {
      timer = undefined;
      req.resume();
    }
  };
  req.on('data', (chunk: Buffer) => {
    wireBytes.set(req, (wireBytes.get(req) ?? 0) + chunk.length);
    const wait = pacing.charge(keyId, chunk.length);
    if (wait === 0) return;
    req.pause();
    timer ??= setTimeout(resumeWhenPaid, wait);
  });
  res.once('close', () => clearTimeout(timer));
}

/** The end of each body's turn (bodyTurns), called once it is read and charged, or its response closed. */
const turnEnds = new WeakMap<IncomingMessage, () => void>();

/**
 * Per key, the bodies whose charge is known only once read, one at a time: `take` calls `start` when
 * it is the body's turn (at once when no other body of the key is being read) and returns the end of
 * its turn (or its leaving the line), which may be called more than once.
 */
function bodyTurns() {
  const lines = new Map<string, { start: () => void }[]>();
  return {
    take(keyId: string, start: () => void): () => void {
      const entry = { start };
      const line = lines.get(keyId) ?? [];
      lines.set(keyId, line);
      line.push(entry);
      if (line.length === 1) start();
      return () => {
        const at = line.indexOf(entry);
        if (at < 0) return;
        line.splice(at, 1);
        if (line.length === 0) lines.delete(keyId);
        else if (at === 0) line[0]!.start();
      };
    },
  };
}

/** Ends the turn of a body read one at a time (paceBodies), once it is read and charged. */
export function endBodyTurn(req: IncomingMessage): void {
  turnEnds.get(req)?.();
}

/** The gate's step between admission and reading the body (req.principal is set by then). */
export function paceBodies(pacing: BytePace, maxBodyBytes: number): RequestHandler {
  const turns = bodyTurns();
  const paced = pace(pacing, maxBodyBytes);
  return (req, res, next) => {
    const known = req.headers['content-length'] !== undefined && req.headers['content-encoding'] === undefined;
    if (known) return paced(req, res, next);
    // A client gone while its key was looked up: its 'close' has passed, so a turn taken now would
    // never end, and every later body of the key would wait for it and be refused.
    if (res.closed) return;
    // Its charge is known once it is read: after the key's body before it (bodyTurns).
    const keyId = req.principal!.keyId;
    const arrived = performance.now();
    // The turn may end before take() returns: its start reads the body, and a body already read (or
    // refused) ends the turn in the same tick.
    let ended = false;
    let end = (): void => {};
    const timer = setTimeout(() => {
      leave();
      next(tooFast(pacing, keyId, 0));
    }, MAX_WAIT_MS);
    const leave = () => {
      ended = true;
      clearTimeout(timer);
      end();
    };
    turnEnds.set(req, leave);
    res.once('close', leave);
    end = turns.take(keyId, () => {
      clearTimeout(timer);
      paced(req, res, next, performance.now() - arrived);
    });
    if (ended) end();
  };
}

/**
 * The wait for a body's bytes (reserved ahead with Content-Length, charged as read without), refused
 * when it would be over MAX_WAIT_MS with the `waitedMs` it already waited for its turn.
 */
function pace(
  pacing: BytePace,
  maxBodyBytes: number,
): (req: Request, res: Response, next: NextFunction, waitedMs?: number) => void {
  return (req, res, next, waitedMs = 0) => {
    const keyId = req.principal!.keyId;
    const length = req.headers['content-length'];
    const maxWaitMs = MAX_WAIT_MS - waitedMs;
    if (length === undefined) {
      // Without a length (chunked): wait for the key's debt, then read at its pace (paceWhileRead).
      const wait = pacing.owedMs(keyId);
      if (wait > maxWaitMs) return next(tooFast(pacing, keyId, 0));
      return after(wait, res, () => {
        // The pacer listens before express.json does, in the same tick: no chunk is read unseen.
        paceWhileRead(pacing, keyId, req, res);
        next();
      });
    }
    // A declared length over the limit is answered 413 at once: express.json would first read every
    // byte (20 MB at the client's pace, uncharged). Node discards what still arrives after the answer.
    if (Number(length) > maxBodyBytes)
      return next(new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than this endpoint accepts'));
    const wait = pacing.reserve(keyId, Number(length), maxWaitMs);
    if (wait === null) return next(tooFast(pacing, keyId, Number(length)));
    wireBytes.set(req, Number(length));
    after(wait, res, next);
  };
}

/**
 * Charges the key for the bytes a body decoded to beyond those it was sent in (Content-Encoding), once
 * decoded (or, refused as too large, for the bytes decoded before the limit stopped it). The body at
 * hand is already read; the key's next bodies wait for the debt, as after any large body.
 */
export function chargeDecoded(
  pacing: BytePace,
  req: IncomingMessage & { principal?: { keyId: string } },
  bytes: number,
): void {
  const extra = bytes - (wireBytes.get(req) ?? 0);
  if (extra > 0 && req.principal) pacing.charge(req.principal.keyId, extra);
}
