import { Migration } from '@mikro-orm/migrations';

// The facet values beside the words in the search bitmaps (docs/architecture.md, "Search counts").
// The bitmaps of migration search_bitmaps counted a search alone; a filter on two facets
// (`format=ONLINE&language=de,fr`) or a search with one still counted its matches row by row
// (33 ms and more at a million records). Here a published record's format, language, provider,
// topics and countries are keys of the same dictionary and bitmaps, so a count of any AND of them
// (an OR over a facet's values) and of a search's words is, per chunk, the same AND of ORs:
// - `facet_key(facet, value)`: chr(1), the facet, '=' and the value (countries in lower case, as
//   the filter compares them). No lexeme holds a control character (the parser's words are letters
//   and digits), so a prefix's range of lexemes never meets a key.
// - `search_keys(rns)`: those records' lexemes and facet keys (published ones), what fold_search folds.
// - `key_records(key)`: the folded records holding a key that became frequent (its first bitmaps):
//   a lexeme's through the search index; a facet value's by one pass over list_entry.
// - search_plan, search_count, search_matches and search_marked take the facets and their values
//   beside the search (each null or empty when absent). A facet value held by folded records without
//   bitmaps (a rare one: most providers), or a rare word with a facet, leaves the count to the
//   caller (null), which reads the matches through its indexes as before.
const FOLD_LOCK = [20261223, 1];
const SHIFT = 13;
const BITS = 1 << SHIFT;
const CHUNK = (rn: string) => `${rn} >> ${SHIFT}`;
const BIT = (rn: string) => `${rn} & ${BITS - 1}`;
const ZERO = `repeat('0', ${BITS})::bit(${BITS})`;
const RARE_MAX = 20_000;
const QUOTED = (lexeme: string) => `'''' || replace(replace(${lexeme}, '\\', '\\\\'), '''', '''''') || ''''`;
const FACET_KEYS = (e: string) =>
  `facet_keys(${e}.format, ${e}.language, ${e}.provider_name, ${e}.topics, ${e}.countries)`;
const NOT_MARKED = (e: string) =>
  `not exists (select from search_dirty d where d.chunk = ${CHUNK(`${e}.rn`)} and d.rn = ${e}.rn)`;
// The records a key needs for bitmaps: min_records for a lexeme, facet_min_records for a facet value.
const MIN = (key: string) => `case when left(${key}, 1) = chr(1) then min_f else min_n end`;
// A record's facet keys as rows (`k`), from its list_entry columns (`col`: a row's, or facet_keys'
// arguments). Rows of a subquery rather than a call of facet_keys per record in the fold: the call
// (a function with a subquery is never inlined) took 28 µs a record, 56 s of a million's rebuild.
const FACET_KEY_ROWS = (col: (name: string) => string) => `
  select k from (
    select facet_key('format', ${col('format')}) union all
    select facet_key('language', ${col('language')}) union all
    select facet_key('provider', ${col('provider_name')}) union all
    select facet_key('topic', t) from unnest(${col('topics')}) t union all
    select distinct facet_key('country', c) from unnest(${col('countries')}) c) s(k)
   where k is not null`;
// The published records' lexemes and facet keys, of `where` rows of list_entry `e`.
const KEYS_OF = (where: string) => `
  select e.rn, x.lexeme from list_entry e
    join learning_opportunity lo on lo.id = e.id
    cross join lateral (select unnest(tsvector_to_array(lo.search)) union all ${FACET_KEY_ROWS((c) => `e.${c}`)}) as x(lexeme)
   where e.status = 'PUBLISHED' and ${where}`;

export class Migration20261224000000_facet_bitmaps extends Migration {
  override up(): void {
    // The records a facet value needs for bitmaps. Its bitmaps cost about catalog / 8,192 rows of 1 kB
    // whatever its records, where the indexes read its records: at a million records, values under
    // 10,000 (1 % of the catalog: most topics and providers) took half the bitmaps' storage (35 of
    // 71 MB) for lists that the indexes answer from few rows.
    this.addSql(`alter table search_config add column facet_min_records integer not null default 10000
                   check (facet_min_records >= 1)`);
    this.addSql(`
      create function facet_key(facet text, value text) returns text language sql immutable parallel safe as $$
        select chr(1) || facet || '=' || case when facet = 'country' then lower(value) else value end
      $$`);
    this.addSql(`
      create function facet_keys(format text, language text, provider_name text, topics text[], countries text[])
        returns text[] language sql immutable parallel safe as $$
        select array(${FACET_KEY_ROWS((c) => c)})
      $$`);
    this.addSql(`
      create function search_keys(rns integer[]) returns table (rn integer, lexeme text) language plpgsql stable as $$ begin
        return query ${KEYS_OF('e.rn = any(rns)')};
      end $$`);
    this.addSql(`
      create function key_records(key text) returns setof integer language plpgsql stable as $$ begin
        if left(key, 1) = chr(1) then
          return query select e.rn from list_entry e
            where e.status = 'PUBLISHED' and key = any(${FACET_KEYS('e')}) and ${NOT_MARKED('e')};
        else
          return query execute $q$
            select e.rn from learning_opportunity lo join list_entry e on e.id = lo.id
             where lo.search @@ $1::tsquery and e.status = 'PUBLISHED' and ${NOT_MARKED('e')}$q$
            using ${QUOTED('key')};
        end if;
      end $$`);

    // fold_search as in migration search_bitmaps, over the records' keys and key_records.
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
          -- Every record's keys read once, for the dictionary and the bitmaps (read twice, through
          -- a function, a million records' rebuild took 96 s; this, 69).
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
        return cardinality(rns);
      end $$`);

    this.addSql(`drop function search_count(tsquery)`);
    this.addSql(`drop function search_matches(tsquery)`);
    this.addSql(`drop function search_marked(tsquery)`);
    // What the dictionary says of a search `q` (or null) and facet values (facets[i] = fvalues[i]: one
    // term per facet, an OR of its values): every term's frequent keys (f_term, f_lexeme), the
    // search's frequent lexemes as one tsquery (freq_q) and its rare ones (rare_q, rare_n).
    // `terms` is null when the bitmaps cannot answer. The search's part is search_plan(q) of
    // migration search_bitmaps (kept), which also checks the records waiting for their fold.
    this.addSql(`
      create function search_plan(q tsquery, facets text[], fvalues text[], out terms integer, out f_term integer[],
                                  out f_lexeme text[], out freq_q text, out rare_q text, out rare_n numeric)
        language plpgsql stable as $$
      declare
        most integer;
        s record;
      begin
        if q is not null then
          select * into s from search_plan(q);
          if s.terms is null then return; end if;
          select s.terms, s.f_term, s.f_lexeme, s.freq_q, s.rare_q, s.rare_n
            into terms, f_term, f_lexeme, freq_q, rare_q, rare_n;
        else
          select marked_max into most from search_config;
          if (select count(*) from (select from search_dirty limit most + 1) d) > most then return; end if;
          terms := 0;
          rare_n := 0;
        end if;
        if coalesce(cardinality(facets), 0) = 0 then
          if terms = 0 then terms := null; end if;
          return;
        end if;
        -- The records matching through a rare word are found by the search index alone (search_rest);
        -- a facet value held by folded records without bitmaps, by the caller's count.
        if rare_q is not null
           or exists (select from unnest(facets, fvalues) t(f, v) join search_lexeme x on x.lexeme = facet_key(t.f, t.v)
                       where not x.frequent) then
          terms := null;
          return;
        end if;
        select coalesce(f_term, '{}') || coalesce(array_agg(k.i order by k.i, k.key), '{}'),
               coalesce(f_lexeme, '{}') || coalesce(array_agg(k.key order by k.i, k.key), '{}')
          into f_term, f_lexeme
          from (select terms + dense_rank() over (order by t.f) as i, facet_key(t.f, t.v) as key
                  from unnest(facets, fvalues) t(f, v)) k
          join search_lexeme x on x.lexeme = k.key;
        terms := terms + (select count(distinct f) from unnest(facets) f);
      end $$`);
    // The marked records matching: the search on their vector, every facet on their keys.
    this.addSql(`
      create function search_marked(q tsquery, facets text[], fvalues text[]) returns setof integer language sql stable as $$
        select e.rn
          from (select distinct rn from search_dirty) d
          join list_entry e on e.rn = d.rn
         where e.status = 'PUBLISHED'
           and (q is null or exists (select from learning_opportunity lo where lo.id = e.id and lo.search @@ q))
           and (select count(distinct t.f) from unnest(facets, fvalues) t(f, v)
                 where facet_key(t.f, t.v) = any(${FACET_KEYS('e')}))
             = (select count(distinct f) from unnest(facets) f)
      $$`);
    this.addSql(`
      create function search_count(q tsquery, facets text[] default '{}', fvalues text[] default '{}')
        returns bigint language plpgsql stable as $$
      declare
        p record;
      begin
        p := search_plan(q, facets, fvalues);
        if p.terms is null or p.rare_n > ${RARE_MAX} then return null; end if;
        return (select coalesce(sum(bit_count(c.bits)), 0) from search_chunks(p.terms, p.f_term, p.f_lexeme) c)
             + (select count(*) from search_rest(q, p.rare_q, p.freq_q))
             + (select count(*) from search_marked(q, facets, fvalues));
      end $$`);
    // The numbers of the matches; null as search_count.
    this.addSql(`
      create function search_matches(q tsquery, facets text[] default '{}', fvalues text[] default '{}')
        returns integer[] language plpgsql stable as $$
      declare
        p record;
      begin
        p := search_plan(q, facets, fvalues);
        if p.terms is null or p.rare_n > ${RARE_MAX} then return null; end if;
        return array(
          select (c.chunk << ${SHIFT}) + (sum(length(z.run) + 1) over (partition by c.chunk order by z.o))::integer - 1
            from search_chunks(p.terms, p.f_term, p.f_lexeme) c
            cross join lateral (select string_to_array(c.bits::text, '1') as runs offset 0) r
            cross join lateral unnest(r.runs) with ordinality as z(run, o)
           where z.o < cardinality(r.runs)
          union all select r from search_rest(q, p.rare_q, p.freq_q) r
          union all select m from search_marked(q, facets, fvalues) m);
      end $$`);
    // Every record marked: the next fold rebuilds the bitmaps with the facet keys.
    this.addSql(`select mark_search_all()`);
  }
}
