// One LISTEN connection per API process, for every part that reacts to another process's commits
// (the change feed's long polls, the API key cache): a dedicated pg client (not from the pool,
// which it would hold forever), reconnecting with backoff after an error. Notifications sent while
// it is down are lost, so each subscriber hears when listening stops and starts again and treats
// both as "anything may have changed".
import pg from 'pg';
import type { Logger } from '../kernel/logger.ts';
import { listenConnectionUp } from '../kernel/metrics.ts';

export type ListenSubscriber = {
  channel: string;
  /** A NOTIFY on the channel, with its payload ('' when it has none). */
  notified: (payload: string) => void;
  /** False when the connection is lost (notifications may be missed from now on), true once it listens again. */
  listening: (up: boolean) => void;
};

export type ListenConnection = { close: () => Promise<void> };

export function createListenConnection(deps: {
  url: string;
  subscribers: readonly ListenSubscriber[];
  logger: Logger;
  reconnectMaxMs?: number;
}): ListenConnection {
  const logger = deps.logger.child({ component: 'listen' });
  const byChannel = new Map(deps.subscribers.map((s) => [s.channel, s]));
  const setListening = (up: boolean) => {
    listenConnectionUp.set(up ? 1 : 0);
    deps.subscribers.forEach((s) => s.listening(up));
  };
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
    // keepAlive: a connection that dies without a FIN (a partition) is noticed eventually (TCP
    // keepalive probes: minutes with the kernel's defaults); KEY_CACHE_MAX_AGE_MS bounds what the key
    // cache serves meanwhile.
    const next = new pg.Client({
      connectionString: deps.url,
      application_name: 'lods-listen',
      keepAlive: true,
      keepAliveInitialDelayMillis: 5000,
    });
    next.on('notification', (message) => byChannel.get(message.channel)?.notified(message.payload ?? ''));
    next.on('error', (error) => {
      logger.warn({ err: error.message }, 'LISTEN connection failed; reconnecting');
      setListening(false);
      next.end().catch(() => {});
      if (client === next) client = null;
      reconnectLater();
    });
    try {
      await next.connect();
      for (const channel of byChannel.keys()) await next.query(`listen ${channel}`);
    } catch (error) {
      next.end().catch(() => {});
      // Once per outage (the retries back off from 100 ms: a 5 s outage gave 6-7 warnings); its end is logged below.
      if (!closed && failures === 0)
        logger.warn({ err: (error as Error).message }, 'LISTEN connection unavailable; retrying until it is back');
      reconnectLater();
      return;
    }
    if (closed) return void next.end().catch(() => {});
    client = next;
    if (failures > 0) logger.info({ attempts: failures }, 'LISTEN connection restored');
    failures = 0;
    setListening(true);
  }

  void connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      setListening(false);
      await client?.end().catch(() => {});
      client = null;
    },
  };
}
