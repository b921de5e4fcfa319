// One LISTEN connection per process for the change feed: a dedicated pg client (not from the pool,
// which it would hold forever), reconnecting with backoff after an error. Every notification, and
// every reconnect (notifications sent while it was down are lost), wakes the waiting readers.
import pg from 'pg';
import type { Logger } from '../logger.ts';
import type { FeedWaiters } from './feed-waiters.ts';

export const FEED_CHANNEL = 'lods_event_feed'; // NOTIFYed by the trigger of migration change_feed

export type FeedNotifier = { close: () => Promise<void> };

export function createFeedNotifier(deps: { url: string; waiters: FeedWaiters; logger: Logger; reconnectMaxMs?: number }): FeedNotifier {
  const logger = deps.logger.child({ component: 'feed-notifier' });
  let client: pg.Client | null = null;
  let closed = false;
  let failures = 0;
  let retry: NodeJS.Timeout | undefined;

  const reconnectLater = () => {
    if (closed || retry) return;
    const delay = Math.min(deps.reconnectMaxMs ?? 5000, 100 * 2 ** Math.min(failures++, 10));
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, delay);
  };

  async function connect(): Promise<void> {
    const next = new pg.Client({ connectionString: deps.url, application_name: 'lods-feed-listen', keepAlive: true });
    next.on('notification', () => deps.waiters.wake());
    next.on('error', (error) => {
      logger.warn({ err: error.message }, 'feed LISTEN connection failed; reconnecting');
      deps.waiters.setListening(false);
      next.end().catch(() => {});
      if (client === next) client = null;
      reconnectLater();
    });
    try {
      await next.connect();
      await next.query(`listen ${FEED_CHANNEL}`);
    } catch (error) {
      next.end().catch(() => {});
      if (!closed) logger.warn({ err: (error as Error).message }, 'feed LISTEN connection unavailable; retrying');
      reconnectLater();
      return;
    }
    if (closed) return void next.end().catch(() => {});
    client = next;
    if (failures > 0) logger.info('feed LISTEN connection restored');
    failures = 0;
    deps.waiters.setListening(true);
    deps.waiters.wake(); // anything committed while no one listened
  }

  void connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      deps.waiters.setListening(false);
      await client?.end().catch(() => {});
      client = null;
    },
  };
}
