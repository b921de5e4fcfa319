// Long-poll bookkeeping of one process: how many requests wait, a generation counter that moves on
// every wake-up (so a request that read just before a wake-up does not miss it), and the shutdown
// switch that answers every waiting request at once. Waiting holds no database connection.
import { AppError } from '../errors.ts';

// When the LISTEN connection is down, waiting requests re-read at this pace instead.
const POLL_WITHOUT_LISTEN_MS = 1000;

export type FeedWaiters = {
  generation: () => number;
  /** Resolves at the next wake-up after `seen`, after `ms`, on close or when `signal` aborts. */
  next: (seen: number, ms: number, signal?: AbortSignal) => Promise<void>;
  /** Takes a waiting slot, or throws 503 when FEED_MAX_WAITERS requests already wait. */
  enter: () => () => void;
  wake: () => void;
  setListening: (listening: boolean) => void;
  waiting: () => number;
  closed: () => boolean;
  /** Shutdown: wakes every waiting request, and no request waits from now on. */
  close: () => void;
};

export function createFeedWaiters(options: { maxWaiters: number }): FeedWaiters {
  let generation = 0;
  let waiting = 0;
  let listening = false;
  let closed = false;
  let wakers = new Set<() => void>();

  const wake = () => {
    generation++;
    const now = wakers;
    wakers = new Set();
    for (const w of now) w();
  };

  return {
    generation: () => generation,
    next(seen, ms, signal) {
      if (closed || generation !== seen || signal?.aborted) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, listening ? ms : Math.min(ms, POLL_WITHOUT_LISTEN_MS));
        function done() {
          clearTimeout(timer);
          wakers.delete(done);
          signal?.removeEventListener('abort', done);
          resolve();
        }
        wakers.add(done);
        signal?.addEventListener('abort', done, { once: true });
      });
    },
    enter() {
      if (waiting >= options.maxWaiters) {
        throw new AppError('SERVICE_UNAVAILABLE', `Too many requests are waiting for events on this server (FEED_MAX_WAITERS = ${options.maxWaiters}); retry shortly`, { headers: { 'Retry-After': '1' } });
      }
      waiting++;
      let left = false;
      return () => {
        if (!left) waiting--;
        left = true;
      };
    },
    wake,
    setListening(value) {
      listening = value;
    },
    waiting: () => waiting,
    closed: () => closed,
    close() {
      closed = true;
      wake();
    },
  };
}
