import { Migration } from '@mikro-orm/migrations';

// The trigger statements planned at each call (migration trigger_joins_planned_per_call) run from a
// plan kept for the session when their transition table holds few rows: a single mutation, which
// is what the content platform mostly sends, no longer plans them on every write. Planning was half
// of those functions' time for one record (bench/README.md, "Where a write's PostgreSQL work goes
// now").
// What made kept plans dangerous was a plan made for the wrong size: one row's nested loop run over
// thousands, or a plan made on an empty catalog that scans all of it once the catalog has grown.
// So the kept plan only ever runs for at most FEW rows, and every table the statements read is
// reached through `id = any(ids)` (the transition table's ids, a parameter) or by a record's id from
// such a row, with sequential scans off while the functions plan: whatever the tables held when the
// plan was made, it looks the few records up by their primary keys. More rows than FEW: the same
// statement planned at each call with the ids as its parameter, as before.
// test/catalog/trigger-plans.test.ts writes nothing, then single records, then thousands, then single
// records among thousands on one connection, and bounds the rows every statement read.
const FEW = 16;

/**
 * `statement` (reading the transition table's ids as `$ids`) from a kept plan when `rows` holds at
 * most FEW rows, else planned now; `into`: where a select's row goes.
 */
const bySize = (rows: string, statement: string, into = '') => {
  const target = into && ` into ${into}`;
  return `
        ids := array(select id from ${rows});
        if cardinality(ids) <= ${FEW} then
          ${statement.replaceAll('$ids', 'ids')}${target};
        else
          execute $q$${statement.replaceAll('$ids', '$1')}$q$${target} using ids;
        end if;`;
};

/**
 * A statement-level trigger function planning with sequential scans off and generic plans (see
 * above); `rows`: the transition table it returns at once without; `declare`: more variables.
 */
const triggerFunction = (name: string, rows: string, body: string, declare = '') => `
      create or replace function ${name}() returns trigger language plpgsql set enable_seqscan = off set plan_cache_mode = force_generic_plan as $$
      declare
        ids uuid[];${declare}
      begin
        if not exists (select from ${rows}) then return null; end if;${body}
        return null;
      end $$`;

export class Migration20261226000000_trigger_plans_for_few_rows extends Migration {
  override up(): void {
    // The transition tables alone: a kept plan joining at most FEW rows with FEW is right at any size.
    this.addSql(
      triggerFunction(
        'list_bucket_after_update',
        'new_rows',
        `${bySize(
          'new_rows',
          `select array_agg(n.updated_at order by n.id), array_agg(n.id order by n.id), array_agg(n.status = 'PUBLISHED' order by n.id),
                 array_agg(o.updated_at order by o.id), array_agg(o.id order by o.id), array_agg(o.status = 'PUBLISHED' order by o.id)
            from new_rows n join old_rows o on o.id = n.id
           where o.updated_at <> n.updated_at or (o.status = 'PUBLISHED') <> (n.status = 'PUBLISHED')`,
          'a_at, a_id, a_pub, r_at, r_id, r_pub',
        )}
        perform list_bucket_apply(a_at, a_id, a_pub, r_at, r_id, r_pub);`,
        `
        a_at timestamptz[]; a_id uuid[]; a_pub boolean[];
        r_at timestamptz[]; r_id uuid[]; r_pub boolean[];`,
      ),
    );
    for (const table of ['list_entry', 'list_session'])
      this.addSql(
        triggerFunction(
          `${table}_after_delete`,
          'old_rows',
          bySize('old_rows', `delete from ${table} where id = any($ids)`),
        ),
      );
    this.addSql(
      triggerFunction(
        'list_session_after_write',
        'new_rows',
        bySize(
          'new_rows',
          `with changed as (
            select e.id from list_entry e
             where e.id = any($ids)
               and (e.starts <> coalesce((select array_agg(ls.starts_at order by ls.starts_at) from list_session ls where ls.id = e.id), '{}')
                    or exists (select from list_session ls where ls.id = e.id and ls.status <> e.status))),
          gone as (delete from list_session where id = any($ids) and id in (select id from changed))
          insert into list_session (id, status, starts_at, prev_starts_at)
          select e.id, e.status, t.s, lag(t.s) over (partition by e.id order by t.s)
            from list_entry e cross join unnest(e.starts) t(s)
           where e.id = any($ids) and e.id in (select id from changed)
           order by e.id, t.s`,
        ),
      ),
    );
    this.addSql(
      triggerFunction(
        'view_state_capture',
        'old_rows',
        bySize(
          'old_rows',
          `insert into view_state (resource_id, facets)
          select o.id, view_facets(o.doc::jsonb) from old_rows o
           where o.status = 'PUBLISHED'
             and not exists (select from view_state v where v.resource_id = any($ids) and v.resource_id = o.id)
          on conflict (resource_id) do nothing`,
        ),
      ),
    );
  }
}
