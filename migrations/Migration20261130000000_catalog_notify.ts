import { Migration } from '@mikro-orm/migrations';

// The record version cache of every API process (src/catalog/version-cache.ts) drops the records a
// statement changed or removed when that statement commits: the notification names their ids, or
// none (drop everything) when there are more than fit comfortably in a payload or for a TRUNCATE.
// Whatever wrote (the mutations, seed, `catalog rerender`, SQL by hand). A new record needs no
// notification (unknown ids are never cached), and a statement that touched no row sends none.
export class Migration20261130000000_catalog_notify extends Migration {
  override up(): void {
    this.addSql(`
      create function learning_opportunity_changed_notify() returns trigger language plpgsql as $$
      declare
        n int;
        ids text;
      begin
        if tg_op = 'TRUNCATE' then
          perform pg_notify('lods_catalog_changed', '');
          return null;
        end if;
        select count(*), string_agg(id::text, ',') into n, ids from (select id from changed limit 101) c;
        if n > 0 then
          perform pg_notify('lods_catalog_changed', case when n > 100 then '' else ids end);
        end if;
        return null;
      end $$`);
    // Transition tables need one trigger per event.
    this.addSql(`create trigger learning_opportunity_updated_notify after update on learning_opportunity
                   referencing new table as changed for each statement execute function learning_opportunity_changed_notify()`);
    this.addSql(`create trigger learning_opportunity_deleted_notify after delete on learning_opportunity
                   referencing old table as changed for each statement execute function learning_opportunity_changed_notify()`);
    this.addSql(`create trigger learning_opportunity_truncated_notify after truncate on learning_opportunity
                   for each statement execute function learning_opportunity_changed_notify()`);
  }
}
