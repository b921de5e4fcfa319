// The maintained counts' folder (migration count_deltas): every FOLD_EVERY_MS, the deltas that write
// statements appended to catalog_count_delta, facet_count_delta and list_bucket_delta are moved into
// their base rows, and list_bucket's ranges rebalanced, in one transaction (`fold_counts()`). Readers
// read base plus pending deltas, so the counts are exact whether or not a fold ran; folding keeps the
// pending deltas to about a second of writes, so reading them stays cheap. Every API process runs
// one; a try-lock lets one fold at a time, and the others' calls return at once.
import type { Pool } from 'pg';
import type { Logger } from '../kernel/logger.ts';

export const FOLD_EVERY_MS = 1000;

/**
 * Folds once; false when another session was folding (its fold covers what was committed).
 * `waitMs`: how long list_bucket's rebalance may wait for the writers in flight (0: only when none).
 */
export async function foldCounts(pool: Pick<Pool, 'query'>, waitMs = 200): Promise<boolean> {
  const { rows } = await pool.query<{ folded: boolean }>('select fold_counts($1) as folded', [waitMs]);
  return rows[0]!.folded;
}

/** Starts folding every `everyMs`; a failed fold is logged and retried at the next tick. */
export function startCountFolder(options: { pool: Pool; logger: Logger; everyMs?: number }): {
  stop: () => Promise<void>;
} {
  const { pool, logger } = options;
  let running: Promise<void> = Promise.resolve();
  const fold = async () => {
    try {
      await foldCounts(pool);
    } catch (error) {
      logger.warn({ err: error }, 'folding the maintained counts failed; they stay exact, and the next fold retries');
    }
  };
  const timer = setInterval(() => {
    running = running.then(fold);
  }, options.everyMs ?? FOLD_EVERY_MS);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
