// The change feed of one process: its reads, the long-poll waiters and the LISTEN connection that
// wakes them. service.ts starts it with the API and stops it first on shutdown.
import type { Pool } from 'pg';
import type { Queryable } from '../db/read-replicas.ts';
import type { Logger } from '../logger.ts';
import { createFeedNotifier } from './feed-notifier.ts';
import { createFeedReads, type FeedReads } from './feed-reads.ts';
import { createFeedWaiters, type FeedWaiters } from './feed-waiters.ts';

export type ChangeFeed = {
  reads: FeedReads;
  waiters: FeedWaiters;
  /** Answers every waiting request now (shutdown, before the HTTP server drains). */
  stopWaiting: () => void;
  /** Closes the LISTEN connection. */
  close: () => Promise<void>;
};

/** `readPool` serves the reads it can (feed-reads.ts), `pool` (the primary) the rest. */
export function startChangeFeed(deps: { pool: Pool; readPool: Queryable; url: string; maxWaiters: number; logger: Logger }): ChangeFeed {
  const waiters = createFeedWaiters({ maxWaiters: deps.maxWaiters });
  const notifier = createFeedNotifier({ url: deps.url, waiters, logger: deps.logger });
  return {
    reads: createFeedReads(deps.readPool, deps.pool),
    waiters,
    stopWaiting: () => waiters.close(),
    close: async () => {
      waiters.close();
      await notifier.close();
    },
  };
}
