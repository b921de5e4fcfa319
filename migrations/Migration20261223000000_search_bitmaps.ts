import { Migration } from '@mikro-orm/migrations';

// The exact count of a search without visiting every match (docs/architecture.md, "Search counts").
// A GIN index finds a search's matches but cannot count them: PostgreSQL reads each match's heap page
// to check its visibility, 56,000 pages for `q=machine learn` at 1,000,000 records (bench/README.md).
// Here the published records' words are also kept as bitmaps:
// - `list_entry.rn`: a dense number per record (a sequence; kept by an update, new on a re-insert),
//   split into chunks of 8,192 (`rn >> 13`) and a bit in the chunk (`rn & 8191`).
// - `search_bitmap`: per frequent lexeme and chunk, the bits of the published records whose search
//   vector holds it. A search's count over them is an AND over its words (an OR over a prefix's
//   lexemes) of about 120 strings of 1 kB per lexeme at a million records, and a bit_count.
// - `search_lexeme`: every lexeme of the folded records, with `n` (how often a fold saw it: an upper
//   bound of the records holding it) and whether it is frequent (has bitmaps). Rare lexemes
//   (n below search_config.min_records) have none: a search that meets them counts their few
//   records through the GIN index (search_count below).
// - `search_dirty`: the records written since their last fold, appended by triggers on list_entry in
//   the writing transaction (insert only, no key: writers never wait for each other here). A count
//   masks their bits out and counts them from their rows, so it is exact whatever was folded; a
//   reader's snapshot sees a writer's mark exactly when it sees the writer's rows.
// - `fold_search(max_records)`: folds the marks of whole chunks, up to about max_records, into the
//   bitmaps and the dictionary, and gives bitmaps to the lexemes that became frequent. The service
//   runs it every second (src/catalog/count-folder.ts), one process at a time (a try-lock). When at
//   least half the catalog is marked (a seed, this migration), it rebuilds everything in one pass.
const FOLD_LOCK = [20261223, 1]; // pg_try_advisory_xact_lock(int, int): its own key space
// Chunks of 8,192 records: a frequent lexeme has about 120 rows of 1 kB at a million records. With
// 1,024 (ten times the rows, 128 bytes each), a count spent most of its time on the rows themselves:
// 33 ms against 3 ms for `machin & learn:*` (bench/README.md, "Search counts").
const SHIFT = 13;
const BITS = 1 << SHIFT;
const CHUNK = (rn: string) => `${rn} >> ${SHIFT}`;
const BIT = (rn: string) => `${rn} & ${BITS - 1}`;
const ZERO = `repeat('0', ${BITS})::bit(${BITS})`;
// A search whose rare lexemes hold more records than this (a short prefix over a wide vocabulary)
// is left to the caller's count of its matches: the GIN index would read them all anyway.
const RARE_MAX = 20_000;
// A lexeme as tsquery text: quoted, its quotes and backslashes escaped.
const QUOTED = (lexeme: string) => `'''' || replace(replace(${lexeme}, '\\', '\\\\'), '''', '''''') || ''''`;
// The published records' lexemes (`rn`, `lexeme`), of `where` rows of list_entry `e`.
const LEXEMES = (where: string) => `
  select e.rn, x.lexeme from list_entry e
    join learning_opportunity lo on lo.id = e.id
    cross join lateral unnest(tsvector_to_array(lo.search)) as x(lexeme)
   where e.status = 'PUBLISHED' and ${where}`;

export class Migration20261223000000_search_bitmaps extends Migration {
  override up(): void {
    // Every record numbered (a volatile default: the table is rewritten once, each row its own number).
    this.addSql(`create sequence list_entry_rn as integer`);
    this.addSql(`alter table list_entry add column rn integer not null default nextval('list_entry_rn')`);
    this.addSql(`alter sequence list_entry_rn owned by list_entry.rn`);
    this.addSql(`create unique index list_entry_by_rn on list_entry (rn)`);

    // min_records: the records a lexeme needs for bitmaps. marked_max: the records written since
    // their fold that a read counts from their rows; with more marked (after a seed, until the fold's
    // rebuild), a search reads its matches through the index as before.
    this.addSql(`
      create table search_config (
        min_records integer not null check (min_records >= 1),
        marked_max integer not null check (marked_max >= 0))`);
    this.addSql(`insert into search_config (min_records, marked_max) values (1000, 20000)`);
    // "C": a prefix's lexemes are one range of the primary key (bytes in order, as tsquery's prefix compares them).
    this.addSql(`
      create table search_lexeme (
        lexeme text collate "C" primary key,
        n bigint not null,
        frequent boolean not null default false)`);
    this.addSql(`
      create table search_bitmap (
        lexeme text collate "C" not null,
        chunk integer not null,
        bits bit(${BITS}) not null,
        primary key (lexeme, chunk))
      with (fillfactor = 70)`);
    this.addSql(`create index search_bitmap_chunk on search_bitmap (chunk)`);
    this.addSql(`create table search_dirty (chunk integer not null, rn integer not null)`);
    this.addSql(`create index search_dirty_chunk on search_dirty (chunk, rn)`);

    for (const [event, rows] of [
      ['insert', 'new_rows'],
      ['update', 'new_rows'],
      ['delete', 'old_rows'],
    ] as const) {
      this.addSql(`
        create function search_dirty_after_${event}() returns trigger language plpgsql as $$ begin
          insert into search_dirty (chunk, rn) select ${CHUNK('rn')}, rn from ${rows};
          return null;
        end $$`);
      this.addSql(
        `create trigger search_dirty_${event} after ${event} on list_entry referencing ${event === 'delete' ? 'old' : 'new'} table as ${rows} for each statement execute function search_dirty_after_${event}()`,
      );
    }
    // Every record marked: the next fold rebuilds everything in one pass (here: the records present;
    // an operator, after changing search_config).
    this.addSql(`
      create function mark_search_all() returns void language sql as $$
        insert into search_dirty (chunk, rn) select ${CHUNK('rn')}, rn from list_entry
      $$`);
    this.addSql(`select mark_search_all()`);

    this.addSql(`
      create function fold_search(max_records integer) returns integer language plpgsql as $$
      declare
        zero constant bit(${BITS}) := ${ZERO};
        min_n integer;
        chunks integer[];
        rns integer[];
        lx text;
        marked bigint;
      begin
        if not pg_try_advisory_xact_lock(${FOLD_LOCK.join(', ')}) then return -1; end if;
        select min_records into min_n from search_config;
        select count(*) into marked from search_dirty;
        if marked = 0 then return 0; end if;
        if marked >= greatest(1000, (select coalesce(sum(n), 0) from catalog_count) / 2) then
          -- Everything again, in two passes over the catalog; each lexeme's rows written together.
          delete from search_dirty;
          delete from search_bitmap;
          delete from search_lexeme;
          insert into search_lexeme (lexeme, n, frequent)
          select l.lexeme, count(*), count(*) >= min_n from (${LEXEMES('true')}) l group by l.lexeme;
          insert into search_bitmap (lexeme, chunk, bits)
          select l.lexeme, ${CHUNK('l.rn')}, bit_or(set_bit(zero, ${BIT('l.rn')}, 1))
            from (${LEXEMES('true')}) l
           where l.lexeme in (select lexeme from search_lexeme where frequent)
           group by 1, 2
           order by 1, 2;
          return marked;
        end if;
        -- Whole chunks, in order, up to about max_records marks (at least one chunk).
        select array_agg(x.chunk order by x.chunk) into chunks
          from (select d.chunk, sum(count(*)) over (order by d.chunk) - count(*) as before
                  from search_dirty d group by d.chunk) x
         where x.before < max_records;
        with d as (delete from search_dirty where chunk = any(chunks) returning rn)
        select array_agg(distinct d.rn) into rns from d;
        -- The folded records' bits cleared in their chunks' rows, then set again from their vectors.
        update search_bitmap b set bits = b.bits & ~m.mask
          from (select ${CHUNK('r')} as chunk, bit_or(set_bit(zero, ${BIT('r')}, 1)) as mask from unnest(rns) r group by 1) m
         where b.chunk = m.chunk and bit_count(b.bits & m.mask) > 0;
        with f as materialized (${LEXEMES('e.rn = any(rns)')}),
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
        -- Lexemes that became frequent: their bitmaps from the index (about min_records records each);
        -- the marked records get theirs when folded.
        for lx in select lexeme from search_lexeme where not frequent and n >= min_n loop
          execute $q$
            insert into search_bitmap (lexeme, chunk, bits)
            select $1, ${CHUNK('e.rn')}, bit_or(set_bit($2, ${BIT('e.rn')}, 1))
              from learning_opportunity lo join list_entry e on e.id = lo.id
             where lo.search @@ $3::tsquery and e.status = 'PUBLISHED'
               and not exists (select from search_dirty d where d.chunk = ${CHUNK('e.rn')} and d.rn = e.rn)
             group by 2$q$ using lx, zero, ${QUOTED('lx')};
          update search_lexeme set frequent = true where lexeme = lx;
        end loop;
        return cardinality(rns);
      end $$`);

    // The reads. A search `q` is an AND of words and prefixes (what list-sql.ts builds); its published
    // matches are three disjoint parts:
    // - folded records holding a frequent lexeme of every term: the bitmaps (search_chunks), marked
    //   records masked out;
    // - folded records matching only through a rare lexeme: found by the GIN index from those lexemes
    //   (few records), those the bitmaps hold left out (search_rest);
    // - marked records: from their rows (search_marked).
    // search_count counts them, search_matches lists their numbers; both are null for any other
    // query, when its rare lexemes hold more than RARE_MAX records, or when more than
    // search_config.marked_max records wait for their fold (the caller reads the matches then).

    // What the dictionary says of `q`: its terms, each term's frequent lexemes (f_term, f_lexeme), the
    // frequent lexemes as one tsquery (null when a term has none) and the rare ones (null when none).
    this.addSql(`
      create function search_plan(q tsquery, out terms integer, out f_term integer[], out f_lexeme text[],
                                  out freq_q text, out rare_q text, out rare_n numeric) language plpgsql stable as $$
      declare
        words text[];
        prefix boolean[];
        most integer;
      begin
        select marked_max into most from search_config;
        if (select count(*) from (select from search_dirty limit most + 1) d) > most then return; end if;
        if q::text !~ '^''[^''\\\\]+''(:\\*)?( & ''[^''\\\\]+''(:\\*)?)*$' then return; end if;
        select array_agg(r.m[1] order by r.o), array_agg(r.m[2] is not null order by r.o) into words, prefix
          from regexp_matches(q::text, '''([^'']+)''(:\\*)?', 'g') with ordinality as r(m, o);
        terms := cardinality(words);
        -- Each term's lexemes: the word, or every lexeme it starts (a range of the "C" key: no
        -- lexeme holds U+10FFFF, the parser keeps letters and digits).
        with tl as (
          select t.i, d.lexeme, d.frequent, d.n
            from generate_subscripts(words, 1) as t(i)
            cross join lateral (
              select * from search_lexeme x where not prefix[t.i] and x.lexeme = words[t.i]
              union all
              select * from search_lexeme x where prefix[t.i] and x.lexeme >= words[t.i] and x.lexeme < words[t.i] || chr(1114111)) d
        ),
        per_term as (
          select i, string_agg(${QUOTED('lexeme')}, ' | ') filter (where frequent) as freq from tl group by i)
        select (select array_agg(i order by i, lexeme) from tl where frequent),
               (select array_agg(lexeme order by i, lexeme) from tl where frequent),
               case when (select count(*) from per_term where freq is not null) = terms
                    then (select string_agg('(' || freq || ')', ' & ') from per_term) end,
               (select string_agg(${QUOTED('lexeme')}, ' | ') from (select distinct lexeme from tl where not frequent) r),
               (select coalesce(sum(n), 0) from (select distinct lexeme, n from tl where not frequent) r)
          into f_term, f_lexeme, freq_q, rare_q, rare_n;
      end $$`);
    // Per chunk, the folded records holding a frequent lexeme of every term.
    this.addSql(`
      create function search_chunks(terms integer, f_term integer[], f_lexeme text[])
        returns table (chunk integer, bits bit(${BITS})) language sql stable as $$
        select x.chunk, case when dm.mask is null then x.bits else x.bits & ~dm.mask end
          from (select c.chunk, bit_and(c.bits) as bits
                  from (select tl.i, b.chunk, bit_or(b.bits) as bits
                          from unnest(f_term, f_lexeme) as tl(i, lexeme)
                          join search_bitmap b on b.lexeme = tl.lexeme
                         group by tl.i, b.chunk) c
                 group by c.chunk
                having count(*) = terms) x
          left join (select d.chunk, bit_or(set_bit(${ZERO}, ${BIT('d.rn')}, 1)) as mask
                       from search_dirty d group by d.chunk) dm on dm.chunk = x.chunk
      $$`);
    this.addSql(`
      create function search_rest(q tsquery, rare_q text, freq_q text) returns setof integer language plpgsql stable as $$ begin
        if rare_q is null then return; end if;
        return query execute
          'select e.rn from learning_opportunity lo join list_entry e on e.id = lo.id
            where lo.search @@ ($1 && $2::tsquery) and lo.status = ''PUBLISHED''
              and not exists (select from search_dirty d where d.chunk = ${CHUNK('e.rn')} and d.rn = e.rn)'
          || case when freq_q is null then '' else ' and not (lo.search @@ $3::tsquery)' end
          using q, rare_q, freq_q;
      end $$`);
    this.addSql(`
      create function search_marked(q tsquery) returns setof integer language sql stable as $$
        select e.rn
          from (select distinct rn from search_dirty) d
          join list_entry e on e.rn = d.rn
          join learning_opportunity lo on lo.id = e.id
         where e.status = 'PUBLISHED' and lo.search @@ q
      $$`);
    this.addSql(`
      create function search_count(q tsquery) returns bigint language plpgsql stable as $$
      declare
        p record;
      begin
        p := search_plan(q);
        if p.terms is null or p.rare_n > ${RARE_MAX} then return null; end if;
        return (select coalesce(sum(bit_count(c.bits)), 0) from search_chunks(p.terms, p.f_term, p.f_lexeme) c where p.freq_q is not null)
             + (select count(*) from search_rest(q, p.rare_q, p.freq_q))
             + (select count(*) from search_marked(q));
      end $$`);
    // The numbers of the set bits: '1' splits a chunk's bit string into the runs of zeros before each.
    this.addSql(`
      create function search_matches(q tsquery) returns integer[] language plpgsql stable as $$
      declare
        p record;
      begin
        p := search_plan(q);
        if p.terms is null or p.rare_n > ${RARE_MAX} then return null; end if;
        return array(
          select (c.chunk << ${SHIFT}) + (sum(length(z.run) + 1) over (partition by c.chunk order by z.o))::integer - 1
            from search_chunks(p.terms, p.f_term, p.f_lexeme) c
            cross join lateral (select string_to_array(c.bits::text, '1') as runs offset 0) r
            cross join lateral unnest(r.runs) with ordinality as z(run, o)
           where p.freq_q is not null and z.o < cardinality(r.runs)
          union all select r from search_rest(q, p.rare_q, p.freq_q) r
          union all select m from search_marked(q) m);
      end $$`);
  }
}
