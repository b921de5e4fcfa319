// GET /metrics: the process registry in Prometheus text format, no API key. The webhook queue
// gauges, the feed horizon's age and the search fold's backlog are read from the database at scrape
// time (not kept in memory) so that every replica reports the same truth, whichever of them runs the
// worker or folds.
import type { Router } from 'express';
import { exactRouter } from './exact-router.ts';
import type { Pool } from 'pg';
import { readSearchMarked } from '../catalog/count-folder.ts';
import { readHorizonAgeSeconds } from '../feed/horizon-age.ts';
import { deadLetters, feedHorizonAge, queueDepth, registry, searchMarked } from '../kernel/metrics.ts';
import { openJobCounts } from '../webhooks/queue/job-reads.ts';
import { methodNotAllowed } from './problem.ts';

export const QUEUE_GAUGES_TIMEOUT_MS = 1000;

export function metricsRoutes(deps: { pool: Pool; timeoutMs?: number }): Router {
  const router = exactRouter();
  router.get('/metrics', async (req, res) => {
    const timeoutMs = deps.timeoutMs ?? QUEUE_GAUGES_TIMEOUT_MS;
    // The reads at once: during an outage a scrape waits one timeout, not three.
    const [open, horizonAge, marked] = await Promise.allSettled([
      openJobCounts(deps.pool, timeoutMs),
      readHorizonAgeSeconds(deps.pool, timeoutMs),
      readSearchMarked(deps.pool, timeoutMs),
    ]);
    if (open.status === 'fulfilled') {
      queueDepth.set(open.value.deliveries);
      deadLetters.set(open.value.deadLetters);
    } else {
      // The scrape still succeeds (process metrics stay visible during an outage); NaN says "unknown"
      // instead of repeating a stale count.
      queueDepth.set(Number.NaN);
      deadLetters.set(Number.NaN);
      req.log.warn({ err: (open.reason as Error)?.message }, 'queue gauges unavailable');
    }
    feedHorizonAge.set(horizonAge.status === 'fulfilled' ? horizonAge.value : Number.NaN);
    searchMarked.set(marked.status === 'fulfilled' ? marked.value : Number.NaN);
    res
      .set('Cache-Control', 'no-store')
      .type(registry.contentType)
      .send(await registry.metrics());
  });
  router.all('/metrics', methodNotAllowed(['GET', 'HEAD']));
  return router;
}
