import { Migration } from '@mikro-orm/migrations';

// Standard Webhooks (issue 21, docs/contract.md, "Standard Webhooks"): each receiver has a signature scheme,
// 'service_v1' (docs/contract.md, "Delivery headers and signature"; the default: every existing receiver keeps it) or
// 'standard_webhooks'; and, while a rotation's grace runs, its previous signing secret, sealed like
// the current one (AES-256-GCM, see webhooks/secret-box.ts) until previous_secret_expires_at, when it
// is erased (retention job; the worker never signs with an expired one).
export class Migration20261210000000_signature_scheme extends Migration {
  override up(): void {
    this.addSql(`
      alter table receiver
        add column signature_scheme text not null default 'service_v1',
        add column previous_secret_ciphertext bytea,
        add column previous_secret_key_id text,
        add column previous_secret_expires_at timestamptz(3),
        add constraint receiver_signature_scheme check (signature_scheme in ('service_v1', 'standard_webhooks')),
        add constraint receiver_previous_secret check (
          (previous_secret_ciphertext is null) = (previous_secret_key_id is null)
          and (previous_secret_ciphertext is null) = (previous_secret_expires_at is null))`);
  }
}
