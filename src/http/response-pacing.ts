// Response bytes paced per key (/v1 and GraphQL): a key may be answered RESPONSE_BYTES_PER_SECOND on
// average, with bursts up to RESPONSE_BURST_BYTES, before its next request is served. A large answer
// costs the API's one thread for every byte, and no other limit bounded that: a key reading feed
// pages of 1000 events (3.8 MB each) from 5 connections, within its rate limit, its connections and
// the query class, took another key's GET by id from p50 1.9 / p99 5.4 ms to 157 / 231 ms (about 40
// ms of the thread per page: decoding the statement's text, assembling the page, encoding it for the
// socket). The generic cell rate algorithm of the GraphQL bodies (kernel/byte-pace.ts) on the bytes
// answered (a HEAD's are counted: its page is made as a GET's): a request reserves, on arrival, as
// many bytes as the key's last page had, at most the burst (the size of what it is asking for is
// known only once answered) and waits, unserved, until they are due; once its answer is sent, the
// reservation is corrected to its bytes. So requests of a key that arrive together are spaced by the
// pace, not all let through by the same instant's budget (checked against the debt alone, 11 pages
// asked at once all went out together). A request that would wait longer than 10 s (MAX_WAIT_MS) is
// refused (429, RATE_LIMITED, Retry-After). Per process, in memory, like the body pace.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createBytePace } from '../kernel/byte-pace.ts';
import { AppError, ClientGone } from '../kernel/errors.ts';
import { responsePaceRefused } from '../kernel/metrics.ts';

export type ResponsePacing = {
  /**
   * Waits until the key's answers so far and this one (sized as its last) are paid for (at once
   * within the burst), and charges this answer's bytes once it is sent; throws 429 when the wait
   * would pass MAX_WAIT_MS.
   */
  serve(keyId: string, req: IncomingMessage, res: ServerResponse): Promise<void>;
};

/** The pace of `bytesPerSecond` (0: none) after `burstBytes`; null when off. `now`: the clock, for tests. */
export function createResponsePacing(options: {
  bytesPerSecond: number;
  burstBytes: number;
  now?: () => number;
}): ResponsePacing | null {
  if (options.bytesPerSecond === 0) return null;
  const pace = createBytePace(options);
  // keyId -> the bytes of its last answer with a body: what its next request reserves.
  const lastBytes = new Map<string, number>();
  return {
    async serve(keyId, req, res) {
      // Gone before it is served (during the key's look-up): nothing reserved, so nothing to give back.
      if (res.closed) throw new ClientGone();
      // At most the burst: a reservation larger than the burst plus MAX_WAIT_MS of the pace would be
      // refused however long the key waited (one answer of 3 MB at 100 KiB/s locked a key out for good).
      const reserved = Math.min(lastBytes.get(keyId) ?? 0, options.burstBytes);
      const wait = pace.reserve(keyId, reserved);
      if (wait === null) {
        responsePaceRefused.inc();
        const seconds = Math.max(1, Math.ceil(pace.retryAfterMs(keyId, reserved) / 1000));
        throw new AppError(
          'RATE_LIMITED',
          `This key was sent more response bytes than its pace allows (RESPONSE_BYTES_PER_SECOND); retry in ${seconds} s`,
          { headers: { 'Retry-After': String(seconds) } },
        );
      }
      res.once('close', () => {
        const bytes = answeredBytes(res);
        pace.charge(keyId, bytes - reserved);
        if (lastBytes.size > 10_000) lastBytes.clear();
        // Only a whole page says what the key asks for: a 304 or an error would let the next requests
        // of a key that reads large pages through together.
        if (res.writableFinished && res.statusCode === 200) lastBytes.set(keyId, bytes);
      });
      if (wait > 0) await waitUnlessClosed(wait, res);
      if (res.closed) throw new ClientGone();
    },
  };
}

/**
 * The bytes an answer cost to make: its Content-Length, a HEAD's too (its page is read and rendered
 * as a GET's, only not sent: found from outside, HEADs of large pages rendered 13 MB/s for a key
 * paced at 8), none for a 304 (its body is never built).
 */
function answeredBytes(res: ServerResponse): number {
  if (res.statusCode === 304) return 0;
  const length = Number(res.getHeader('content-length'));
  return Number.isFinite(length) && length > 0 ? length : 0;
}

function waitUnlessClosed(ms: number, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    res.once('close', done);
    function done() {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    }
  });
}
