// Long-poll bookkeeping of one process: how many requests wait (in all, and per API key), a
// generation counter that moves on every wake-up (so a request that read just before a wake-up does
// not miss it), the shutdown switch that answers every waiting request at once, and the one shared
// horizon re-check. Waiting holds no database connection; the admission is waiting-slots.ts.
// The horizon re-check: while an older transaction holds the horizon back, a waiting request's read
// says `pending`, and the transaction may end without a NOTIFY. Rather than each such request
// re-reading on its own timer (40 of them behind one idle transaction were 200 reads a second), the
// process re-reads the horizon alone, once every HORIZON_RECHECK_MS while any request waits on it,
// and wakes those requests when it has moved: the database sees a fixed rate per process, however
// many wait.
import { WaitingSlots } from './waiting-slots.ts';

// When the LISTEN connection is down, waiting requests re-read at this pace instead.
const POLL_WITHOUT_LISTEN_MS = 1000;
/** The pace of the shared horizon re-check (bench:sync measures what it costs, bench/README.md). */
export const HORIZON_RECHECK_MS = 200;

export type FeedWaiters = {
  generation: () => number;
  /** Moves on every wake-up: a commit's, and the shared re-check's when the horizon moved (shared-reads.ts). */
  wakeUps: () => number;
  /** Resolves at the next wake-up after `seen`, after `ms`, on close or when `signal` aborts. */
  next: (seen: number, ms: number, signal?: AbortSignal) => Promise<void>;
  /** The same, and also once the shared re-check sees the horizon moved from `horizon` (a pending read's). */
  nextPastHorizon: (horizon: string, seen: number, ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * Takes a waiting slot for the key, or throws 503 when FEED_MAX_WAITERS requests already wait, 429
   * when FEED_MAX_WAITERS_PER_KEY of this key's do; returns the release.
   */
  enter: (keyId: string) => () => void;
  wake: () => void;
  setListening: (listening: boolean) => void;
  waiting: () => number;
  closed: () => boolean;
  /** Shutdown: wakes every waiting request, and no request waits from now on. */
  close: () => void;
};

/** `readHorizon`: the horizon now, on the database the long polls read (the primary). */
export function createFeedWaiters(options: {
  maxWaiters: number;
  maxWaitersPerKey: number;
  readHorizon: () => Promise<string>;
  recheckMs?: number;
}): FeedWaiters {
  const recheckMs = options.recheckMs ?? HORIZON_RECHECK_MS;
  let generation = 0;
  const slots = new WaitingSlots(options.maxWaiters, options.maxWaitersPerKey);
  let listening = false;
  let closed = false;
  let wakers = new Set<() => void>();
  // The requests waiting on the horizon, with the horizon their read saw.
  const onHorizon = new Map<() => void, string>();
  let rechecking = false;
  let horizonWakeUps = 0;

  const wake = () => {
    generation++;
    const now = wakers;
    wakers = new Set();
    for (const w of now) w();
  };

  // One loop per process, running while any request waits on the horizon.
  async function recheck(): Promise<void> {
    if (rechecking) return;
    rechecking = true;
    try {
      while (onHorizon.size > 0 && !closed) {
        await new Promise((resolve) => setTimeout(resolve, recheckMs).unref());
        if (onHorizon.size === 0 || closed) break;
        // Unknown (the database failing): the requests re-read, and their own reads answer the failure.
        const horizon = await options.readHorizon().catch(() => null);
        horizonWakeUps++;
        for (const [done, seen] of onHorizon) if (horizon === null || horizon !== seen) done();
      }
    } finally {
      rechecking = false;
    }
  }

  function waitFor(seen: number, ms: number, signal: AbortSignal | undefined, horizon: string | null): Promise<void> {
    if (closed || generation !== seen || signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, listening ? ms : Math.min(ms, POLL_WITHOUT_LISTEN_MS));
      function done() {
        clearTimeout(timer);
        wakers.delete(done);
        onHorizon.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      wakers.add(done);
      signal?.addEventListener('abort', done, { once: true });
      if (horizon !== null) {
        onHorizon.set(done, horizon);
        void recheck();
      }
    });
  }

  return {
    generation: () => generation,
    wakeUps: () => generation + horizonWakeUps,
    next: (seen, ms, signal) => waitFor(seen, ms, signal, null),
    nextPastHorizon: (horizon, seen, ms, signal) => waitFor(seen, ms, signal, horizon),
    enter: (keyId) => slots.enter(keyId),
    wake,
    setListening(value) {
      listening = value;
    },
    waiting: () => slots.waiting,
    closed: () => closed,
    close() {
      closed = true;
      wake();
    },
  };
}
