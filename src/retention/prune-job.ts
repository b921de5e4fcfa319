// The scheduled retention job: pg-boss's cron (on processes that run the worker, whose pg-boss has
// scheduling on) creates one job an hour on queue `retention-prune`; whichever worker fetches it runs
// pruneRetention. `exclusive`: at most one queued or running at a time, so runs never pile up.
import type { Pool } from 'pg';
import type { PgBoss } from 'pg-boss';
import type { Config } from '../kernel/config.ts';
import type { Logger } from '../kernel/logger.ts';
import { ensureQueue } from '../webhooks/queue/boss.ts';
import { pruneRetention } from './prune.ts';

export const PRUNE_QUEUE = 'retention-prune';
export const PRUNE_CRON = '17 * * * *'; // hourly: each run finds about an hour's worth to delete

export type RetentionJob = { stop: () => Promise<void> };

export async function startRetentionJob(deps: {
  boss: PgBoss;
  pool: Pool;
  retention: Config['retention'];
  logger: Logger;
  /** How often a worker looks for the job (default 30 s: the job comes once an hour). */
  pollingIntervalSeconds?: number;
}): Promise<RetentionJob> {
  const logger = deps.logger.child({ component: 'retention' });
  await ensureQueue(
    deps.boss,
    PRUNE_QUEUE,
    { retryLimit: 2, retryDelay: 60, expireInSeconds: 3600, deleteAfterSeconds: 7 * 24 * 3600 },
    { policy: 'exclusive' },
    true,
  );
  await deps.boss.schedule(PRUNE_QUEUE, PRUNE_CRON);
  await deps.boss.work(PRUNE_QUEUE, { pollingIntervalSeconds: deps.pollingIntervalSeconds ?? 30 }, async () => {
    const started = Date.now();
    const result = await pruneRetention(deps.pool, {
      eventDays: deps.retention.eventDays,
      deliveryAttemptDays: deps.retention.deliveryAttemptDays,
    });
    logger.info({ ...result, durationMs: Date.now() - started }, 'retention prune finished');
    return result;
  });
  return { stop: () => deps.boss.offWork(PRUNE_QUEUE) };
}
