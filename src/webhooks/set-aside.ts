// A disabled receiver's waiting deliveries become dead letters at once (replayable with
// `deliveries replay-dead` after `enable`), in the caller's transaction. Jobs already in flight are
// not touched: their follow-up meets the disabled receiver in the worker (drop-delivery.ts).
// pg-boss has no "delete queued jobs matching data" call: the statement is in queue.ts.
import type { PoolClient } from 'pg';
import type { Db, PgBoss } from 'pg-boss';
import { enqueueDeadLetters, takeWaitingDeliveries } from './queue.ts';

/** Moves the waiting deliveries of `receiverIds` to the dead letters; returns how many. */
export async function setAsideWaitingDeliveries(deps: { boss: PgBoss; client: PoolClient; db: Db }, receiverIds: readonly string[]): Promise<number> {
  if (receiverIds.length === 0) return 0;
  const waiting = await takeWaitingDeliveries(deps.client, receiverIds);
  await enqueueDeadLetters(
    deps.boss,
    deps.db,
    waiting.map((d) => ({ eventId: d.eventId, receiverId: d.receiverId, attempts: d.attempt - 1, reason: 'receiver_disabled' })),
  );
  return waiting.length;
}
