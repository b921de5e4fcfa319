import { Migration } from '@mikro-orm/migrations';

// The API key cache of every API process (src/auth/key-cache.ts) is dropped on any change to
// api_key: a revocation (or a change of scopes or rate limit, by the CLI or by hand in SQL) reaches
// every process when it commits. One notification per statement, whatever it touched; a new key
// needs none (unknown keys are never cached).
export class Migration20261129000000_api_key_notify extends Migration {
  override up(): void {
    this.addSql(`
      create function api_key_changed_notify() returns trigger language plpgsql as $$
      begin
        perform pg_notify('lods_api_key_changed', '');
        return null;
      end $$`);
    this.addSql(
      `create trigger api_key_changed after update or delete or truncate on api_key for each statement execute function api_key_changed_notify()`,
    );
  }
}
