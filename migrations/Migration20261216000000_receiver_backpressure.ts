import { Migration } from '@mikro-orm/migrations';

// Receiver backpressure. A receiver that answers 429 or 503 with a valid Retry-After asks the service
// to wait: the attempt is recorded with the outcome `throttled` (not a failure: it counts neither
// toward the delivery's WEBHOOK_MAX_ATTEMPTS nor toward automatic disabling, up to the limits in
// src/webhooks/delivery/retry-policy.ts), and `receiver.throttled_until` holds until when the receiver
// asked to be left alone. It is written by the settling statement (webhooks/receivers/receiver-health-sql.ts)
// and read by the worker's loads (webhooks/queue/send-rows.ts), the settling statement's follow-ups
// (webhooks/queue/settle-jobs.ts) and the enqueue (webhooks/queue/lanes.ts ENQUEUE_SQL).
export class Migration20261216000000_receiver_backpressure extends Migration {
  override up(): void {
    this.addSql(`alter table receiver add column throttled_until timestamptz`);
    this.addSql(`alter table delivery_attempt drop constraint delivery_attempt_outcome_check`);
    this.addSql(`
      alter table delivery_attempt add constraint delivery_attempt_outcome_check
        check (outcome in ('success', 'http_error', 'timeout', 'connection_error', 'redirect', 'worker_lost', 'secret_unavailable', 'superseded', 'throttled'))`);
  }
}
