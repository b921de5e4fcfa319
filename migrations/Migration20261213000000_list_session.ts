import { Migration } from '@mikro-orm/migrations';

// One narrow row per session of each record for the session-start filters and sort of the filtered
// lists (docs/contract.md, "Filters"; src/catalog/list-sql.ts): the record's id and status, the session's start
// and the start before it in the record's own start order (`prev_starts_at`, null for its first).
// With that, "the record's first session in [from, before)" is one row test (starts_at in the window,
// prev_starts_at before `from` or null), so the exact count of a start window is an index-only count
// of one btree range, with no distinct and no visit of list_entry's heap (which the start window read
// nearly whole: bench/README.md, "Filtered lists"); and "the record's next session" (starts_at after
// now, prev_starts_at at or before now) is read in start order from the same index, without a probe
// per session for an earlier one.
// Kept from list_entry by statement-level triggers on learning_opportunity, in the writing
// statement's transaction. PostgreSQL fires the triggers of one event in the order of their names:
// list_entry_* before list_session_*, so these read the record's narrow row already written.
// Only the records whose status or starts changed are rewritten (a content edit keeps its rows).

export class Migration20261213000000_list_session extends Migration {
  override up(): void {
    this.addSql(`
      create table list_session (
        id uuid not null,
        status text not null,
        starts_at timestamptz(3) not null,
        prev_starts_at timestamptz(3)
      )`);
    // A record's sessions from its narrow row, in start order (equal starts: the second's
    // prev_starts_at equals its start, so only one of them is ever "first" in a window).
    const rows = (where: string) => `
      insert into list_session (id, status, starts_at, prev_starts_at)
      select e.id, e.status, t.s, lag(t.s) over (partition by e.id order by t.s)
        from list_entry e cross join unnest(e.starts) t(s)
       where ${where}
       order by e.id, t.s`;
    // The written records whose status or starts differ from their session rows, rewritten in one
    // statement (the delete and the insert see the same snapshot; the insert reads list_entry only).
    this.addSql(`
      create function list_session_after_write() returns trigger language plpgsql as $$ begin
        with changed as (
          select e.id from list_entry e
           where e.id in (select id from new_rows)
             and (e.starts <> coalesce((select array_agg(ls.starts_at order by ls.starts_at) from list_session ls where ls.id = e.id), '{}')
                  or exists (select from list_session ls where ls.id = e.id and ls.status <> e.status))),
        gone as (delete from list_session where id in (select id from changed))
        ${rows('e.id in (select id from changed)').trim()};
        return null;
      end $$`);
    this.addSql(
      `create function list_session_after_delete() returns trigger language plpgsql as $$ begin delete from list_session where id in (select id from old_rows); return null; end $$`,
    );
    for (const [event, fn, table] of [
      ['insert', 'list_session_after_write', 'new table as new_rows'],
      ['update', 'list_session_after_write', 'new table as new_rows'],
      ['delete', 'list_session_after_delete', 'old table as old_rows'],
    ] as const)
      this.addSql(
        `create trigger list_session_${event} after ${event} on learning_opportunity referencing ${table} for each statement execute function ${fn}()`,
      );
    this.addSql(rows('true'));
    // The window count and the next-session order (status, start, then the list's id order), the
    // previous start carried for index-only reads; and a record's rows (for the triggers, and a
    // matching record's next session, read from the index alone).
    this.addSql(
      `create index list_session_starts on list_session (status, starts_at, id desc) include (prev_starts_at)`,
    );
    this.addSql(`create index list_session_record on list_session (id, starts_at) include (status, prev_starts_at)`);
    this.addSql(`analyze list_session`);
  }
}
