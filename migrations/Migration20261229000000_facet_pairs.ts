import { Migration } from '@mikro-orm/migrations';

// The facets of a list filtered by one facet value (`country=DE&facets=...`: the first step of every
// drill-down), or by several values of a single-valued facet (`language=de,fr`), from counts kept per
// pair of values (docs/architecture.md, "Facet pairs"). Counted from
// the matching records' rows, that request read 38,000 scattered rows at a million records and
// grouped them five ways: 126 ms on a quiet machine (bench/README.md, "Facets of one facet value").
// - `facet_filter`: every filter key a folded record held, numbered: facet_key(facet, value) of
//   migration facet_bitmaps (countries in lower case, as the filter compares them).
// - `facet_value`: every facet value a folded record held, numbered: its facet, its value as stored
//   (a facet lists values as stored) and its filter key's number.
// - `facet_folded`: per folded published record (list_entry.rn), the numbers of its values and of
//   their filter keys (each once), exactly as they were counted into facet_pair.
// - `facet_pair`: per filter key k1 and value k2, the folded published records holding both.
// - fold_search (migration facet_bitmaps) folds them with the bitmaps, in the same transaction, over
//   the same records: those marked in search_dirty. Writers never touch these tables.
// - facet_pair_counts(facet, values, facets, top): the counts of pairs, less what the marked records
//   were folded with, plus what they hold now. Every record whose values differ from what was folded
//   is marked (a writer's mark commits with its rows; the fold deletes only the marks it saw, and
//   records what it folded), so the counts are exact in any snapshot, folded or not. Null when more
//   than search_config.marked_max are marked (after a seed, until the fold's rebuild): the caller
//   then counts the matching rows.
const FOLD_LOCK = [20261223, 1];
const SHIFT = 13;
const BITS = 1 << SHIFT;
const CHUNK = (rn: string) => `${rn} >> ${SHIFT}`;
const BIT = (rn: string) => `${rn} & ${BITS - 1}`;
const ZERO = `repeat('0', ${BITS})::bit(${BITS})`;
const MIN = (key: string) => `case when left(${key}, 1) = chr(1) then min_f else min_n end`;
const FACET_KEY_ROWS = (col: (name: string) => string) => `
  select k from (
    select facet_key('format', ${col('format')}) union all
    select facet_key('language', ${col('language')}) union all
    select facet_key('provider', ${col('provider_name')}) union all
    select facet_key('topic', t) from unnest(${col('topics')}) t union all
    select distinct facet_key('country', c) from unnest(${col('countries')}) c) s(k)
   where k is not null`;
const KEYS_OF = (where: string) => `
  select e.rn, x.lexeme from list_entry e
    join learning_opportunity lo on lo.id = e.id
    cross join lateral (select unnest(tsvector_to_array(lo.search)) union all ${FACET_KEY_ROWS((c) => `e.${c}`)}) as x(lexeme)
   where e.status = 'PUBLISHED' and ${where}`;
// A list_entry row's facet values as rows (facet, value), as the facets of its list count them (each
// value of its arrays once: they hold each once).
const VALUE_ROWS = (e: string) => `
  select 'format', ${e}.format where ${e}.format is not null
  union all select 'language', ${e}.language where ${e}.language is not null
  union all select 'provider', ${e}.provider_name where ${e}.provider_name is not null
  union all select 'topic', t from unnest(${e}.topics) t
  union all select 'country', c from unnest(${e}.countries) c`;
// The pairs of the records `g` (a row set with `ids` and `filters`): each filter key of a record
// against each of its values.
const PAIRS_OF = (g: string) => `
  select f.id as k1, d.id as k2, count(*)::integer as n
    from ${g} g cross join unnest(g.filters) f(id) cross join unnest(g.ids) d(id)
   group by 1, 2`;
// The filter keys and values of the published records of list_entry `e` matching `where`, numbered
// (those not numbered yet).
const NUMBER = (where: string) => `
  insert into facet_filter (key)
  select distinct facet_key(r.facet, r.value)
    from list_entry e cross join lateral (${VALUE_ROWS('e')}) r(facet, value)
   where e.status = 'PUBLISHED' and ${where}
  on conflict (key) do nothing;
  insert into facet_value (facet, value, filter_id)
  select x.facet, x.value, (select f.id from facet_filter f where f.key = facet_key(x.facet, x.value))
    from (select distinct r.facet, r.value
            from list_entry e cross join lateral (${VALUE_ROWS('e')}) r(facet, value)
           where e.status = 'PUBLISHED' and ${where}) x
  on conflict (facet, value) do nothing;`;
// Those records' numbers now (rn, ids, filters). Each value is looked up by its key, one index probe:
// joined, the plan hashed the whole dictionary once per record (212 s at a million records, against 17 s).
const NUMBERED = (where: string) => `
  select e.rn, a.ids, a.filters
    from list_entry e
    cross join lateral (
      select array_agg((x.v).id) as ids, array_agg(distinct (x.v).filter_id) as filters
        from (select (select v from facet_value v where v.facet = r.facet and v.value = r.value) as v
                from (${VALUE_ROWS('e')}) r(facet, value) offset 0) x) a
   where e.status = 'PUBLISHED' and ${where}`;

// The facets (`facets`, top `top` values each, most frequent first, ties by value in code point
// order) of the published records holding any of `filter_values` of `filter_facet`: a JSON object
// of [value, n] arrays per facet, as a list's facets; null when too many records are marked. A
// record holds at most one value of a single-valued facet (format, language, provider), so the
// pairs of several of its values add up; those of a topic or a country (a record may hold two)
// would count such a record twice, so with more than one of them the answer is null.
// Exported for migration edited_migrations, which brings it to a database that ran an earlier text of this one.
export const FACET_PAIR_COUNTS_SQL = `
      create function facet_pair_counts(filter_facet text, filter_values text[], facets text[], top integer) returns jsonb
        language plpgsql stable as $$
      declare
        ks text[] := array(select distinct facet_key(filter_facet, v) from unnest(filter_values) v);
        kids integer[] := array(select f.id from facet_filter f where f.key = any(ks));
        most integer;
      begin
        if cardinality(ks) <> 1 and filter_facet not in ('format', 'language', 'provider') then return null; end if;
        select marked_max into most from search_config;
        if (select count(*) from (select from search_dirty limit most + 1) d) > most then return null; end if;
        return (
          with marked as (select distinct d.rn from search_dirty d),
          c as (
            select v.facet, v.value, p.n::bigint as n
              from facet_pair p join facet_value v on v.id = p.k2
             where p.k1 = any(kids) and p.n > 0 and v.facet = any(facets)
            union all
            select v.facet, v.value, -1
              from marked m join facet_folded f on f.rn = m.rn
              cross join unnest(f.ids) i(id) join facet_value v on v.id = i.id
             where v.facet = any(facets)
               and f.filters && kids
            union all
            select r.facet, r.value, 1
              from marked m join list_entry e on e.rn = m.rn
              cross join lateral (${VALUE_ROWS('e')}) r(facet, value)
             where e.status = 'PUBLISHED' and r.facet = any(facets)
               and facet_keys(e.format, e.language, e.provider_name, e.topics, e.countries) && ks),
          s as (select c.facet, c.value, sum(c.n) as n from c group by 1, 2 having sum(c.n) > 0),
          t as (select s.*, row_number() over (partition by s.facet order by s.n desc, s.value collate "C") as r from s)
          select jsonb_object_agg(x.facet, coalesce(y.a, '[]'))
            from unnest(facets) x(facet)
            left join (select t.facet, jsonb_agg(jsonb_build_array(t.value, t.n) order by t.n desc, t.value collate "C") as a
                         from t where t.r <= top group by t.facet) y on y.facet = x.facet);
      end $$`;

export class Migration20261229000000_facet_pairs extends Migration {
  override up(): void {
    this.addSql(
      `create table facet_filter (id integer generated always as identity primary key, key text collate "C" not null unique)`,
    );
    this.addSql(`
      create table facet_value (
        id integer generated always as identity primary key,
        facet text not null,
        value text collate "C" not null,
        filter_id integer not null,
        unique (facet, value))`);
    this.addSql(
      `create table facet_folded (rn integer primary key, ids integer[] not null, filters integer[] not null)`,
    );
    // Rows whose count falls to 0 stay (a read skips them); a rebuild clears them.
    this.addSql(`
      create table facet_pair (
        k1 integer not null,
        k2 integer not null,
        n integer not null,
        primary key (k1, k2))`);

    // The marked records `rns` folded again (null: every record, after the tables were emptied). A
    // record's pairs move by the difference between what it was folded with and what it holds now, so
    // a write that changed none of its values (most edits) changes no count.
    this.addSql(`
      create function fold_facet_pairs(rns integer[]) returns void language plpgsql as $$ begin
        if rns is null then
          -- Every record's pairs at once: about 36 per record, grouped in memory rather than on disk.
          perform set_config('work_mem', '256MB', true);
          ${NUMBER('true')}
          with folded as (insert into facet_folded (rn, ids, filters) ${NUMBERED('true')} returning ids, filters)
          insert into facet_pair (k1, k2, n) ${PAIRS_OF('folded')};
          return;
        end if;
        ${NUMBER('e.rn = any(rns)')}
        with old as (select f.ids, f.filters from facet_folded f where f.rn = any(rns)),
        now as materialized (${NUMBERED('e.rn = any(rns)')}),
        gone as (delete from facet_folded f where f.rn = any(rns) and f.rn not in (select rn from now)),
        kept as (
          insert into facet_folded as f (rn, ids, filters) select * from now
          on conflict (rn) do update set ids = excluded.ids, filters = excluded.filters
           where f.ids <> excluded.ids or f.filters <> excluded.filters),
        delta as (
          select d.k1, d.k2, sum(d.n)::integer as n
            from (select o.k1, o.k2, -o.n as n from (${PAIRS_OF('old')}) o
                  union all select w.k1, w.k2, w.n from (${PAIRS_OF('now')}) w) d
           group by 1, 2
          having sum(d.n) <> 0)
        insert into facet_pair as p (k1, k2, n) select * from delta
        on conflict (k1, k2) do update set n = p.n + excluded.n;
      end $$`);

    // fold_search as in migration facet_bitmaps, folding the facet pairs of the same records.
    this.addSql(`
      create or replace function fold_search(max_records integer) returns integer language plpgsql as $$
      declare
        zero constant bit(${BITS}) := ${ZERO};
        min_n integer;
        min_f integer;
        chunks integer[];
        rns integer[];
        lx text;
        marked bigint;
      begin
        if not pg_try_advisory_xact_lock(${FOLD_LOCK.join(', ')}) then return -1; end if;
        select min_records, facet_min_records into min_n, min_f from search_config;
        select count(*) into marked from search_dirty;
        if marked = 0 then return 0; end if;
        if marked >= greatest(1000, (select coalesce(sum(n), 0) from catalog_count) / 2) then
          delete from search_dirty;
          delete from search_bitmap;
          delete from search_lexeme;
          with l as materialized (${KEYS_OF('true')}),
          lex as (
            insert into search_lexeme (lexeme, n, frequent)
            select l.lexeme, count(*), count(*) >= ${MIN('l.lexeme')} from l group by l.lexeme
            returning lexeme, frequent)
          insert into search_bitmap (lexeme, chunk, bits)
          select l.lexeme, ${CHUNK('l.rn')}, bit_or(set_bit(zero, ${BIT('l.rn')}, 1))
            from l join lex on lex.lexeme = l.lexeme and lex.frequent
           group by 1, 2
           order by 1, 2;
          delete from facet_pair;
          delete from facet_folded;
          perform fold_facet_pairs(null);
          return marked;
        end if;
        select array_agg(x.chunk order by x.chunk) into chunks
          from (select d.chunk, sum(count(*)) over (order by d.chunk) - count(*) as before
                  from search_dirty d group by d.chunk) x
         where x.before < max_records;
        with d as (delete from search_dirty where chunk = any(chunks) returning rn)
        select array_agg(distinct d.rn) into rns from d;
        update search_bitmap b set bits = b.bits & ~m.mask
          from (select ${CHUNK('r')} as chunk, bit_or(set_bit(zero, ${BIT('r')}, 1)) as mask from unnest(rns) r group by 1) m
         where b.chunk = m.chunk and bit_count(b.bits & m.mask) > 0;
        with f as materialized (select * from search_keys(rns)),
        lex as (
          insert into search_lexeme as s (lexeme, n)
          select f.lexeme, count(*) from f group by f.lexeme
          on conflict (lexeme) do update set n = s.n + excluded.n
          returning s.lexeme, s.frequent)
        insert into search_bitmap as b (lexeme, chunk, bits)
        select f.lexeme, ${CHUNK('f.rn')}, bit_or(set_bit(zero, ${BIT('f.rn')}, 1))
          from f join lex on lex.lexeme = f.lexeme and lex.frequent
         group by 1, 2
        on conflict (lexeme, chunk) do update set bits = b.bits | excluded.bits;
        delete from search_bitmap where chunk = any(chunks) and bits = zero;
        for lx in select lexeme from search_lexeme where not frequent and n >= ${MIN('lexeme')} loop
          insert into search_bitmap (lexeme, chunk, bits)
          select lx, ${CHUNK('r')}, bit_or(set_bit(zero, ${BIT('r')}, 1)) from key_records(lx) r group by 2;
          update search_lexeme set frequent = true where lexeme = lx;
        end loop;
        perform fold_facet_pairs(rns);
        return cardinality(rns);
      end $$`);

    this.addSql(FACET_PAIR_COUNTS_SQL);

    // Every record marked: the next fold rebuilds the bitmaps and the pairs.
    this.addSql(`select mark_search_all()`);
  }
}
