// Setting a disabled receiver's waiting deliveries aside as dead letters (an operator's disable,
// receivers/receiver-switch.ts), and the two parts of it the settling statement shares
// (settle-jobs.ts): the set-aside itself and the follow-up jobs' insert. Raw SQL on pgboss.job.
import type { PoolClient } from 'pg';
import { BOSS_SCHEMA, DEAD_LETTER_QUEUE, DELIVERY_QUEUE } from './boss.ts';
import { bossInstalled } from './job-reads.ts';
import { JOB_SETTINGS_COLUMNS, jobSettings, LANES_ASIDE_CTE } from './lanes.ts';

// A disabled receiver's waiting (not in flight) deliveries, taken out of the queue for the dead
// letters: over a relation `disabled (id)`, in the settling statement (receivers a settlement
// disables) and in setAsideWaitingDeliveries (an operator's disable). A job being fetched
// concurrently is locked by the fetch (SKIP LOCKED there), so the delete waits and then skips it as
// active: sent or set aside, never both. The gate keeps the scan of the queue from running when
// nothing was disabled.
export const SET_ASIDE_CTE = `set_aside as (
    delete from ${BOSS_SCHEMA}.job j
     where (select count(*) from disabled) > 0
       and j.name = '${DELIVERY_QUEUE}' and j.state < 'active' and j.data->>'receiverId' in (select id::text from disabled)
    returning j.id as job_id, (j.data->>'eventId')::uuid as event_id, (j.data->>'receiverId')::uuid as receiver_id, (j.data->>'attempt')::int - 1 as attempts)`;

// The jobs of a relation `follow (event_id, receiver_id, attempt, next, delay_ms, reason, job_id,
// throttled, throttled_ms, lost, not_before)`: the next attempt ('retry', with its throttled answers
// and attempts lost with their worker, if any),
// the first attempt of a delivery a lane moved up ('promote', attempt 0), or a dead letter ('dead',
// `attempt` being the attempts made), with the queue's own settings (what boss.insert() writes;
// boss-schema.test.ts compares the two). `job_id`, when given, is the new job's id (a lane's new head,
// lanes.ts). A job starts no sooner than `not_before`, if given (receiver-pause-sql.ts).
export const FOLLOW_UPS_CTE = `followed as (
    insert into ${BOSS_SCHEMA}.job (id, name, data, group_id, start_after, created_on, keep_until, ${JOB_SETTINGS_COLUMNS})
    select coalesce(f.job_id, gen_random_uuid()), q.name,
           case when f.next <> 'dead' then jsonb_build_object('eventId', f.event_id, 'receiverId', f.receiver_id, 'attempt', f.attempt + 1)
                     || jsonb_strip_nulls(jsonb_build_object('throttled', nullif(f.throttled, 0), 'throttledMs', nullif(f.throttled_ms, 0), 'lost', nullif(f.lost, 0)))
                else jsonb_strip_nulls(jsonb_build_object('eventId', f.event_id, 'receiverId', f.receiver_id, 'attempts', f.attempt, 'reason', f.reason)) end,
           case when f.next <> 'dead' then f.receiver_id::text end,
           t.at, ${BOSS_SCHEMA}.job_now(), t.at + q.retention_seconds * interval '1 second',
           ${jobSettings('q')}
      from follow f
      cross join lateral (select greatest(${BOSS_SCHEMA}.job_now() + f.delay_ms * interval '1 millisecond', f.not_before) as at) t
      join ${BOSS_SCHEMA}.queue q on q.name = case when f.next <> 'dead' then '${DELIVERY_QUEUE}' else '${DEAD_LETTER_QUEUE}' end)`;

const SET_ASIDE_SQL = `
  with disabled as (select unnest($1::uuid[]) as id),
  ${SET_ASIDE_CTE},
  -- The lanes of the heads set aside are emptied too (their waiting deliveries become dead letters).
  ${LANES_ASIDE_CTE},
  follow as (
    select event_id, receiver_id, attempts as attempt, 'dead'::text as next, 0 as delay_ms, 'receiver_disabled'::text as reason, null::uuid as job_id, null::int as throttled, null::bigint as throttled_ms, null::int as lost, null::timestamptz as not_before from set_aside
    union all
    select unnest(replaced), receiver_id, 0, 'dead', 0, 'receiver_disabled', null, null, null, null, null from lanes_aside),
  ${FOLLOW_UPS_CTE}
  select (select count(*)::int from follow) as n`;

/**
 * Moves the waiting deliveries of `receiverIds` (just disabled by the caller, in its transaction
 * `client`) to the dead letters, replayable with `deliveries replay-dead` after `enable`; returns
 * how many. Jobs in flight are not touched: their follow-up meets the disabled receiver in the
 * worker (drop-delivery.ts). Raw: pg-boss has no "delete queued jobs matching data" call, and
 * finding ids first would race the fetch.
 */
export async function setAsideWaitingDeliveries(client: PoolClient, receiverIds: readonly string[]): Promise<number> {
  // pg-boss installs its schema on its first start; before that no delivery waits.
  if (receiverIds.length === 0 || !(await bossInstalled(client))) return 0;
  const { rows } = await client.query<{ n: number }>({
    name: 'webhook-set-aside',
    text: SET_ASIDE_SQL,
    values: [receiverIds],
  });
  return rows[0]!.n;
}
