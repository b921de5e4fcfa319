// Reads of the delivery lanes (lanes.ts) outside the enqueueing and settling statements: whether a
// head about to be sent is superseded (LATEST_STATE), and the deliveries waiting in lanes per receiver.
import type { Pool } from 'pg';

// A LATEST_STATE delivery about to be sent: superseded when a newer event of its record waits behind
// it in its lane (the enqueue replaces only heads not yet fetched; this covers one fetched or claimed
// and still held in the worker's memory).
const SUPERSEDED_HEAD_SQL = `select 1 from delivery_lane where head_job = $1 and cardinality(waiting) > 0`;

/** Whether a newer event of its record waits behind the head job `jobId` (LATEST_STATE: then it is not sent). */
export async function headSuperseded(pool: Pool, jobId: string): Promise<boolean> {
  const { rowCount } = await pool.query({
    name: 'webhook-head-superseded',
    text: SUPERSEDED_HEAD_SQL,
    values: [jobId],
  });
  return (rowCount ?? 0) > 0;
}

/**
 * Lanes' waiting deliveries of a receiver (`$param`, or all receivers when null), per receiver:
 * deliveries that are neither in the queue nor dead letters yet.
 */
export function waitingInLanesSql(receiverParam: string): string {
  return `select receiver_id::text as receiver_id, sum(cardinality(waiting))::int as waiting
            from delivery_lane where head_job is not null and cardinality(waiting) > 0 and (${receiverParam}::text is null or receiver_id::text = ${receiverParam})
           group by 1`;
}
