import { Migration } from '@mikro-orm/migrations';

// The catalog's statement-level triggers that plan their statement at each call (migration
// trigger_joins_planned_per_call) return at once when their transition table is empty. A single
// upsert (INSERT ... ON CONFLICT DO UPDATE) fires the insert triggers and the update triggers, one
// side always with no rows: an edit's insert side, a new record's update side. Each of those calls
// still planned and ran its join: list_session's alone cost about as much as the real call, and the
// five functions below were a quarter of the trigger time of an upsert (pg_stat_user_functions,
// bench/README.md "Single mutations"). The checks read a transition table (a plan kept for the session
// is right for it whatever its size); the statements are those of the migrations named, unchanged.
export class Migration20261222000300_triggers_skip_empty extends Migration {
  override up(): void {
    const none = (rows: string) => `if not exists (select from ${rows}) then return null; end if;`;
    // migration trigger_joins_planned_per_call
    this.addSql(`
      create or replace function list_bucket_after_update() returns trigger language plpgsql as $$
      declare
        a_at timestamptz[]; a_id uuid[]; a_pub boolean[];
        r_at timestamptz[]; r_id uuid[]; r_pub boolean[];
      begin
        ${none('new_rows')}
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
          ${none('old_rows')}
          execute 'delete from ${table} where id in (select id from old_rows)';
          return null;
        end $$`);
    this.addSql(`
      create or replace function list_session_after_write() returns trigger language plpgsql as $$ begin
        ${none('new_rows')}
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
    // migration view_states
    this.addSql(`
      create or replace function view_state_capture() returns trigger language plpgsql as $$ begin
        ${none('old_rows')}
        execute $q$
          insert into view_state (resource_id, facets)
          select o.id, view_facets(o.doc::jsonb) from old_rows o
           where o.status = 'PUBLISHED' and not exists (select from view_state v where v.resource_id = o.id)
          on conflict (resource_id) do nothing$q$;
        return null;
      end $$`);
  }
}
