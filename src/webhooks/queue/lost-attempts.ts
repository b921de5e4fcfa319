// A claim whose worker died (or lost its database) mid-attempt left no attempt row; when pg-boss hands
// the expired job out again (its retry count raised: settled-claims.ts), the lost attempt is
// recorded as `worker_lost`, once per loss. A job handed back unsent (no room in its receiver's
// queue, a pause: boss.ts handBackJobs) keeps its retry count and is fetched again: the job's data
// keeps the retry count whose loss was recorded (`lostRecorded`), so that a later fetch records
// nothing new, where each one used to add a row (a kill -9 of a worker gave up to 254 rows for one
// lost delivery, found from outside). The lost attempt keeps its number and the delivery moves on to
// the next (`attempt`), so the attempt rows read 1 worker_lost, 2 success; `lost` counts it aside
// (retry-policy.ts countedAttempts: WEBHOOK_LOST_RETRY_LIMIT bounds each attempt's losses, not WEBHOOK_MAX_ATTEMPTS).
import type { Pool } from 'pg';
import { BOSS_SCHEMA, type DeliveryJob, DELIVERY_QUEUE } from './boss.ts';

const LOST_ATTEMPTS_SQL = `
  with lost as (
    update ${BOSS_SCHEMA}.job j set data = j.data || jsonb_build_object('lostRecorded', j.retry_count,
             'attempt', (j.data->>'attempt')::int + 1, 'lost', coalesce((j.data->>'lost')::int, 0) + 1)
     where j.name = $1 and j.id = any($2::uuid[]) and j.state = 'active'
       and j.retry_count > coalesce((j.data->>'lostRecorded')::int, 0)
    returning j.id::text as job_id, (j.data->>'eventId')::uuid as event_id, (j.data->>'receiverId')::uuid as receiver_id,
              (j.data->>'attempt')::int as attempt, (j.data->>'lost')::int as lost),
  recorded as (
    insert into delivery_attempt (event_id, receiver_id, attempt, started_at, duration_ms, status_code, error, response_excerpt, outcome, dead_lettered)
    select l.event_id, l.receiver_id, l.attempt - 1, now(), 0, null, 'worker_lost', null, 'worker_lost', false
      from lost l
     where exists (select 1 from receiver r where r.id = l.receiver_id) and exists (select 1 from event e where e.id = l.event_id))
  select job_id, attempt, lost from lost`;

/**
 * Records a `worker_lost` attempt for each fetched job that comes back after a loss not recorded yet,
 * and moves such a job's data on as stored (`attempt`, `lost`): the caller sends the next attempt.
 * Returns how many.
 */
export async function recordLostAttempts(pool: Pool, jobs: readonly DeliveryJob[]): Promise<number> {
  const ids = jobs.filter((j) => j.retryCount > 0).map((j) => j.id);
  if (ids.length === 0) return 0;
  const { rows } = await pool.query<{ job_id: string; attempt: number; lost: number }>(LOST_ATTEMPTS_SQL, [
    DELIVERY_QUEUE,
    ids,
  ]);
  const moved = new Map(rows.map((r) => [r.job_id, r]));
  for (const job of jobs) {
    const row = moved.get(job.id);
    if (row) Object.assign(job.data, { attempt: row.attempt, lost: row.lost });
  }
  return rows.length;
}
