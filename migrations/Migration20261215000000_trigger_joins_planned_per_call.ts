import { Migration } from '@mikro-orm/migrations';

// The trigger statements that join a transition table with another table (or with the other
// transition table) are planned at each call, through EXECUTE, instead of once per session.
// PL/pgSQL keeps a statement's plan for the rest of the session, and a statement without parameters
// is never planned again: a service connection's first write (one record) fixed a nested loop that a
// later batch on that connection ran over thousands of rows, every row against every other (a bulk
// update of 5,000 records spent 2.4 s in list_bucket's trigger instead of 35 ms; a bulk delete of
// 5,200, 5.6 s in list_entry's instead of 15 ms; a single-record insert among 3,000 records read
// 9 million rows in list_session's). Planning at each call is a small part of a write: the bulk
// mutations ran 15x faster with it and the single ones 2-3x (bench/README.md, "Trigger plans kept
// for a session"; test/catalog/trigger-plans.test.ts).
// The statements are those of migrations list_bucket_all_statuses, list_entry and list_session,
// unchanged; the triggers' other statements read one transition table alone (counts, facets,
// list_entry's upsert) or the list_bucket index one row at a time, whatever the plan.
export class Migration20261215000000_trigger_joins_planned_per_call extends Migration {
  override up(): void {
    this.addSql(`
      create or replace function list_bucket_after_update() returns trigger language plpgsql as $$
      declare
        a_at timestamptz[]; a_id uuid[]; a_pub boolean[];
        r_at timestamptz[]; r_id uuid[]; r_pub boolean[];
      begin
        execute $q$
          select array_agg(n.updated_at order by n.id), array_agg(n.id order by n.id), array_agg(n.status = 'PUBLISHED' order by n.id),
                 array_agg(o.updated_at order by o.id), array_agg(o.id order by o.id), array_agg(o.status = 'PUBLISHED' order by o.id)
            from new_rows n join old_rows o on o.id = n.id
           where o.updated_at <> n.updated_at or (o.status = 'PUBLISHED') <> (n.status = 'PUBLISHED')$q$
          into a_at, a_id, a_pub, r_at, r_id, r_pub;
        perform list_bucket_apply(a_at, a_id, a_pub, r_at, r_id, r_pub);
        return null;
      end $$`);
    for (const table of ['list_entry', 'list_session'])
      this.addSql(`
        create or replace function ${table}_after_delete() returns trigger language plpgsql as $$ begin
          execute 'delete from ${table} where id in (select id from old_rows)';
          return null;
        end $$`);
    this.addSql(`
      create or replace function list_session_after_write() returns trigger language plpgsql as $$ begin
        execute $q$
          with changed as (
            select e.id from list_entry e
             where e.id in (select id from new_rows)
               and (e.starts <> coalesce((select array_agg(ls.starts_at order by ls.starts_at) from list_session ls where ls.id = e.id), '{}')
                    or exists (select from list_session ls where ls.id = e.id and ls.status <> e.status))),
          gone as (delete from list_session where id in (select id from changed))
          insert into list_session (id, status, starts_at, prev_starts_at)
          select e.id, e.status, t.s, lag(t.s) over (partition by e.id order by t.s)
            from list_entry e cross join unnest(e.starts) t(s)
           where e.id in (select id from changed)
           order by e.id, t.s$q$;
        return null;
      end $$`);
  }
}
