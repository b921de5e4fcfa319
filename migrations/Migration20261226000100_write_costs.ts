import { Migration } from '@mikro-orm/migrations';

// Two costs of every write that bought nothing (bench/README.md, "Where a write's PostgreSQL work
// goes now": the instructions of a 1,000-record batch counted by callgrind):
// - facet_count's triggers parsed each doc twice: the subquery reading its sessions was pulled up
//   into the query, so `doc::jsonb` ran once in the `jsonb_typeof` test and again in the CASE that
//   picks the array (669 M of the batch's 5,220 M instructions for the two). `offset 0` keeps the
//   subquery, so each doc is parsed once. The statements are migration count_deltas', unchanged
//   otherwise.
// - The docs and the event bodies (about 3.7 kB each) were compressed with pglz; lz4 takes a sixth of
//   its CPU (52 M against about 312 M for a batch's docs) for 1.6 % more bytes, and reads back faster.
//   Only where the server is built with lz4 (PostgreSQL 14 and later usually are; the embedded one
//   is not): elsewhere the columns keep the default. Values already stored keep their compression
//   until rewritten; both are read alike.
export class Migration20261226000100_write_costs extends Migration {
  override up(): void {
    const apply = (changes: string) => `
      with c as (${changes}),
      v as (
        select c.k, c.id, 'format' as facet, c.format as value from c
        union all select c.k, c.id, 'language', c.language from c where c.language is not null
        union all select c.k, c.id, 'provider', c.provider_name from c where c.provider_name is not null
        union all select c.k, c.id, 'topic', t from c, jsonb_array_elements_text(case when jsonb_typeof(c.topics) = 'array' then c.topics else '[]' end) t
        union all select s.k, s.id, f.facet, f.value
          from (select c.k, c.id, c.doc::jsonb->'sessions' as sessions from c offset 0) s,
               jsonb_array_elements(case when jsonb_typeof(s.sessions) = 'array' then s.sessions else '[]' end) e,
               lateral (values ('country', e->'location'->>'country'), ('city', e->'location'->>'city')) f(facet, value)
         where f.value is not null)
      insert into facet_count_delta (facet, value, n)
      select d.facet, d.value, sum(d.k)
        from (select distinct k, id, facet, value from v) d
       group by d.facet, d.value
      having sum(d.k) <> 0`;
    const rows = (table: string, k: number) =>
      `select ${k} as k, id, format, language, provider_name, topics, doc from ${table} where status = 'PUBLISHED'`;
    for (const [event, changes] of [
      ['insert', rows('new_rows', 1)],
      ['delete', rows('old_rows', -1)],
      ['update', `${rows('new_rows', 1)} union all ${rows('old_rows', -1)}`],
    ] as const)
      this.addSql(
        `create or replace function facet_count_after_${event}() returns trigger language plpgsql as $$ begin ${apply(changes)}; return null; end $$`,
      );
    this.addSql(`
      do $$ begin
        if exists (select from pg_settings where name = 'default_toast_compression' and 'lz4' = any(enumvals)) then
          alter table learning_opportunity alter column doc set compression lz4;
          alter table event alter column body set compression lz4;
        end if;
      end $$`);
  }
}
