// Reads of pg-boss's job table for the rest of the service (/metrics, /readyz, and whether pg-boss is
// installed yet), so that no other module names pg-boss's tables. Each says why pg-boss's public API
// does not do it.
import type { Pool, PoolClient } from 'pg';
import { boundedQuery, isMissingRelation } from '../../db/bounded-query.ts';
import { BOSS_SCHEMA, DEAD_LETTER_QUEUE, DELIVERY_QUEUE, QUEUES_SQL } from './boss.ts';

// One row when pg-boss's job table exists: pg-boss installs its schema on its first start.
export const INSTALLED_SQL = `select 1 where to_regclass('${BOSS_SCHEMA}.job') is not null`;

/**
 * Whether pg-boss's job table exists: pg-boss installs its schema on its first start.
 * Raw: isInstalled() needs a started pg-boss instance; retention and receiver reads have a pool.
 */
export async function bossInstalled(db: Pick<Pool, 'query'> | Pick<PoolClient, 'query'>): Promise<boolean> {
  return ((await db.query(INSTALLED_SQL)).rowCount ?? 0) > 0;
}

/**
 * Open (waiting, retrying or in-flight) jobs of the delivery queue and of the dead letters, counted
 * now in one statement bounded by `timeoutMs` (pgboss.job is partitioned by queue name, so only those
 * two partitions are read). No pg-boss schema yet means no jobs: zeros, not an error.
 * Raw: getQueueStats() is pg-boss's monitor snapshot (up to a pass old) and unbounded on its own pool.
 */
export async function openJobCounts(
  pool: Pool,
  timeoutMs: number,
): Promise<{ deliveries: number; deadLetters: number }> {
  const sql = `select count(*) filter (where name = '${DELIVERY_QUEUE}')::int as deliveries,
                      count(*) filter (where name = '${DEAD_LETTER_QUEUE}')::int as "deadLetters"
                 from ${BOSS_SCHEMA}.job
                where name in ${QUEUES_SQL} and state in ('created', 'retry', 'active')`;
  try {
    const [row] = await boundedQuery<{ deliveries: number; deadLetters: number }>(pool, sql, timeoutMs);
    return { deliveries: row?.deliveries ?? 0, deadLetters: row?.deadLetters ?? 0 };
  } catch (error) {
    if (isMissingRelation(error)) return { deliveries: 0, deadLetters: 0 };
    throw error;
  }
}

/**
 * Whether pg-boss's schema is ready in the database behind `pool`: 'absent' before pg-boss's first
 * start, 'installing' while its version row is not written yet. Bounded by `timeoutMs` (a pg-boss
 * migration holding its tables must not hang a probe); rejects when the database does not answer.
 * Raw: schemaVersion() runs on a pg-boss instance's own pool, with no deadline.
 */
export async function queueSchemaState(pool: Pool, timeoutMs: number): Promise<'ready' | 'installing' | 'absent'> {
  try {
    const rows = await boundedQuery<{ version: number }>(
      pool,
      `select version from ${BOSS_SCHEMA}.version limit 1`,
      timeoutMs,
    );
    return rows.length === 0 ? 'installing' : 'ready';
  } catch (error) {
    if (isMissingRelation(error)) return 'absent';
    throw error;
  }
}
