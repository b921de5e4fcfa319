import { Migration } from '@mikro-orm/migrations';

// The list filters `country` and `city` ignore case (src/catalog/list-sql.ts): countries and cities
// are free text in the record (a session's location), stored as the content platform sent them, so
// `city=berlin` finds `Berlin` by comparing both sides in lower case, not by rewriting the value.
// - `lower_each(text[])`: an array's elements, each in lower case (PostgreSQL's lower(), the
//   database's own case rules, on both sides of every comparison, and on facet_count's values).
//   Immutable, so an index can hold it. A PL/pgSQL loop: 1-2 µs a call where `array(select lower(v)
//   from unnest(vals) v)` as a SQL function took 6-7 µs (it runs for each row a filter or a recheck
//   reads), and `lower(vals::text)::text[]` lowers an array literal, not each value.
// - GIN indexes of list_entry's countries and cities in lower case: `lower_each(countries) &&
//   lower_each($1)` is read from them as `countries && $1` was from migration list_entry's. Those
//   stay: processes of the previous version go on reading them during an upgrade.
// - facet_count's country and city values by (facet, lower(value)), for the exact total of one value
//   alone (catalog/list-counts.ts): the maintained counts of every stored spelling of that value.
export class Migration20261218000000_places_any_case extends Migration {
  override up(): void {
    this.addSql(`
      create function lower_each(vals text[]) returns text[] language plpgsql immutable strict parallel safe as $$
      declare
        lowered text[] := '{}';
        v text;
      begin
        foreach v in array vals loop
          lowered := lowered || lower(v);
        end loop;
        return lowered;
      end $$`);
    for (const column of ['countries', 'cities'])
      this.addSql(`create index list_entry_${column}_lower on list_entry using gin (lower_each(${column}))`);
    this.addSql(
      `create index facet_count_place_lower on facet_count (facet, lower(value)) where facet in ('country', 'city')`,
    );
    this.addSql(`analyze list_entry`);
    this.addSql(`analyze facet_count`);
  }
}
