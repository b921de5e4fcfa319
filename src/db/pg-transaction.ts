// One transaction on a pooled client, with pg-boss statements bound to it (`db`). A transaction that
// PostgreSQL ends as a deadlock's victim, or for a serialization failure, is run again, whole: an
// operator's disable or enable under load meets the delivery worker's settling statements and the
// catalog writes' fan-out on the same receiver, job and lane rows, in orders no one statement can
// fix (an outside check saw 29 of 120 GraphQL disables and enables answer 500 with a second
// process running). So `work` must do nothing but statements on `client`/`db` until it returns. The
// catalog writes run their MikroORM transactions through retryConflicts too (catalog-writes.ts).
import type { Pool, PoolClient } from 'pg';
import type { Db } from 'pg-boss';

/** SQLSTATE deadlock_detected and serialization_failure: the transaction did nothing, and may be run again. */
const RETRIED = new Set(['40P01', '40001']);
/** Runs of one transaction at most; the waits between them grow from about 20 ms. */
const MAX_RUNS = 4;

/**
 * Runs `transaction` (a whole transaction, begun and ended inside) again while PostgreSQL ends it as
 * a deadlock's victim or for a serialization failure, up to MAX_RUNS runs; anything else is thrown at once.
 */
export async function retryConflicts<T>(transaction: () => Promise<T>): Promise<T> {
  for (let run = 1; ; run++) {
    try {
      return await transaction();
    } catch (error) {
      if (run >= MAX_RUNS || !RETRIED.has((error as { code?: unknown })?.code as string)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 * run * (0.5 + Math.random())));
    }
  }
}

export function inTransaction<T>(pool: Pool, work: (client: PoolClient, db: Db) => Promise<T>): Promise<T> {
  return retryConflicts(() => once(pool, work));
}

async function once<T>(pool: Pool, work: (client: PoolClient, db: Db) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const result = await work(client, { executeSql: (text, values) => client.query(text, values as unknown[]) });
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
