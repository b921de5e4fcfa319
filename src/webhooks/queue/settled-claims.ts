// The claims of a settling statement (settle-jobs.ts): the deliveries that lanes moved up, on the
// settled jobs themselves (still claimed by the settling worker), one per settlement at most, on the
// settlement's own row with its event's columns as plain values; the claims' receivers on the first row.
import { BOSS_SCHEMA, DELIVERY_QUEUE, type DeliveryJob, type DeliveryJobData } from './boss.ts';
import type { EventRow, ReceiverRow } from './send-rows.ts';

// With `claim` (over the settling statement's lane_moved, lanes.ts LANE_CTES), a lane that moves up
// to its next waiting event keeps its head job: the settled job (still active, still this worker's)
// is updated in place to carry the next event, as the caller's claim, instead of being deleted and a
// new job inserted already claimed. No indexed column of pg-boss's changes (id, state, group,
// priority, created_on, start_after), so the update can be a HOT one when the row's page has room;
// either way one row version instead of a deletion and an insertion (the settling statement's time
// per settlement in the ordered drain: 90-114 µs against 100-145 µs, alternated). The lane keeps its
// head_job too. `retry_count` starts again at 0, as for a new job: it counts lost workers of this
// delivery (a fetch raises it, recordLostAttempts reads it, pg-boss's retry limit applies to it).
// `step`, one more on every reuse, is the fence against a stale settlement of the job's earlier
// delivery (settleJobs compares it with the retry count).
export const REUSED_CTE = `reused as (
    update ${BOSS_SCHEMA}.job j set
      data = jsonb_build_object('eventId', m.head_event, 'receiverId', m.receiver_id, 'attempt', 1, 'step', coalesce((j.data->>'step')::int, 0) + 1),
      retry_count = 0, started_on = ${BOSS_SCHEMA}.job_now(), heartbeat_on = ${BOSS_SCHEMA}.job_now(),
      keep_until = ${BOSS_SCHEMA}.job_now() + q.retention_seconds * interval '1 second'
      from lane_moved m, ${BOSS_SCHEMA}.queue q
     where m.reused and j.name = '${DELIVERY_QUEUE}' and j.id = m.settled_job and q.name = j.name
    returning j.id, j.data, j.expire_seconds, j.group_id, m.followed)`;

/**
 * With `claim`, the deliveries that lanes moved up, as claims of the caller (send them, or hand them
 * back), with the rows of their events and receivers (delivery/load-targets.ts
 * targetsFromRows) and the ids of those behind which more events of their record wait (`followed`).
 */
export type Claims = { jobs: DeliveryJob[]; events: EventRow[]; receivers: ReceiverRow[]; followed: Set<string> };

/** The claim columns of a settling statement's row (all null for a settlement that claimed nothing). */
export type ClaimColumns = {
  claimId: string | null;
  claimData: DeliveryJobData | null;
  claimExpireSeconds: number | null;
  claimGroupId: string | null;
  claimFollowed: boolean | null;
  claimEventId: string | null;
  claimEventType: string | null;
  claimEventVersion: string | null;
  claimEventBody: string | null;
  claimedReceivers: ReceiverRow[] | null;
};

/** The claims of a settling statement's rows, with their events and receivers. */
export function claimsOf(rows: readonly ClaimColumns[]): Claims {
  const claims: Claims = { jobs: [], events: [], receivers: rows[0]?.claimedReceivers ?? [], followed: new Set() };
  for (const r of rows) {
    if (r.claimId === null || r.claimData === null) continue;
    // As pg-boss's fetch returns a job, without the AbortSignal it adds for its own work handlers.
    claims.jobs.push({
      id: r.claimId,
      name: DELIVERY_QUEUE,
      data: r.claimData,
      retryCount: 0, // as the statement set it: no worker lost on this delivery yet
      expireInSeconds: r.claimExpireSeconds!,
      heartbeatSeconds: null,
      groupId: r.claimGroupId,
    } as DeliveryJob);
    if (r.claimFollowed) claims.followed.add(r.claimId);
    // Missing when the event committed after this statement's snapshot: the loader reads it (load-batch.ts).
    if (r.claimEventId !== null)
      claims.events.push({
        id: r.claimEventId,
        type: r.claimEventType!,
        version: r.claimEventVersion!,
        body: r.claimEventBody!,
      });
  }
  return claims;
}
