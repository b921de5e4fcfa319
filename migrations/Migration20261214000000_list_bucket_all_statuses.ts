import { Migration } from '@mikro-orm/migrations';

// Deep pages of the internal list (GraphQL, every status) in constant time, as the public list's
// are (migration list_buckets): each range of list_bucket also counts every record in it, whatever
// its status (`n_all`; `n` stays the published ones), and `list_page_start_all(offset)` finds an
// internal page's start from those counts as `list_page_start(offset)` does a public one's (its
// signature kept: processes of the previous version go on calling it during an upgrade). Ranges are now split and merged by `n_all`, so a
// range holds at most 1,024 records of any status (and so at most 1,024 published ones): the skip
// inside one range stays short on both lists. The triggers count every row whose key or published
// state changed, so an edit of a draft now updates the newest range's counts too, as an edit of a
// published record already did (docs/architecture.md, "Deep pages").
export class Migration20261214000000_list_bucket_all_statuses extends Migration {
  override up(): void {
    this.addSql(`alter table list_bucket add column n_all bigint not null default 0`);

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
          if wait then lock table list_bucket in exclusive mode;
          else lock table list_bucket in exclusive mode nowait;
          end if;
        exception when lock_not_available then
          return;
        end;
        loop
          select * into b from list_bucket where n_all > 1024 limit 1;
          exit when not found;
          select updated_at, id into m from learning_opportunity
           where (updated_at, id) >= (b.lo_updated_at, b.lo_id)
           order by updated_at, id offset b.n_all / 2 limit 1;
          exit when not found; -- only if counts and rows disagree; reads then fall back to a plain offset
          -- the published records of the upper half: from the median to the next range's bound
          select x.lo_updated_at, x.lo_id into hi_at, hi_id from list_bucket x
           where (x.lo_updated_at, x.lo_id) > (b.lo_updated_at, b.lo_id)
           order by x.lo_updated_at, x.lo_id limit 1;
          if not found then
            hi_at := 'infinity'; hi_id := 'ffffffff-ffff-ffff-ffff-ffffffffffff';
          end if;
          select count(*) into upper_n from learning_opportunity
           where status = 'PUBLISHED' and (updated_at, id) >= (m.updated_at, m.id)
             and (updated_at, id) < (hi_at, hi_id);
          insert into list_bucket (lo_updated_at, lo_id, n, n_all) values (m.updated_at, m.id, upper_n, b.n_all - b.n_all / 2);
          update list_bucket set n = b.n - upper_n, n_all = b.n_all / 2 where lo_updated_at = b.lo_updated_at and lo_id = b.lo_id;
        end loop;
        for b in select * from list_bucket where n_all < 128 and lo_updated_at <> '-infinity' order by lo_updated_at, lo_id loop
          -- re-read: an earlier merge of this loop may have grown the range below
          select * into below from list_bucket where (lo_updated_at, lo_id) < (b.lo_updated_at, b.lo_id) order by lo_updated_at desc, lo_id desc limit 1;
          continue when below.n_all + b.n_all > 1024;
          update list_bucket set n = n + b.n, n_all = n_all + b.n_all where lo_updated_at = below.lo_updated_at and lo_id = below.lo_id;
          delete from list_bucket where lo_updated_at = b.lo_updated_at and lo_id = b.lo_id;
        end loop;
      end $$`);

    // +1 per added and -1 per removed key to the range holding it: to n_all always, to n when published.
    this.addSql(`drop function list_bucket_apply(timestamptz[], uuid[], timestamptz[], uuid[])`);
    this.addSql(`
      create function list_bucket_apply(added_at timestamptz[], added_id uuid[], added_published boolean[],
                                        removed_at timestamptz[], removed_id uuid[], removed_published boolean[]) returns void language plpgsql as $$
      declare d record;
      begin
        if coalesce(cardinality(added_id), 0) + coalesce(cardinality(removed_id), 0) = 0 then return; end if;
        -- Waits while a rebalance holds the table, and keeps one from starting until this transaction
        -- ends: the bounds read below (a fresh snapshot, read committed) are those the counts go to.
        lock table list_bucket in row exclusive mode;
        for d in
          select r.lo_updated_at, r.lo_id, sum(c.k) filter (where c.published) as k, sum(c.k) as k_all
            from (select a.at, a.id, a.published, 1 as k from unnest(added_at, added_id, added_published) as a(at, id, published)
                  union all
                  select x.at, x.id, x.published, -1 from unnest(removed_at, removed_id, removed_published) as x(at, id, published)) c
            cross join lateral (select lo_updated_at, lo_id from list_bucket
                                 where (lo_updated_at, lo_id) <= (c.at, c.id)
                                 order by lo_updated_at desc, lo_id desc limit 1) r
           group by r.lo_updated_at, r.lo_id
          having coalesce(sum(c.k) filter (where c.published), 0) <> 0 or sum(c.k) <> 0
           order by r.lo_updated_at, r.lo_id -- one order for every writer: no deadlocks between them
        loop
          update list_bucket set n = n + coalesce(d.k, 0), n_all = n_all + d.k_all
           where lo_updated_at = d.lo_updated_at and lo_id = d.lo_id;
        end loop;
        perform list_bucket_rebalance(false);
      end $$`);

    this.addSql(`
      create or replace function list_bucket_after_insert() returns trigger language plpgsql as $$
      begin
        perform list_bucket_apply(
          array(select updated_at from new_rows order by id),
          array(select id from new_rows order by id),
          array(select status = 'PUBLISHED' from new_rows order by id),
          null, null, null);
        return null;
      end $$`);
    this.addSql(`
      create or replace function list_bucket_after_delete() returns trigger language plpgsql as $$
      begin
        perform list_bucket_apply(
          null, null, null,
          array(select updated_at from old_rows order by id),
          array(select id from old_rows order by id),
          array(select status = 'PUBLISHED' from old_rows order by id));
        return null;
      end $$`);
    // Rows whose key or published state changed move: out of their old range, into their new one
    // (one pass over the transition tables for both sides).
    this.addSql(`
      create or replace function list_bucket_after_update() returns trigger language plpgsql as $$
      declare
        a_at timestamptz[]; a_id uuid[]; a_pub boolean[];
        r_at timestamptz[]; r_id uuid[]; r_pub boolean[];
      begin
        select array_agg(n.updated_at order by n.id), array_agg(n.id order by n.id), array_agg(n.status = 'PUBLISHED' order by n.id),
               array_agg(o.updated_at order by o.id), array_agg(o.id order by o.id), array_agg(o.status = 'PUBLISHED' order by o.id)
          into a_at, a_id, a_pub, r_at, r_id, r_pub
          from new_rows n join old_rows o on o.id = n.id
         where o.updated_at <> n.updated_at or (o.status = 'PUBLISHED') <> (n.status = 'PUBLISHED');
        perform list_bucket_apply(a_at, a_id, a_pub, r_at, r_id, r_pub);
        return null;
      end $$`);
    this.addSql(`
      create or replace function list_bucket_after_truncate() returns trigger language plpgsql as $$
      begin
        delete from list_bucket;
        insert into list_bucket (lo_updated_at, lo_id, n, n_all) values ('-infinity', '00000000-0000-0000-0000-000000000000', 0, 0);
        return null;
      end $$`);

    // Where a page at p_offset starts: the upper bound of the range holding position p_offset and how
    // many records of that range lie above it, among the published records (list_page_start, the
    // public list, as migration list_buckets made it) or every record (list_page_start_all, the
    // internal list). Stable, so it reads the statement's snapshot: counts and rows agree. Should the
    // counts ever disagree with catalog_count, a plain offset from the top (slow, still exact).
    this.addSql(`
      create function list_page_start_in(p_offset bigint, every_status boolean, out start_at timestamptz, out start_id uuid, out skip bigint)
      language plpgsql stable as $$
      begin
        if (select case when every_status then sum(n) else sum(n) filter (where status = 'PUBLISHED') end from catalog_count)
           is distinct from (select sum(case when every_status then n_all else n end) from list_bucket) then
          start_at := 'infinity'; start_id := 'ffffffff-ffff-ffff-ffff-ffffffffffff'; skip := p_offset;
          return;
        end if;
        select coalesce(b.hi_at, 'infinity'), coalesce(b.hi_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'), p_offset - (b.through - b.k)
          into start_at, start_id, skip
          from (select k, sum(k) over w as through, lag(lo_updated_at) over w as hi_at, lag(lo_id) over w as hi_id
                  from (select case when every_status then n_all else n end as k, lo_updated_at, lo_id from list_bucket) x
                window w as (order by lo_updated_at desc, lo_id desc)) b
         where b.through > p_offset
         order by b.through
         limit 1;
        if not found then -- past the end: an empty range
          start_at := '-infinity'; start_id := '00000000-0000-0000-0000-000000000000'; skip := 0;
        end if;
      end $$`);
    this.addSql(`
      create or replace function list_page_start(p_offset bigint, out start_at timestamptz, out start_id uuid, out skip bigint)
      language sql stable as $$ select * from list_page_start_in(p_offset, false) $$`);
    this.addSql(`
      create function list_page_start_all(p_offset bigint, out start_at timestamptz, out start_id uuid, out skip bigint)
      language sql stable as $$ select * from list_page_start_in(p_offset, true) $$`);

    // Backfill: every record counted in the range holding its key, then ranges re-cut by n_all.
    this.addSql(`lock table learning_opportunity in share mode`);
    this.addSql(`
      update list_bucket b set n_all = c.n from (
        select r.lo_updated_at, r.lo_id, count(*) as n
          from learning_opportunity lo
          cross join lateral (select lo_updated_at, lo_id from list_bucket
                               where (lo_updated_at, lo_id) <= (lo.updated_at, lo.id)
                               order by lo_updated_at desc, lo_id desc limit 1) r
         group by r.lo_updated_at, r.lo_id) c
      where b.lo_updated_at = c.lo_updated_at and b.lo_id = c.lo_id`);
    this.addSql(`alter table list_bucket add check (n_all >= 0)`);
    this.addSql(`select list_bucket_rebalance(true)`);
  }
}
