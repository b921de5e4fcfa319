// Receiver health and automatic disabling. The statement that settles a group of attempts
// (queue/settle-jobs.ts settleJobs, with queue/receiver-health-sql.ts) also keeps each receiver's
// last success and failure times and `failing_since` (the first failure after the last success or
// `enable`; null while healthy), and disables a receiver when every attempt has failed for
// WEBHOOK_DISABLE_AFTER_HOURS (measured between attempt start times, so it needs attempts at both
// ends, never a clock of its own), or at once when it answers 410 Gone. In the same statement the
// disabled receiver's waiting deliveries (and the retry its failed attempt would have enqueued)
// become dead letters, replayable after `enable`. What is left for here: the log lines and the counter.
import type { Logger } from '../../kernel/logger.ts';
import { receiversDisabled } from '../../kernel/metrics.ts';
import type { SettleResult } from '../queue/settle-jobs.ts';

export function reportAutomaticDisables(
  deps: { disableAfterHours: number; logger: Logger },
  result: Pick<SettleResult, 'disabled' | 'setAside'>,
): void {
  for (const r of result.disabled) {
    receiversDisabled.inc({ reason: r.reason });
    deps.logger.warn(
      { receiverId: r.id, reason: r.reason, failingSince: r.failingSince, disableAfterHours: deps.disableAfterHours },
      'receiver disabled automatically',
    );
  }
  if (result.setAside)
    deps.logger.info(
      { receivers: result.disabled.length, setAside: result.setAside },
      'waiting deliveries of disabled receivers set aside as dead letters',
    );
}
