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

/**
 * `paused (receiver_id, until)`: the receivers of the settlements `s` (receiver_id, pause_ms: the wait
 * a Retry-After asked for, or null) that asked to be left alone, in this group or before, until when.
 */
export const PAUSED_CTE = `paused as materialized (
    select r.id as receiver_id, greatest(r.throttled_until, t.until) as until
      from (select receiver_id, max(now() + pause_ms * interval '1 millisecond') as until from s group by receiver_id) t
      join receiver r on r.id = t.receiver_id
     where greatest(r.throttled_until, t.until) > now())`;
