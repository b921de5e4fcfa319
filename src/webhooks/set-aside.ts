// A disabled receiver's waiting deliveries become dead letters at once (replayable with
// `deliveries replay-dead` after `enable`), in the caller's transaction. Jobs already in flight are
// not touched: their follow-up meets the disabled receiver in the worker (drop-delivery.ts).
//
// Raw SQL on pg-boss's job table, like removeReceiver's: pg-boss has no "delete queued jobs matching
// data" call. A job being fetched concurrently is locked by the fetch (SKIP LOCKED there), so the
// delete waits and then skips it as active: a delivery is either sent or set aside, never both.
import type { PoolClient } from 'pg';
import type { Db, PgBoss } from 'pg-boss';
import { enqueueDeadLetters } from './enqueue.ts';
import { BOSS_SCHEMA, DELIVERY_QUEUE, type DeliveryJobData } from './queue.ts';

const TAKE_WAITING_SQL = `
  delete from ${BOSS_SCHEMA}.job
   where name = $1 and state < 'active' and data->>'receiverId' = any($2::text[])
  returning data`;

/** Moves the waiting deliveries of `receiverIds` to the dead letters; returns how many. */
export async function setAsideWaitingDeliveries(deps: { boss: PgBoss; client: PoolClient; db: Db }, receiverIds: readonly string[]): Promise<number> {
  if (receiverIds.length === 0) return 0;
  const { rows } = await deps.client.query<{ data: DeliveryJobData }>(TAKE_WAITING_SQL, [DELIVERY_QUEUE, receiverIds]);
  await enqueueDeadLetters(
    deps.boss,
    deps.db,
    rows.map(({ data }) => ({ eventId: data.eventId, receiverId: data.receiverId, attempts: data.attempt - 1, reason: 'receiver_disabled' })),
  );
  return rows.length;
}
