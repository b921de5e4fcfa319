// The connection the settling statements run on (record-attempt.ts): one of the pool's, kept while
// settlements keep coming.
import type { Pool, PoolClient } from 'pg';
import { discardConnection } from '../../db/pool-errors.ts';

type Query = { name: string; text: string; values: unknown[] };
/** Where the settling statements run: `query` as a pool's; `release` gives the connection back (see heldConnection). */
export type Settler = { query: <R>(query: Query) => Promise<{ rows: R[] }>; release: () => void };

/**
 * One connection of the pool, kept for the settling statements while settlements keep coming
 * (released after IDLE_RELEASE_MS without one, on drain, and dropped on any error). The statement is
 * named, so each connection that runs it parses it and plans it (custom plans for its first five
 * executions there); taken from the pool for each statement, it landed on whichever connection the
 * pool handed out last, a second one as soon as a load held the first (test/webhooks/hot-lane.test.ts).
 * Only with a pool of at least MIN_POOL_TO_HOLD connections: holding one of a smaller pool would
 * starve the worker's loads (and, with role=all, the API's reads).
 */
export function heldConnection(pool: Pool, idleReleaseMs = IDLE_RELEASE_MS): Settler {
  let client: PoolClient | null = null;
  let idle: NodeJS.Timeout | null = null;
  const max = (pool as { options?: { max?: number } }).options?.max ?? 10;
  const onError = (): void => drop(true);
  function drop(destroy: boolean): void {
    if (idle) clearTimeout(idle);
    idle = null;
    const c = client;
    client = null;
    if (!c) return;
    c.off('error', onError);
    if (destroy) discardConnection(c);
    else c.release();
  }
  return {
    async query<R>(query: Query): Promise<{ rows: R[] }> {
      if (max < MIN_POOL_TO_HOLD) return await pool.query<R & object>(query);
      if (idle) clearTimeout(idle);
      idle = null;
      if (!client) {
        const c = await pool.connect();
        // A connection lost while held here: pg emits 'error' on a checked-out client with no listener as an uncaught error.
        c.on('error', onError);
        client = c;
      }
      const c = client;
      try {
        return await c.query<R & object>(query);
      } catch (error) {
        // Whatever failed (the connection, or a settlement the caller then retries alone), start afresh.
        if (client === c) drop(true);
        throw error;
      } finally {
        if (client === c) idle = setTimeout(() => drop(false), idleReleaseMs).unref();
      }
    },
    release: () => drop(false),
  };
}
const IDLE_RELEASE_MS = 1000;
const MIN_POOL_TO_HOLD = 4;
