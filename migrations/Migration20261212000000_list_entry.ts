import { Migration } from '@mikro-orm/migrations';

// A narrow row per record for the filtered lists (docs/contract.md, "Filters"; src/catalog/list-sql.ts): what
// their conditions, counts and facets read (status, updated_at, format, language, provider, topics,
// the sessions' countries, cities and starts), about 300 bytes instead of the catalog's 2.9 kB rows,
// so that a count or the facets over 40,000 matches visit a narrow heap (bench/README.md,
// "Filtered lists"). Kept by statement-level triggers on learning_opportunity in the writing
// statement's transaction (catalog/write-docs.ts, or any raw statement): its values come from the
// written rows and their docs (the sessions out of the doc, as facet_count reads them), so it never
// disagrees with the bytes served. The search vector stays on the catalog (migration list_query).
// The indexes the filters and the page order need move here from the catalog and sessions
// (migration list_query's; the catalog's writes pay for these instead).

const COLUMNS =
  'id, status, updated_at, format, language, provider_name, topics, countries, cities, starts, start_days';

export class Migration20261212000000_list_entry extends Migration {
  override up(): void {
    this.addSql(`
      create table list_entry (
        id uuid primary key,
        status text not null,
        updated_at timestamptz(3) not null,
        format text not null,
        language text,
        provider_name text,
        topics text[] not null,
        countries text[] not null,
        cities text[] not null,
        -- every session's start, ascending; and their days (UTC, days since 1970) for the GIN
        starts timestamptz(3)[] not null,
        start_days int[] not null
      )`);
    // Each written row's doc parsed once (`j`: `offset 0` keeps the planner from copying the parse into each use); the arrays sorted and distinct (starts keep every session).
    const upsert = (rows: string) => `
      insert into list_entry (${COLUMNS})
      select r.id, r.status, r.updated_at, r.format, r.language, r.provider_name,
             array(select distinct t from jsonb_array_elements_text(case when jsonb_typeof(r.topics) = 'array' then r.topics else '[]' end) t order by 1),
             array(select distinct x.e->'location'->>'country' from jsonb_array_elements(j.sessions) x(e) where x.e->'location'->>'country' is not null order by 1),
             array(select distinct x.e->'location'->>'city' from jsonb_array_elements(j.sessions) x(e) where x.e->'location'->>'city' is not null order by 1),
             array(select (x.e->>'startsAt')::timestamptz(3) from jsonb_array_elements(j.sessions) x(e) order by 1),
             array(select distinct floor(extract(epoch from (x.e->>'startsAt')::timestamptz(3)) / 86400)::int from jsonb_array_elements(j.sessions) x(e) order by 1)
        from ${rows} r
        cross join lateral (select case when jsonb_typeof(k.d) = 'array' then k.d else '[]' end as sessions
                              from (select r.doc::jsonb->'sessions' as d offset 0) k offset 0) j
       order by r.id
      on conflict (id) do update set ${COLUMNS.split(', ')
        .filter((c) => c !== 'id')
        .map((c) => `${c} = excluded.${c}`)
        .join(', ')}`;
    this.addSql(
      `create function list_entry_after_write() returns trigger language plpgsql as $$ begin ${upsert('new_rows')}; return null; end $$`,
    );
    this.addSql(
      `create function list_entry_after_delete() returns trigger language plpgsql as $$ begin delete from list_entry where id in (select id from old_rows); return null; end $$`,
    );
    this.addSql(
      `create trigger list_entry_insert after insert on learning_opportunity referencing new table as new_rows for each statement execute function list_entry_after_write()`,
    );
    this.addSql(
      `create trigger list_entry_update after update on learning_opportunity referencing new table as new_rows for each statement execute function list_entry_after_write()`,
    );
    this.addSql(
      `create trigger list_entry_delete after delete on learning_opportunity referencing old table as old_rows for each statement execute function list_entry_after_delete()`,
    );
    // The records present, from their columns and session rows (the values the docs hold, without
    // parsing every doc): one pass over each table, under the triggers' lock on the catalog.
    this.addSql(`
      insert into list_entry (${COLUMNS})
      select lo.id, lo.status, lo.updated_at, lo.format, lo.language, lo.provider_name,
             array(select distinct t from jsonb_array_elements_text(lo.topics) t order by 1),
             coalesce(s.countries, '{}'), coalesce(s.cities, '{}'), coalesce(s.starts, '{}'), coalesce(s.start_days, '{}')
        from learning_opportunity lo
        left join (
          select learning_opportunity_id,
                 array_agg(distinct country order by country) filter (where country is not null) as countries,
                 array_agg(distinct city order by city) filter (where city is not null) as cities,
                 array_agg(starts_at order by starts_at) as starts,
                 array_agg(distinct floor(extract(epoch from starts_at) / 86400)::int order by floor(extract(epoch from starts_at) / 86400)::int) as start_days
            from lo_session group by learning_opportunity_id) s on s.learning_opportunity_id = lo.id`);
    // The list order, and each equality filter in that order; the multi-valued ones by GIN.
    this.addSql(`create index list_entry_order on list_entry (status, updated_at desc, id desc)`);
    this.addSql(`create index list_entry_format on list_entry (status, format, updated_at desc, id desc)`);
    this.addSql(`create index list_entry_language on list_entry (status, language, format, updated_at desc, id desc)`);
    this.addSql(`create index list_entry_provider on list_entry (status, provider_name, updated_at desc, id desc)`);
    for (const column of ['topics', 'countries', 'cities', 'start_days'])
      this.addSql(`create index list_entry_${column} on list_entry using gin (${column})`);
    // The filters no longer read these (the search index and the sessions' start indexes stay).
    for (const index of [
      'learning_opportunity_topics',
      'learning_opportunity_by_format',
      'learning_opportunity_by_language',
      'learning_opportunity_by_provider_name',
      'learning_opportunity_published_id',
      'lo_session_country',
      'lo_session_city',
    ])
      this.addSql(`drop index ${index}`);
    this.addSql(`analyze list_entry`);
  }
}
