import { Migration } from '@mikro-orm/migrations';

// Deep OFFSET in constant time for the public list (see docs/architecture.md, "Deep pages").
// list_bucket cuts the published records, in list order (updated_at, id), into contiguous key
// ranges of a few hundred records and counts each one, maintained by statement-level triggers in the
// writing transaction (like catalog_count). A page at offset k reads the counts (a few hundred rows),
// seeks to the upper bound of the range that holds position k and skips at most one range there.
// Exactness never depends on the sizes of the ranges, only on the counts: rebalancing (split at the
// median, merge into the neighbour) only keeps them small.
export class Migration20261123000000_list_buckets extends Migration {
  override up(): void {
    // A range runs from its lower bound (inclusive) to the next range's lower bound (exclusive); the
    // lowest range starts at -infinity and is never removed.
    this.addSql(`
      create table list_bucket (
        lo_updated_at timestamptz(3) not null,
        lo_id uuid not null,
        n bigint not null check (n >= 0),
        primary key (lo_updated_at, lo_id)
      )`);

    // Splits ranges above 1024 records at their median and merges ranges below 128 into the one below.
    // It needs the table to itself (no other transaction with uncommitted counts), so that every
    // count equals the rows its snapshot sees; from a trigger it only tries (nowait) and leaves the
    // work to a later write when other writers are busy.
    this.addSql(`
      create function list_bucket_rebalance(wait boolean) returns void language plpgsql as $$
      declare
        b record;
        m record;
        below record;
      begin
        if current_setting('transaction_isolation') <> 'read committed' then return; end if;
        if not exists (select 1 from list_bucket where n > 1024 or (n < 128 and lo_updated_at <> '-infinity')) then return; end if;
        begin
          if wait then lock table list_bucket in exclusive mode;
          else lock table list_bucket in exclusive mode nowait;
          end if;
        exception when lock_not_available then
          return;
        end;
        loop
          select * into b from list_bucket where n > 1024 limit 1;
          exit when not found;
          select updated_at, id into m from learning_opportunity
           where status = 'PUBLISHED' and (updated_at, id) >= (b.lo_updated_at, b.lo_id)
           order by updated_at, id offset b.n / 2 limit 1;
          exit when not found; -- only if counts and rows disagree; reads then fall back to a plain offset
          insert into list_bucket (lo_updated_at, lo_id, n) values (m.updated_at, m.id, b.n - b.n / 2);
          update list_bucket set n = b.n / 2 where lo_updated_at = b.lo_updated_at and lo_id = b.lo_id;
        end loop;
        for b in select * from list_bucket where n < 128 and lo_updated_at <> '-infinity' order by lo_updated_at, lo_id loop
          -- re-read: an earlier merge of this loop may have grown the range below
          select * into below from list_bucket where (lo_updated_at, lo_id) < (b.lo_updated_at, b.lo_id) order by lo_updated_at desc, lo_id desc limit 1;
          continue when below.n + b.n > 1024;
          update list_bucket set n = n + b.n where lo_updated_at = below.lo_updated_at and lo_id = below.lo_id;
          delete from list_bucket where lo_updated_at = b.lo_updated_at and lo_id = b.lo_id;
        end loop;
      end $$`);

    // Applies +1 per added and -1 per removed published key to the range holding it.
    this.addSql(`
      create function list_bucket_apply(added_at timestamptz[], added_id uuid[], removed_at timestamptz[], removed_id uuid[]) returns void language plpgsql as $$
      declare d record;
      begin
        if coalesce(cardinality(added_id), 0) + coalesce(cardinality(removed_id), 0) = 0 then return; end if;
        -- Waits while a rebalance holds the table, and keeps one from starting until this transaction
        -- ends: the bounds read below (a fresh snapshot, read committed) are those the counts go to.
        lock table list_bucket in row exclusive mode;
        for d in
          select r.lo_updated_at, r.lo_id, sum(c.k) as k
            from (select a.at, a.id, 1 as k from unnest(added_at, added_id) as a(at, id)
                  union all
                  select x.at, x.id, -1 from unnest(removed_at, removed_id) as x(at, id)) c
            cross join lateral (select lo_updated_at, lo_id from list_bucket
                                 where (lo_updated_at, lo_id) <= (c.at, c.id)
                                 order by lo_updated_at desc, lo_id desc limit 1) r
           group by r.lo_updated_at, r.lo_id
          having sum(c.k) <> 0
           order by r.lo_updated_at, r.lo_id -- one order for every writer: no deadlocks between them
        loop
          update list_bucket set n = n + d.k where lo_updated_at = d.lo_updated_at and lo_id = d.lo_id;
        end loop;
        perform list_bucket_rebalance(false);
      end $$`);

    this.addSql(`
      create function list_bucket_after_insert() returns trigger language plpgsql as $$
      begin
        perform list_bucket_apply(
          array(select updated_at from new_rows where status = 'PUBLISHED' order by id),
          array(select id from new_rows where status = 'PUBLISHED' order by id),
          null, null);
        return null;
      end $$`);
    this.addSql(`
      create function list_bucket_after_delete() returns trigger language plpgsql as $$
      begin
        perform list_bucket_apply(
          null, null,
          array(select updated_at from old_rows where status = 'PUBLISHED' order by id),
          array(select id from old_rows where status = 'PUBLISHED' order by id));
        return null;
      end $$`);
    // Only rows whose published key changed move between ranges.
    this.addSql(`
      create function list_bucket_after_update() returns trigger language plpgsql as $$
      begin
        perform list_bucket_apply(
          array(select n.updated_at from new_rows n left join old_rows o on o.id = n.id
                 where n.status = 'PUBLISHED' and (o.status is distinct from 'PUBLISHED' or o.updated_at <> n.updated_at) order by n.id),
          array(select n.id from new_rows n left join old_rows o on o.id = n.id
                 where n.status = 'PUBLISHED' and (o.status is distinct from 'PUBLISHED' or o.updated_at <> n.updated_at) order by n.id),
          array(select o.updated_at from old_rows o left join new_rows n on n.id = o.id
                 where o.status = 'PUBLISHED' and (n.status is distinct from 'PUBLISHED' or n.updated_at <> o.updated_at) order by o.id),
          array(select o.id from old_rows o left join new_rows n on n.id = o.id
                 where o.status = 'PUBLISHED' and (n.status is distinct from 'PUBLISHED' or n.updated_at <> o.updated_at) order by o.id));
        return null;
      end $$`);
    this.addSql(`
      create function list_bucket_after_truncate() returns trigger language plpgsql as $$
      begin
        delete from list_bucket;
        insert into list_bucket (lo_updated_at, lo_id, n) values ('-infinity', '00000000-0000-0000-0000-000000000000', 0);
        return null;
      end $$`);
    // Named to sort after catalog_count_*: triggers of one event fire in name order, and every writer
    // takes catalog_count rows before list_bucket locks. (The other order can deadlock a bulk load of
    // several statements in one transaction against a concurrent publish.)
    this.addSql(
      `create trigger list_bucket_insert after insert on learning_opportunity referencing new table as new_rows for each statement execute function list_bucket_after_insert()`,
    );
    this.addSql(
      `create trigger list_bucket_delete after delete on learning_opportunity referencing old table as old_rows for each statement execute function list_bucket_after_delete()`,
    );
    this.addSql(
      `create trigger list_bucket_update after update on learning_opportunity referencing old table as old_rows new table as new_rows for each statement execute function list_bucket_after_update()`,
    );
    this.addSql(
      `create trigger list_bucket_truncate after truncate on learning_opportunity for each statement execute function list_bucket_after_truncate()`,
    );

    // Where a public page at offset p_offset starts: the upper bound of the range holding position
    // p_offset and how many records of that range lie above it. Stable, so it reads the snapshot of
    // the statement that calls it: counts, catalog_count and rows agree. PL/pgSQL, so that its plans
    // are cached per connection. Should the counts ever disagree with catalog_count, it falls back to
    // a plain offset from the top (slow, still exact).
    this.addSql(`
      create function list_page_start(p_offset bigint, out start_at timestamptz, out start_id uuid, out skip bigint)
      language plpgsql stable as $$
      declare
        total bigint;
      begin
        select n into total from catalog_count where status = 'PUBLISHED';
        if total is distinct from (select sum(n) from list_bucket) then
          start_at := 'infinity'; start_id := 'ffffffff-ffff-ffff-ffff-ffffffffffff'; skip := p_offset;
          return;
        end if;
        select coalesce(b.hi_at, 'infinity'), coalesce(b.hi_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'), p_offset - (b.through - b.n)
          into start_at, start_id, skip
          from (select n, sum(n) over w as through, lag(lo_updated_at) over w as hi_at, lag(lo_id) over w as hi_id
                  from list_bucket
                window w as (order by lo_updated_at desc, lo_id desc)) b
         where b.through > p_offset
         order by b.through
         limit 1;
        if not found then -- past the end: an empty range
          start_at := '-infinity'; start_id := '00000000-0000-0000-0000-000000000000'; skip := 0;
        end if;
      end $$`);

    // Backfill from the rows already there: a range every 512 published records.
    this.addSql(`lock table learning_opportunity in share mode`);
    this.addSql(
      `insert into list_bucket (lo_updated_at, lo_id, n) values ('-infinity', '00000000-0000-0000-0000-000000000000', 0)`,
    );
    this.addSql(`
      insert into list_bucket (lo_updated_at, lo_id, n)
      select updated_at, id, 0 from (
        select updated_at, id, row_number() over (order by updated_at, id) - 1 as pos from learning_opportunity where status = 'PUBLISHED'
      ) r where pos % 512 = 0 and pos > 0`);
    this.addSql(`
      update list_bucket b set n = c.n from (
        select r.lo_updated_at, r.lo_id, count(*) as n
          from learning_opportunity lo
          cross join lateral (select lo_updated_at, lo_id from list_bucket
                               where (lo_updated_at, lo_id) <= (lo.updated_at, lo.id)
                               order by lo_updated_at desc, lo_id desc limit 1) r
         where lo.status = 'PUBLISHED'
         group by r.lo_updated_at, r.lo_id) c
      where b.lo_updated_at = c.lo_updated_at and b.lo_id = c.lo_id`);
  }
}
