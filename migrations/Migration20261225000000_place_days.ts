import { Migration } from '@mikro-orm/migrations';

// A country with a session start window (`country=DE&startsFrom=...&startsBefore=...`, "courses in
// Germany next month") found from one index (src/catalog/list-sql.ts). The two GINs it intersected
// took most of the statement at a million records (list_entry's start days: 122,359 entries for a
// 30-day window; its countries: 37,372 for `de`; 4,708 rows left), where one GIN of the pairs finds
// those rows alone.
// - `place_days(countries, start_days)`: a record's countries (lower case, as the filter compares
//   them), each with each of its start days (days since 1970, UTC), as keys `country|day`. A record
//   holds a key of the filter's countries and the window's days exactly when one of its countries
//   is asked and one of its sessions starts on one of those days (the country and the start need
//   not be the same session's, as the filter says); the window's bounds within its first and last
//   day are checked on the row's starts. Immutable, so an index holds it; a PL/pgSQL loop, as
//   lower_each (migration places_any_case) is.
// - Its GIN on list_entry, nothing stored in the rows: a write pays for its keys (a record's
//   countries times its start days: 2.9 on average on the generated catalog, at most 36).
export class Migration20261225000000_place_days extends Migration {
  override up(): void {
    this.addSql(`
      create function place_days(countries text[], start_days int[]) returns text[] language plpgsql immutable strict parallel safe as $$
      declare
        keys text[] := '{}';
        c text;
        d int;
      begin
        foreach c in array countries loop
          foreach d in array start_days loop
            keys := keys || (lower(c) || '|' || d);
          end loop;
        end loop;
        return keys;
      end $$`);
    this.addSql(`create index list_entry_place_days on list_entry using gin (place_days(countries, start_days))`);
    this.addSql(`analyze list_entry`);
  }
}
