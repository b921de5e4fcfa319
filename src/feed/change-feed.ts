// The change feed of one process: its reads and the long-poll waiters, woken through the process's
// LISTEN connection (db/listen-connection.ts) by the trigger of migration change_feed.
// service.ts starts it with the API and stops it first on shutdown.
import type { ListenSubscriber } from '../db/listen-connection.ts';
import type { CancellableReads } from '../db/queryable.ts';
import { createFeedReads, type FeedReads } from './feed-reads.ts';
import { createFeedWaiters, type FeedWaiters } from './feed-waiters.ts';
import { createViewPages, type ViewPages } from './view-page.ts';

export const FEED_CHANNEL = 'lods_event_feed'; // NOTIFYed by the trigger of migration change_feed

export type ChangeFeed = {
  reads: FeedReads;
  /** The pages of a view's feed (GET /v1/events?view=). */
  views: ViewPages;
  waiters: FeedWaiters;
  /** What the LISTEN connection tells the waiters: every notification and every reconnect wakes them. */
  subscriber: ListenSubscriber;
  /** Answers every waiting request now (shutdown, before the HTTP server drains); none waits from then on. */
  stopWaiting: () => void;
};

/** `readPool` serves the reads it can (feed-reads.ts), `pool` (the primary) the rest; `pageMaxBytes`: PAGE_MAX_BYTES, the bound of a feed page's bytes. */
export function startChangeFeed(deps: {
  pool: CancellableReads;
  readPool: CancellableReads;
  maxWaiters: number;
  maxWaitersPerKey: number;
  pageMaxBytes?: number;
  /** The reads of a view's pages (by default `pool` and `readPool`): the API admits them as the query class. */
  viewReads?: (reads: CancellableReads) => CancellableReads;
}): ChangeFeed {
  const viewReads = deps.viewReads ?? ((reads: CancellableReads) => reads);
  const reads = createFeedReads(deps.readPool, deps.pool, deps.pageMaxBytes);
  const waiters = createFeedWaiters({
    maxWaiters: deps.maxWaiters,
    maxWaitersPerKey: deps.maxWaitersPerKey,
    readHorizon: reads.horizon,
  });
  return {
    reads,
    views: createViewPages(viewReads(deps.readPool), viewReads(deps.pool), deps.pageMaxBytes),
    waiters,
    subscriber: {
      channel: FEED_CHANNEL,
      notified: () => waiters.wake(),
      listening(up) {
        waiters.setListening(up);
        if (up) waiters.wake(); // anything committed while no one listened
      },
    },
    stopWaiting: () => waiters.close(),
  };
}
