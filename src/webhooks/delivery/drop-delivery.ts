// A job that cannot be sent: its receiver was removed (dropped), or disabled (set aside as a dead
// letter, so that `deliveries replay-dead` can send it once the receiver is enabled again), or its
// event is missing (dropped; retention keeps every event a delivery refers to, so this is logged as
// an error).
import type { Pool } from 'pg';
import type { Logger } from '../../kernel/logger.ts';
import { type DeliveryJob } from '../queue/boss.ts';
import { settleJobs } from '../queue/settle-jobs.ts';

export type DropReason = 'receiver_removed' | 'receiver_disabled' | 'event_missing';

export async function dropDelivery(deps: {
  pool: Pool;
  job: DeliveryJob;
  reason: DropReason;
  logger: Logger;
}): Promise<void> {
  const { job, reason } = deps;
  await settleJobs(deps.pool, [
    {
      job,
      data: job.data,
      attempt: null,
      next: reason === 'receiver_disabled' ? { kind: 'dead', reason } : { kind: 'done' },
    },
  ]);
  if (reason === 'event_missing') deps.logger.error({ reason }, 'delivery dropped: its event does not exist');
  else if (reason === 'receiver_removed') deps.logger.info({ reason }, 'delivery dropped: its receiver was removed');
  else deps.logger.info({ reason }, 'receiver disabled; delivery set aside as a dead letter');
}
