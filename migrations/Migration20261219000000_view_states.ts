import { Migration } from '@mikro-orm/migrations';

// Views (src/views/view.ts) and the change feed of a view (GET /v1/events?view=, src/feed/view-page.ts).
// Whether an event is in a view's feed depends on the record's state before the event and after it;
// both are stored with the event, as the few facets a view reads, so that a view's page is one seek
// on event_feed_order reading two small jsonb values per event, never a body or an older event.
// - view_facets(jsonb): a record state's facets (status, format, language, provider name, topics,
//   the sessions' countries and cities in lower case): the SQL spelling of viewFacets in
//   src/views/view.ts (test/views/view-oracle.test.ts holds them equal as sets).
// - event.view_after: the facets of the event's data (null for DELETED), read from the record's
//   list_entry row when that row is the data's state (same updatedAt: the writer's statement wrote
//   it, migration list_entry), else from the body; event.view_before: the record's facets before
//   the event (null: no public state before it).
// - view_state (resource_id, facets): the state before the next event, which the previous event of
//   the resource may no longer tell (retention prunes events) or never told (seeded records have no
//   event): the previous event's view_after, or, for a record that had none, its state as the catalog
//   held it before the first write that follows (captured from the write's old rows). Removed by a
//   DELETED event.
// - the event trigger (before insert, per row) fills both columns and moves view_state on; the
//   catalog triggers (after update and after delete, per statement) capture a published record's old
//   state when view_state has none. The writers are unchanged (events/record-change.ts,
//   catalog/write-docs.ts).
// - Events already stored: view_after from their bodies; view_before from the previous event of the
//   resource when it is retained, none before a PUBLISHED event (it follows a state that was not
//   public), and otherwise `{"status":"UNKNOWN"}`: the feed counts such a state as maybe in any view
//   (a record that goes out of a view then leaves it, rather than silently staying in a copy).
export class Migration20261219000000_view_states extends Migration {
  override up(): void {
    // A doc's facets: one pass of jsonpath per array, countries and cities lowered as lower_each does
    // (lower() of the array's JSON text: letters only change inside its strings). Arrays in document
    // order, repeats kept: a view asks only whether a value is among them.
    const strings = (path: string) => `jsonb_path_query_array(d, '${path} ? (@.type() == "string")')`;
    this.addSql(`
      create function view_facets(d jsonb) returns jsonb language sql immutable parallel safe as $$
        select case when jsonb_typeof(d) = 'object' then jsonb_build_object(
          'status', d->>'status',
          'format', d->>'format',
          'language', d->>'language',
          'provider', d->'provider'->>'name',
          'topics', ${strings('$.topics[*]')},
          'countries', lower(${strings('$.sessions[*].location.country')}::text)::jsonb,
          'cities', lower(${strings('$.sessions[*].location.city')}::text)::jsonb) end
      $$`);
    this.addSql(`alter table event add column view_before jsonb, add column view_after jsonb`);
    this.addSql(`create table view_state (resource_id uuid primary key, facets jsonb not null)`);

    // Stored events (catalog events only: test events have no feed position).
    this.addSql(`
      update event e set view_after = s.after, view_before = s.before
        from (select x.id, x.after,
                     case when lag(x.version) over w = x.version - 1 then lag(x.after) over w
                          when x.type = 'LEARNING_OPPORTUNITY_PUBLISHED' then null
                          else '{"status":"UNKNOWN"}'::jsonb end as before
                from (select id, resource_id, version, type,
                             case when type <> 'LEARNING_OPPORTUNITY_DELETED' then view_facets(body::jsonb->'data') end as after
                        from event where xid is not null) x
              window w as (partition by x.resource_id order by x.version)) s
       where s.id = e.id`);
    this.addSql(`
      insert into view_state (resource_id, facets)
      select l.resource_id, l.view_after
        from (select distinct on (resource_id) resource_id, view_after from event
               where xid is not null order by resource_id, version desc) l
       where l.view_after is not null`);
    this.addSql(`
      insert into view_state (resource_id, facets)
      select lo.id, view_facets(lo.doc::jsonb) from learning_opportunity lo
       where lo.status = 'PUBLISHED' and not exists (select from event e where e.resource_id = lo.id and e.xid is not null)
      on conflict (resource_id) do nothing`);

    this.addSql(`
      create function event_view_states() returns trigger language plpgsql as $$
      declare
        before_facets jsonb;
        after_facets jsonb;
      begin
        if new.xid is null then
          return new;
        end if;
        select facets into before_facets from view_state where resource_id = new.resource_id;
        if new.type <> 'LEARNING_OPPORTUNITY_DELETED' then
          -- The record's list_entry row is the event's data when it has the data's updatedAt (the
          -- writer's statement wrote both; updatedAt moves on every change): no body to parse.
          select jsonb_build_object('status', e.status, 'format', e.format, 'language', e.language,
                                    'provider', e.provider_name, 'topics', to_jsonb(e.topics),
                                    'countries', to_jsonb(lower_each(e.countries)), 'cities', to_jsonb(lower_each(e.cities)))
            into after_facets
            from list_entry e where e.id = new.resource_id and e.updated_at = new.occurred_at;
          if after_facets is null then
            after_facets := view_facets(new.body::jsonb->'data');
          end if;
        end if;
        if after_facets is null then
          if before_facets is not null then
            delete from view_state where resource_id = new.resource_id;
          end if;
        elsif before_facets is distinct from after_facets then
          -- (an update that leaves the facets as they were, the common one, writes nothing here)
          insert into view_state (resource_id, facets) values (new.resource_id, after_facets)
            on conflict (resource_id) do update set facets = excluded.facets;
        end if;
        new.view_before := before_facets;
        new.view_after := after_facets;
        return new;
      end $$`);
    this.addSql(
      `create trigger event_view_states before insert on event for each row execute function event_view_states()`,
    );
    // Planned at each call (EXECUTE): a join of a transition table (migration trigger_joins_planned_per_call).
    this.addSql(`
      create function view_state_capture() returns trigger language plpgsql as $$ begin
        execute $q$
          insert into view_state (resource_id, facets)
          select o.id, view_facets(o.doc::jsonb) from old_rows o
           where o.status = 'PUBLISHED' and not exists (select from view_state v where v.resource_id = o.id)
          on conflict (resource_id) do nothing$q$;
        return null;
      end $$`);
    for (const event of ['update', 'delete'])
      this.addSql(
        `create trigger view_state_capture_${event} after ${event} on learning_opportunity referencing old table as old_rows for each statement execute function view_state_capture()`,
      );
  }
}
