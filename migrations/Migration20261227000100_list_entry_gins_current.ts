import { Migration } from '@mikro-orm/migrations';

// list_entry's GINs answer from their tree alone (src/catalog/list-windows.ts, list-sql.ts).
// - No pending list (`fastupdate = off`): with it, PostgreSQL appends a write's keys to a list that
//   every search of the index reads whole and matches against each of its keys, until a vacuum or
//   4 MB of entries moves them into the tree. A catalog written since its last vacuum held all its
//   records there: at 40,000 seeded records, `country=DE,FR` with a year's start window (734 keys of
//   place_days) took 946 ms, 20 ms without the list; a 30-day window beside a country 55 against 4 ms
//   (bench/README.md, "GIN pending lists"). A record holds a few keys in each of these indexes (its
//   topics, countries, cities, start days, countries times start days), so writing them into the tree
//   at once costs a write little (seed of 20,000 records: 10.3 and 12.8 s with the list, 9.1 and 12.6
//   without). The search vector's GIN keeps its list: a record holds about 50 lexemes there, and
//   searches are counted from the search bitmaps (migration search_bitmaps).
// - The GINs of the countries and cities as stored are dropped: no filter has read them since every
//   place filter compares in lower case (migration places_any_case), and every write kept them.
const GINS = ['topics', 'countries_lower', 'cities_lower', 'start_days', 'place_days'].map((n) => `list_entry_${n}`);

export class Migration20261227000100_list_entry_gins_current extends Migration {
  override up(): void {
    this.addSql(`drop index if exists list_entry_countries`);
    this.addSql(`drop index if exists list_entry_cities`);
    for (const index of GINS) {
      this.addSql(`alter index ${index} set (fastupdate = off)`);
      this.addSql(`select gin_clean_pending_list('${index}'::regclass)`);
    }
  }
}
