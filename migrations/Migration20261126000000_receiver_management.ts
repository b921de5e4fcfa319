import { Migration } from '@mikro-orm/migrations';

// Receiver management (issue 10): signing secrets sealed at rest, the receiver's delivery health,
// and why and when it was disabled.
//
// A migration holds no key, so it cannot encrypt: it adds the sealed columns, and the service's start
// (and `migrate`) seals every secret still in the plain `secret` column with the configured key and
// clears it before serving (webhooks/seal-secrets.ts). `secret` stays only for that hand-over.
export class Migration20261126000000_receiver_management extends Migration {
  override up(): void {
    this.addSql(`
      alter table receiver
        -- AES-256-GCM: 12-byte IV, ciphertext, 16-byte tag; the receiver id is the associated data
        add column secret_ciphertext bytea,
        -- first 8 hex digits of the SHA-256 of the key that sealed it
        add column secret_key_id text,
        -- 'manual' (an operator), 'failing' (WEBHOOK_DISABLE_AFTER_HOURS of failures), 'gone' (410)
        add column disabled_reason text,
        add column disabled_at timestamptz(3),
        -- the first failed attempt since the last success (or enable); null while healthy
        add column failing_since timestamptz(3),
        add column last_success_at timestamptz(3),
        add column last_failure_at timestamptz(3)`);
    this.addSql(`
      update receiver r
         set disabled_reason = case when r.enabled then null else 'manual' end,
             disabled_at = case when r.enabled then null else now() end,
             last_success_at = (select max(started_at) from delivery_attempt a where a.receiver_id = r.id and a.outcome = 'success'),
             last_failure_at = (select max(started_at) from delivery_attempt a where a.receiver_id = r.id and a.outcome <> 'success')`);
    this.addSql(`
      alter table receiver
        add constraint receiver_sealed_secret check ((secret_ciphertext is null) = (secret_key_id is null)),
        add constraint receiver_disabled_reason check (disabled_reason in ('manual', 'failing', 'gone')),
        add constraint receiver_disabled_has_reason check (enabled = (disabled_reason is null))`);
  }
}
