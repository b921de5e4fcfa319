// The delivery worker's sweep of stuck lanes (queue/lanes.ts sweepLanes): every LANE_SWEEP_MS, lanes
// whose head job vanished unsettled and that nothing has touched for as long move on to their next
// delivery: pg-boss dead-lettered a job whose workers kept dying, or dropped one past its retention.
// Rare, and it only delays that record's later deliveries.
import type { Pool } from 'pg';
import type { Logger } from '../../kernel/logger.ts';
import { sweepLanes } from '../queue/lanes.ts';

/** How often a worker sweeps, and how long a lane must be untouched to be swept (the default). */
export const LANE_SWEEP_MS = 30_000;

/** Starts sweeping every `everyMs`; `moved` is called when a sweep moved lanes (their new heads are queued). */
export function startLaneSweeper(options: { pool: Pool; logger: Logger; everyMs: number; moved: () => void }): {
  stop: () => void;
} {
  const { pool, logger, everyMs } = options;
  const sweep = async () => {
    try {
      const moved = await sweepLanes(pool, everyMs);
      if (moved) {
        logger.warn(
          { lanes: moved },
          'delivery lanes whose open job vanished unsettled (dead-lettered by pg-boss, or dropped) moved on to their next delivery',
        );
        options.moved();
      }
    } catch (error) {
      logger.warn({ err: error }, 'sweeping delivery lanes failed; retrying at the next sweep');
    }
  };
  const timer = setInterval(() => void sweep(), everyMs);
  return { stop: () => clearInterval(timer) };
}
