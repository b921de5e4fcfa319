import { Migration } from '@mikro-orm/migrations';

// Published records per facet value (CONTRACT.md 13, src/catalog/list-query.ts), so that the exact
// totalCount of a one-value filter (format=HYBRID, country=DE, ...) and the facets of the unfiltered
// catalog are primary-key reads instead of a count over every match (bench/README.md, bench:query).
// Maintained like catalog_count: statement-level triggers in the writing transaction, one per write
// statement however many records it holds (catalog/write-docs.ts, the one write path). A record's
// values come from its own row: the columns, and the sessions' countries and cities from its doc
// (the nested rows are read out of the same doc, and a lifecycle write or a delete has no session
// rows to read from when its trigger runs). A record counts once per distinct value.
const VALUES = `
  create function lo_facet_values(format text, language text, provider text, topics jsonb, doc text)
  returns table (facet text, value text) language sql immutable as $$
    select 'format', format where format is not null
    union all select 'language', language where language is not null
    union all select 'provider', provider where provider is not null
    union all select distinct 'topic', t from jsonb_array_elements_text(case when jsonb_typeof(topics) = 'array' then topics else '[]' end) t
    union all select distinct 'country', x.c from (
      select s->'location'->>'country' as c from jsonb_array_elements(case when jsonb_typeof(doc::jsonb->'sessions') = 'array' then doc::jsonb->'sessions' else '[]' end) s) x
      where x.c is not null
    union all select distinct 'city', x.c from (
      select s->'location'->>'city' as c from jsonb_array_elements(case when jsonb_typeof(doc::jsonb->'sessions') = 'array' then doc::jsonb->'sessions' else '[]' end) s) x
      where x.c is not null
  $$`;

// +1 per value of each published row the statement added, -1 per value of each it removed; one
// upsert in (facet, value) order, so that concurrent writers take the rows' locks in one order.
const apply = (changes: string) => `
  insert into facet_count (facet, value, n)
  select v.facet, v.value, sum(c.k)
    from (${changes}) c cross join lateral lo_facet_values(c.format, c.language, c.provider_name, c.topics, c.doc) v
   group by v.facet, v.value
  having sum(c.k) <> 0
   order by v.facet, v.value
  on conflict (facet, value) do update set n = facet_count.n + excluded.n`;
const rows = (table: string, k: number) => `select ${k} as k, format, language, provider_name, topics, doc from ${table} where status = 'PUBLISHED'`;

export class Migration20261211000000_facet_count extends Migration {
  override up(): void {
    this.addSql(`create table facet_count (facet text not null, value text not null, n bigint not null, primary key (facet, value))`);
    this.addSql(VALUES);
    this.addSql(`create function facet_count_after_insert() returns trigger language plpgsql as $$ begin ${apply(rows('new_rows', 1))}; return null; end $$`);
    this.addSql(`create function facet_count_after_delete() returns trigger language plpgsql as $$ begin ${apply(rows('old_rows', -1))}; return null; end $$`);
    this.addSql(`create function facet_count_after_update() returns trigger language plpgsql as $$ begin ${apply(`${rows('new_rows', 1)} union all ${rows('old_rows', -1)}`)}; return null; end $$`);
    this.addSql(`create trigger facet_count_insert after insert on learning_opportunity referencing new table as new_rows for each statement execute function facet_count_after_insert()`);
    this.addSql(`create trigger facet_count_delete after delete on learning_opportunity referencing old table as old_rows for each statement execute function facet_count_after_delete()`);
    this.addSql(`create trigger facet_count_update after update on learning_opportunity referencing old table as old_rows new table as new_rows for each statement execute function facet_count_after_update()`);
    // The records present: columns from the table, countries and cities from the sessions' rows
    // (the same values as the docs', without parsing a million docs).
    this.addSql(`
      insert into facet_count (facet, value, n)
      select 'format', format, count(*) from learning_opportunity where status = 'PUBLISHED' group by format
      union all select 'language', language, count(*) from learning_opportunity where status = 'PUBLISHED' and language is not null group by language
      union all select 'provider', provider_name, count(*) from learning_opportunity where status = 'PUBLISHED' and provider_name is not null group by provider_name
      union all select 'topic', t.value, count(*) from learning_opportunity lo cross join lateral (select distinct value from jsonb_array_elements_text(lo.topics)) t
                 where lo.status = 'PUBLISHED' group by t.value
      union all select 'country', s.country, count(distinct s.learning_opportunity_id) from lo_session s join learning_opportunity lo on lo.id = s.learning_opportunity_id
                 where lo.status = 'PUBLISHED' and s.country is not null group by s.country
      union all select 'city', s.city, count(distinct s.learning_opportunity_id) from lo_session s join learning_opportunity lo on lo.id = s.learning_opportunity_id
                 where lo.status = 'PUBLISHED' and s.city is not null group by s.city`);
  }
}
