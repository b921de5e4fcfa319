// A feed read that waits (up to `waitMs`) when nothing follows the cursor: re-read when an event
// commits (the LISTEN wake-up), answer as soon as something is readable, at the deadline, or at
// shutdown. A wake-up can come before its event is readable (an older transaction still holds the
// horizon back, and it may commit without NOTIFY): then the read says `pending`, and the request
// waits for the process's one shared horizon re-check (feed-waiters.ts) as well, never re-reading
// on a timer of its own. A page that says more follows (hasMore: a view's page that passed over
// events without finding one of its own, feed-reads.ts) is answered at once, as a page with events.
import type { FeedPage } from './feed-reads.ts';
import type { FeedWaiters } from './feed-waiters.ts';

/** `keyId`: the API key the request came with (FEED_MAX_WAITERS_PER_KEY). */
export async function readWithWait(
  waiters: FeedWaiters,
  keyId: string,
  read: () => Promise<FeedPage>,
  waitMs: number,
  signal?: AbortSignal,
): Promise<FeedPage> {
  const deadline = Date.now() + waitMs;
  let seen = waiters.generation();
  let page = await read();
  if (page.results.length > 0 || page.hasMore || waitMs === 0 || waiters.closed()) return page;
  const leave = waiters.enter(keyId);
  try {
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0 || signal?.aborted) return page;
      if (page.pending) await waiters.nextPastHorizon(page.horizon, seen, remaining, signal);
      else await waiters.next(seen, remaining, signal);
      // Shutdown answers with what is known now; a closed client needs no answer at all.
      if (waiters.closed() || signal?.aborted) return page;
      seen = waiters.generation();
      page = await read();
      if (page.results.length > 0 || page.hasMore) return page;
    }
  } finally {
    leave();
  }
}
