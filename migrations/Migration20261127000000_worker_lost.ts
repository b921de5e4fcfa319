import { Migration } from '@mikro-orm/migrations';

// An attempt cut short by a worker that died (or lost its database) is recorded when pg-boss hands
// its expired job out again, with the outcome `worker_lost`, so the attempt log answers "what
// happened to this delivery" completely.
export class Migration20261127000000_worker_lost extends Migration {
  override up(): void {
    this.addSql(`alter table delivery_attempt drop constraint delivery_attempt_outcome_check`);
    this.addSql(`
      alter table delivery_attempt add constraint delivery_attempt_outcome_check
        check (outcome in ('success', 'http_error', 'timeout', 'connection_error', 'redirect', 'worker_lost'))`);
  }
}
