import { Migration } from '@mikro-orm/migrations';

// Writers no longer queue on shared count rows (docs/architecture.md, "Maintained counts"). The
// maintained counts (catalog_count per status, facet_count per facet value, list_bucket per key
// range) were updated in place by every write statement's triggers, and a row updated stays locked
// until the writing transaction commits: every update moves its record to the newest list_bucket
// range, every publish adds to its format's facet_count row, so concurrent writers waited for each
// other's whole transactions (events and jobs included) one by one (bench/README.md, "Single
// mutations"). Now:
// - The triggers append their changes to `*_delta` tables (insert only, no key: no two writers ever
//   touch one row). The counted rows keep their tables, renamed `*_base`.
// - Readers read views under the old names: base plus pending deltas, summed. A reader's snapshot sees
//   a writer's delta exactly when it sees the writer's rows, so every count stays exact. Processes
//   of the previous version read the same names during an upgrade.
// - `fold_counts()` moves the committed deltas into the base rows (one transaction: readers see the
//   sum unchanged) and then rebalances list_bucket's ranges (waiting at most 200 ms for the writers in
//   flight to commit, or not at all). The service runs it every second
//   (src/catalog/count-folder.ts), one process at a time (a try-lock: a busy folder is skipped,
//   never waited for); seed runs it at its end. Pending deltas are then a second's writes.
// - list_bucket's range bounds are read by writers to place their deltas: writers keep a row
//   exclusive lock on list_bucket_base, and the rebalance takes an exclusive one, under which every
//   delta is committed; it folds them into the ranges they were placed in before moving a bound.
//   Writers no longer rebalance themselves (one of them used to hold the table for all others).
const FOLD_LOCK = [20261222, 200]; // pg_try_advisory_xact_lock(int, int): its own key space

export class Migration20261222000200_count_deltas extends Migration {
  override up(): void {
    // catalog_count
    this.addSql(`alter table catalog_count rename to catalog_count_base`);
    this.addSql(`create table catalog_count_delta (status text not null, n bigint not null)`);
    this.addSql(`
      create view catalog_count as
        select status, sum(n)::bigint as n
          from (select status, n from catalog_count_base union all select status, n from catalog_count_delta) c
         group by status`);
    this.addSql(`
      create or replace function catalog_count_apply(deltas jsonb) returns void language plpgsql as $$ begin
        insert into catalog_count_delta (status, n)
        select key, value::bigint from jsonb_each_text(deltas) where value::bigint <> 0;
      end $$`);

    // facet_count: the triggers' statement (migration facet_count), appending instead of upserting.
    this.addSql(`alter table facet_count rename to facet_count_base`);
    this.addSql(`alter index facet_count_place_lower rename to facet_count_base_place_lower`);
    this.addSql(`create table facet_count_delta (facet text not null, value text not null, n bigint not null)`);
    this.addSql(`
      create view facet_count as
        select facet, value, sum(n)::bigint as n
          from (select facet, value, n from facet_count_base union all select facet, value, n from facet_count_delta) c
         group by facet, value`);
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

    // list_bucket: its ranges (bounds and folded counts) stay one table; deltas by range.
    this.addSql(`alter table list_bucket rename to list_bucket_base`);
    this.addSql(
      `create table list_bucket_delta (lo_updated_at timestamptz(3) not null, lo_id uuid not null, n bigint not null, n_all bigint not null)`,
    );
    this.addSql(`
      create view list_bucket as
        select b.lo_updated_at, b.lo_id, b.n + coalesce(d.n, 0) as n, b.n_all + coalesce(d.n_all, 0) as n_all
          from list_bucket_base b
          left join (select lo_updated_at, lo_id, sum(n)::bigint as n, sum(n_all)::bigint as n_all
                       from list_bucket_delta group by lo_updated_at, lo_id) d
            on d.lo_updated_at = b.lo_updated_at and d.lo_id = b.lo_id`);
    this.addSql(`
      create or replace function list_bucket_apply(added_at timestamptz[], added_id uuid[], added_published boolean[],
                                                   removed_at timestamptz[], removed_id uuid[], removed_published boolean[]) returns void language plpgsql as $$
      begin
        if coalesce(cardinality(added_id), 0) + coalesce(cardinality(removed_id), 0) = 0 then return; end if;
        -- Waits while a rebalance holds the ranges, and keeps one from starting until this transaction
        -- ends: the bounds read below (a fresh snapshot, read committed) are those the deltas go to.
        lock table list_bucket_base in row exclusive mode;
        insert into list_bucket_delta (lo_updated_at, lo_id, n, n_all)
        select r.lo_updated_at, r.lo_id, coalesce(sum(c.k) filter (where c.published), 0), sum(c.k)
          from (select a.at, a.id, a.published, 1 as k from unnest(added_at, added_id, added_published) as a(at, id, published)
                union all
                select x.at, x.id, x.published, -1 from unnest(removed_at, removed_id, removed_published) as x(at, id, published)) c
          cross join lateral (select lo_updated_at, lo_id from list_bucket_base
                               where (lo_updated_at, lo_id) <= (c.at, c.id)
                               order by lo_updated_at desc, lo_id desc limit 1) r
         group by r.lo_updated_at, r.lo_id
        having coalesce(sum(c.k) filter (where c.published), 0) <> 0 or sum(c.k) <> 0;
      end $$`);
    // The committed deltas of the ranges into their counts (under the caller's lock on list_bucket_base).
    this.addSql(`
      create function list_bucket_fold() returns void language sql as $$
        with d as (delete from list_bucket_delta returning lo_updated_at, lo_id, n, n_all)
        update list_bucket_base b set n = b.n + s.n, n_all = b.n_all + s.n_all
          from (select lo_updated_at, lo_id, sum(n) as n, sum(n_all) as n_all from d group by lo_updated_at, lo_id) s
         where b.lo_updated_at = s.lo_updated_at and b.lo_id = s.lo_id
      $$`);
    // Migration list_bucket_all_statuses's rebalance on the base rows, folding first: under the
    // exclusive lock no writer holds an uncommitted delta, so every count is then the rows' count.
    this.addSql(`
      create or replace function list_bucket_rebalance(wait boolean) returns void language plpgsql as $$
      declare
        b record;
        m record;
        hi_at timestamptz;
        hi_id uuid;
        upper_n bigint;
        below record;
      begin
        if current_setting('transaction_isolation') <> 'read committed' then return; end if;
        if not exists (select 1 from list_bucket where n_all > 1024 or (n_all < 128 and lo_updated_at <> '-infinity')) then return; end if;
        begin
          if wait then lock table list_bucket_base in exclusive mode;
          else lock table list_bucket_base in exclusive mode nowait;
          end if;
        exception when lock_not_available then
          return;
        end;
        perform list_bucket_fold();
        loop
          select * into b from list_bucket_base where n_all > 1024 limit 1;
          exit when not found;
          select updated_at, id into m from learning_opportunity
           where (updated_at, id) >= (b.lo_updated_at, b.lo_id)
           order by updated_at, id offset b.n_all / 2 limit 1;
          exit when not found; -- only if counts and rows disagree; reads then fall back to a plain offset
          select x.lo_updated_at, x.lo_id into hi_at, hi_id from list_bucket_base x
           where (x.lo_updated_at, x.lo_id) > (b.lo_updated_at, b.lo_id)
           order by x.lo_updated_at, x.lo_id limit 1;
          if not found then
            hi_at := 'infinity'; hi_id := 'ffffffff-ffff-ffff-ffff-ffffffffffff';
          end if;
          select count(*) into upper_n from learning_opportunity
           where status = 'PUBLISHED' and (updated_at, id) >= (m.updated_at, m.id)
             and (updated_at, id) < (hi_at, hi_id);
          insert into list_bucket_base (lo_updated_at, lo_id, n, n_all) values (m.updated_at, m.id, upper_n, b.n_all - b.n_all / 2);
          update list_bucket_base set n = b.n - upper_n, n_all = b.n_all / 2 where lo_updated_at = b.lo_updated_at and lo_id = b.lo_id;
        end loop;
        for b in select * from list_bucket_base where n_all < 128 and lo_updated_at <> '-infinity' order by lo_updated_at, lo_id loop
          select * into below from list_bucket_base where (lo_updated_at, lo_id) < (b.lo_updated_at, b.lo_id) order by lo_updated_at desc, lo_id desc limit 1;
          continue when below.n_all + b.n_all > 1024;
          update list_bucket_base set n = n + b.n, n_all = n_all + b.n_all where lo_updated_at = below.lo_updated_at and lo_id = below.lo_id;
          delete from list_bucket_base where lo_updated_at = b.lo_updated_at and lo_id = b.lo_id;
        end loop;
      end $$`);
    this.addSql(`
      create or replace function list_bucket_after_truncate() returns trigger language plpgsql as $$
      begin
        delete from list_bucket_delta;
        delete from list_bucket_base;
        insert into list_bucket_base (lo_updated_at, lo_id, n, n_all) values ('-infinity', '00000000-0000-0000-0000-000000000000', 0, 0);
        return null;
      end $$`);

    // Every committed delta into its base row, then the ranges rebalanced; one caller at a time
    // (false: another is folding, and will have folded these too or leave them for the next call).
    // `wait_ms`: how long a rebalance waits for the writers in flight to commit (new ones queue behind
    // it meanwhile); 0 only takes the ranges when no writer holds them (seed, between its batches).
    // Under a steady stream of writers, a lock taken only when free may never come.
    this.addSql(`
      create function fold_counts(wait_ms int default 200) returns boolean language plpgsql as $$
      begin
        if not pg_try_advisory_xact_lock(${FOLD_LOCK.join(', ')}) then return false; end if;
        with d as (delete from catalog_count_delta returning status, n)
        update catalog_count_base c set n = c.n + s.n
          from (select status, sum(n) as n from d group by status) s where c.status = s.status;
        with d as (delete from facet_count_delta returning facet, value, n)
        insert into facet_count_base (facet, value, n)
        select facet, value, sum(n) from d group by facet, value order by facet, value
        on conflict (facet, value) do update set n = facet_count_base.n + excluded.n;
        lock table list_bucket_base in row exclusive mode;
        perform list_bucket_fold();
        if wait_ms > 0 then
          perform set_config('lock_timeout', wait_ms || 'ms', true);
        end if;
        perform list_bucket_rebalance(wait_ms > 0);
        return true;
      end $$`);
  }
}
