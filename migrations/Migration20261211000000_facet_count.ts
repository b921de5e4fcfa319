import { Migration } from '@mikro-orm/migrations';

// Published records per facet value (docs/contract.md, "Filters"; src/catalog/list-query.ts), so that the exact
// totalCount of a one-value filter (format=HYBRID, country=DE, ...) and the facets of the unfiltered
// catalog are primary-key reads instead of a count over every match (bench/README.md, bench:query).
// Maintained like catalog_count: statement-level triggers in the writing transaction, one per write
// statement however many records it holds (catalog/write-docs.ts, the one write path). A record's
// values come from its own row: the columns, and the sessions' countries and cities from its doc
// (the nested rows are read out of the same doc, and a lifecycle write or a delete has no session
// rows to read from when its trigger runs). A record counts once per distinct value.

// +1 per value of each published row the statement added, -1 per value of each it removed (a record
// once per distinct value), set-based over the statement's rows (each doc parsed once: that parse is
// most of the trigger's cost); one upsert in (facet, value) order, so that concurrent writers take
// the rows' locks in one order.
const apply = (changes: string) => `
  with c as (${changes}),
  v as (
    select c.k, c.id, 'format' as facet, c.format as value from c
    union all select c.k, c.id, 'language', c.language from c where c.language is not null
    union all select c.k, c.id, 'provider', c.provider_name from c where c.provider_name is not null
    union all select c.k, c.id, 'topic', t from c, jsonb_array_elements_text(case when jsonb_typeof(c.topics) = 'array' then c.topics else '[]' end) t
    union all select s.k, s.id, f.facet, f.value
      from (select c.k, c.id, c.doc::jsonb->'sessions' as sessions from c) s,
           jsonb_array_elements(case when jsonb_typeof(s.sessions) = 'array' then s.sessions else '[]' end) e,
           lateral (values ('country', e->'location'->>'country'), ('city', e->'location'->>'city')) f(facet, value)
     where f.value is not null)
  insert into facet_count (facet, value, n)
  select d.facet, d.value, sum(d.k)
    from (select distinct k, id, facet, value from v) d
   group by d.facet, d.value
  having sum(d.k) <> 0
   order by d.facet, d.value
  on conflict (facet, value) do update set n = facet_count.n + excluded.n`;
const rows = (table: string, k: number) =>
  `select ${k} as k, id, format, language, provider_name, topics, doc from ${table} where status = 'PUBLISHED'`;

export class Migration20261211000000_facet_count extends Migration {
  override up(): void {
    this.addSql(
      `create table facet_count (facet text not null, value text not null, n bigint not null, primary key (facet, value))`,
    );
    this.addSql(
      `create function facet_count_after_insert() returns trigger language plpgsql as $$ begin ${apply(rows('new_rows', 1))}; return null; end $$`,
    );
    this.addSql(
      `create function facet_count_after_delete() returns trigger language plpgsql as $$ begin ${apply(rows('old_rows', -1))}; return null; end $$`,
    );
    this.addSql(
      `create function facet_count_after_update() returns trigger language plpgsql as $$ begin ${apply(`${rows('new_rows', 1)} union all ${rows('old_rows', -1)}`)}; return null; end $$`,
    );
    this.addSql(
      `create trigger facet_count_insert after insert on learning_opportunity referencing new table as new_rows for each statement execute function facet_count_after_insert()`,
    );
    this.addSql(
      `create trigger facet_count_delete after delete on learning_opportunity referencing old table as old_rows for each statement execute function facet_count_after_delete()`,
    );
    this.addSql(
      `create trigger facet_count_update after update on learning_opportunity referencing old table as old_rows new table as new_rows for each statement execute function facet_count_after_update()`,
    );
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
