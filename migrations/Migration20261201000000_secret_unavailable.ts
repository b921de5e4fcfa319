import { Migration } from '@mikro-orm/migrations';

// An attempt the worker could not sign, because the receiver's sealed signing secret does not open
// with the keys it holds (a key rotation half done, or a damaged ciphertext), is recorded with the
// outcome `secret_unavailable`: it fails only that receiver's deliveries, which are retried and then
// dead-lettered like any other failure.
export class Migration20261201000000_secret_unavailable extends Migration {
  override up(): void {
    this.addSql(`alter table delivery_attempt drop constraint delivery_attempt_outcome_check`);
    this.addSql(`
      alter table delivery_attempt add constraint delivery_attempt_outcome_check
        check (outcome in ('success', 'http_error', 'timeout', 'connection_error', 'redirect', 'worker_lost', 'secret_unavailable'))`);
  }
}
