// A job that cannot be sent: its receiver was removed (dropped), or disabled (set aside as a dead
// letter, so that `deliveries replay-dead` can send it once the receiver is enabled again), or its
// event is missing (dropped; retention keeps every event a delivery refers to, so this is logged as
// an error).
import type { Pool } from 'pg';
import type { Job, PgBoss } from 'pg-boss';
import type { Logger } from '../logger.ts';
import { enqueueDeadLetters } from './enqueue.ts';
import { inTransaction } from './pg-transaction.ts';
import { DELIVERY_QUEUE, type DeliveryJobData } from './queue.ts';

export type DropReason = 'receiver_removed' | 'receiver_disabled' | 'event_missing';

export async function dropDelivery(deps: { boss: PgBoss; pool: Pool; job: Job<DeliveryJobData>; reason: DropReason; logger: Logger }): Promise<void> {
  const { job, reason } = deps;
  await inTransaction(deps.pool, async (_client, db) => {
    const deleted = await deps.boss.deleteJob(DELIVERY_QUEUE, { id: job.id, retryCount: job.retryCount }, { db });
    const held = ((deleted as { settled?: string[] }).settled ?? []).length > 0;
    if (held && reason === 'receiver_disabled') {
      await enqueueDeadLetters(deps.boss, db, [{ eventId: job.data.eventId, receiverId: job.data.receiverId, attempts: job.data.attempt - 1, reason }]);
    }
  });
  if (reason === 'event_missing') deps.logger.error({ reason }, 'delivery dropped: its event does not exist');
  else if (reason === 'receiver_removed') deps.logger.info({ reason }, 'delivery dropped: its receiver was removed');
  else deps.logger.info({ reason }, 'receiver disabled; delivery set aside as a dead letter');
}
