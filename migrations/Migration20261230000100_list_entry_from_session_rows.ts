import { Migration } from '@mikro-orm/migrations';

// list_entry's places and starts come from the written record's session rows instead of its doc.
// The trigger used to parse each written doc again for its sessions (detoasting and decompressing
// it first: the doc is stored compressed, out of line); the session rows hold the same values, written
// from the same doc by the same statement (write-docs.ts: a statement's AFTER triggers see what its
// other parts inserted), and lo_session's generated `country` and `city` are the location's. A
// record's rows are one index range, (learning_opportunity_id, item_id). 5 to 12 % of a seed batch's
// PostgreSQL CPU at 100,000 records (bench/README.md, "Nested rows' indexes").
// Sequential scans are off in the function, as in list_session's: it is planned once per session (it
// has no parameters), maybe while lo_session is nearly empty, and a scan of it per written record
// would be kept as the catalog grows. A guard: test/catalog/trigger-plans.test.ts, which plans it on
// an empty catalog and then writes thousands, saw PostgreSQL choose the index range without it too.
const COLUMNS =
  'id, status, updated_at, format, language, provider_name, topics, countries, cities, starts, start_days';

export class Migration20261230000100_list_entry_from_session_rows extends Migration {
  override up(): void {
    this.addSql(`
      create or replace function list_entry_after_write() returns trigger language plpgsql set enable_seqscan = off as $$ begin
      insert into list_entry (${COLUMNS})
      select r.id, r.status, r.updated_at, r.format, r.language, r.provider_name,
             array(select distinct t from jsonb_array_elements_text(case when jsonb_typeof(r.topics) = 'array' then r.topics else '[]' end) t order by 1),
             coalesce(s.countries, '{}'), coalesce(s.cities, '{}'), coalesce(s.starts, '{}'), coalesce(s.start_days, '{}')
        from new_rows r
        cross join lateral (
          select array_agg(distinct x.country order by x.country) filter (where x.country is not null) as countries,
                 array_agg(distinct x.city order by x.city) filter (where x.city is not null) as cities,
                 array_agg(x.starts_at order by x.starts_at) as starts,
                 array_agg(distinct d.day order by d.day) as start_days
            from lo_session x cross join lateral (select floor(extract(epoch from x.starts_at) / 86400)::int as day) d
           where x.learning_opportunity_id = r.id) s
       order by r.id
      on conflict (id) do update set ${COLUMNS.split(', ')
        .filter((c) => c !== 'id')
        .map((c) => `${c} = excluded.${c}`)
        .join(', ')};
      return null; end $$`);
  }
}
