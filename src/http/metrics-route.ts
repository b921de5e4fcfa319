// GET /metrics: the process registry in Prometheus text format, no API key. The webhook queue
// gauges are read from pg-boss's tables at scrape time (not kept in memory) so that every replica
// reports the same truth, whichever of them runs the worker.
import type { Router } from 'express';
import { exactRouter } from './exact-router.ts';
import pg, { type Pool } from 'pg';
import { readHorizonAgeSeconds } from '../feed/horizon-age.ts';
import { deadLetters, feedHorizonAge, queueDepth, registry } from '../metrics.ts';
import { BOSS_SCHEMA, DEAD_LETTER_QUEUE, DELIVERY_QUEUE } from '../webhooks/queue.ts';
import { boundedQuery, isMissingRelation } from './bounded-query.ts';
import { methodNotAllowed } from './problem.ts';

/** pg-boss queue names whose jobs are webhook deliveries, and those holding dead-lettered ones. */
export type WebhookQueueNames = { delivery: readonly string[]; deadLetter: readonly string[] };

export const WEBHOOK_QUEUES: WebhookQueueNames = { delivery: [DELIVERY_QUEUE], deadLetter: [DEAD_LETTER_QUEUE] };
export const QUEUE_GAUGES_TIMEOUT_MS = 1000;

// Jobs not yet settled: waiting (created), waiting for a retry, or in flight.
const OPEN_STATES = `('created', 'retry', 'active')`;

/**
 * Counts open jobs of the given queues in one statement (pgboss.job is partitioned by queue name,
 * so only those partitions are read, through pg-boss's own indexes), bounded by a timeout.
 * No pg-boss schema yet means no jobs: 0, not an error.
 */
export async function readQueueGauges(pool: Pool, queues: WebhookQueueNames, timeoutMs = QUEUE_GAUGES_TIMEOUT_MS): Promise<{ depth: number; dead: number }> {
  const all = [...queues.delivery, ...queues.deadLetter];
  if (all.length === 0) return { depth: 0, dead: 0 };
  // Parameterless on purpose (boundedQuery sends one simple-protocol message); names are ours, quoted anyway.
  const list = (names: readonly string[]) => (names.length ? names.map((n) => pg.escapeLiteral(n)).join(', ') : 'null');
  const sql = `select count(*) filter (where name in (${list(queues.delivery)}))::int as depth,
                      count(*) filter (where name in (${list(queues.deadLetter)}))::int as dead
                 from ${BOSS_SCHEMA}.job
                where name in (${list(all)}) and state in ${OPEN_STATES}`;
  try {
    const [row] = await boundedQuery<{ depth: number; dead: number }>(pool, sql, timeoutMs);
    return { depth: row?.depth ?? 0, dead: row?.dead ?? 0 };
  } catch (error) {
    if (isMissingRelation(error)) return { depth: 0, dead: 0 };
    throw error;
  }
}

export function metricsRoutes(deps: { pool: Pool; queues?: WebhookQueueNames; timeoutMs?: number }): Router {
  const router = exactRouter();
  router.get('/metrics', async (req, res) => {
    try {
      const { depth, dead } = await readQueueGauges(deps.pool, deps.queues ?? WEBHOOK_QUEUES, deps.timeoutMs);
      queueDepth.set(depth);
      deadLetters.set(dead);
    } catch (error) {
      // The scrape still succeeds (process metrics stay visible during an outage); NaN says "unknown"
      // instead of repeating a stale count.
      queueDepth.set(Number.NaN);
      deadLetters.set(Number.NaN);
      req.log.warn({ err: (error as Error)?.message }, 'queue gauges unavailable');
    }
    feedHorizonAge.set(await readHorizonAgeSeconds(deps.pool, deps.timeoutMs ?? QUEUE_GAUGES_TIMEOUT_MS).catch(() => Number.NaN));
    res.set('Cache-Control', 'no-store').type(registry.contentType).send(await registry.metrics());
  });
  router.all('/metrics', methodNotAllowed(['GET', 'HEAD']));
  return router;
}
