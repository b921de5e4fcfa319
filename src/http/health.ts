// Probes for orchestrators, no API key: /healthz says the process is alive (it never touches the
// database, so a database outage does not get the process restarted), /readyz says it can serve:
// the database answers and pg-boss's schema (the webhook queue, same database) is installed.
import type { Router } from 'express';
import { exactRouter } from './exact-router.ts';
import type { Pool } from 'pg';
import { AppError } from '../kernel/errors.ts';
import { queueSchemaState } from '../webhooks/queue/job-reads.ts';
import { methodNotAllowed, sendProblem } from './problem.ts';

const RETRY_AFTER_SECONDS = '5';

type Readiness = { ready: true } | { ready: false; reason: string };

/** One cheap read answers both questions: an answer about the queue's schema means the database is up. */
export async function checkReadiness(pool: Pool, timeoutMs: number): Promise<Readiness> {
  const state = await queueSchemaState(pool, timeoutMs).catch(() => 'unreachable' as const);
  if (state === 'unreachable') return { ready: false, reason: 'the database is unreachable' };
  if (state === 'absent')
    return { ready: false, reason: 'the job queue (pg-boss) is not installed in the database yet' };
  if (state === 'installing') return { ready: false, reason: 'the job queue schema is being installed' };
  return { ready: true };
}

export function healthRoutes(deps: { pool: Pool; readinessTimeoutMs: number }): Router {
  const router = exactRouter();
  const onlyGet = methodNotAllowed(['GET', 'HEAD']);

  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.all('/healthz', onlyGet);

  router.get('/readyz', async (req, res) => {
    const readiness = await checkReadiness(deps.pool, deps.readinessTimeoutMs);
    if (readiness.ready) return void res.json({ status: 'ok', checks: { database: 'ok', queue: 'ok' } });
    req.log.warn({ reason: readiness.reason }, 'not ready');
    sendProblem(
      req,
      res,
      new AppError('SERVICE_UNAVAILABLE', `Not ready: ${readiness.reason}`, {
        headers: { 'Retry-After': RETRY_AFTER_SECONDS },
      }),
    );
  });
  router.all('/readyz', onlyGet);

  return router;
}
