// Receiver backpressure in the settling statement (settle-jobs.ts SETTLE_SQL; the policy is
// delivery/retry-policy.ts). A receiver that answered 429 or 503 with a valid Retry-After is left
// alone that long, as a whole: the health CTEs (receiver-health-sql.ts) move
// `receiver.throttled_until` forward, and while it runs the settlement's follow-ups for it (its
// retries, its lanes' next deliveries) start no sooner than that, and none of its lanes' next
// deliveries is claimed by the settling worker (they become plain jobs, deferred the same way).
// Its other waiting jobs are not rewritten here (that would rewrite a receiver's whole backlog on
// every such answer): a worker that fetches one sees the pause in the receiver's row when loading it
// (send-rows.ts throttled_ms), hands it back deferred and leaves the receiver out of its fetches until
// then (delivery/receiver-pauses.ts); new deliveries are deferred by the enqueue (lanes.ts).
import type { PoolClient } from 'pg';
import { BOSS_SCHEMA, DELIVERY_QUEUE } from './boss.ts';
import { bossInstalled } from './job-reads.ts';

/**
 * `paused (receiver_id, until)`: the receivers of the settlements `s` (receiver_id, pause_ms: the wait
 * a Retry-After asked for, or null) that asked to be left alone, in this group or before, until when.
 */
export const PAUSED_CTE = `paused as materialized (
    select r.id as receiver_id, greatest(r.throttled_until, t.until) as until
      from (select receiver_id, max(now() + pause_ms * interval '1 millisecond') as until from s group by receiver_id) t
      join receiver r on r.id = t.receiver_id
     where greatest(r.throttled_until, t.until) > now())`;

// $1: the receiver. Its row's pause ended, and (when it had one) its deliveries deferred by it that
// are still queued start now; the scan of the queue runs only then.
const END_PAUSE_ROW = `update receiver set throttled_until = null where id = $1 and throttled_until > now() returning id`;
const END_PAUSE_SQL = `
  with ended as (${END_PAUSE_ROW}),
  moved as (
    update ${BOSS_SCHEMA}.job j set start_after = now()
     where (select count(*) from ended) > 0
       and j.name = '${DELIVERY_QUEUE}' and j.state < 'active' and j.data->>'receiverId' = $1::text and j.start_after > now()
    returning 1)
  select (select count(*) from ended) > 0 as ended, (select count(*) from moved)::int as moved`;

/**
 * Ends the pause receiver `receiverId` asked for (an operator's `enable`, in its transaction `client`):
 * its row no longer holds one, and its queued deliveries deferred by it (retries due later included)
 * may start now. Workers holding the pause themselves end it at their next poll
 * (delivery/receiver-pauses.ts recheck). `ended`: it had one; `moved`: the deliveries that start now.
 */
export async function endReceiverPause(
  client: Pick<PoolClient, 'query'>,
  receiverId: string,
): Promise<{ ended: boolean; moved: number }> {
  // pg-boss installs its schema on its first start; before that no delivery waits.
  if (!(await bossInstalled(client)))
    return { ended: ((await client.query(END_PAUSE_ROW, [receiverId])).rowCount ?? 0) > 0, moved: 0 };
  const { rows } = await client.query<{ ended: boolean; moved: number }>(END_PAUSE_SQL, [receiverId]);
  return rows[0]!;
}
