import { Migration } from '@mikro-orm/migrations';
import { LAST_START_INDEXES_SQL } from './Migration20261228000000_last_starts.ts';
import { FACET_PAIR_COUNTS_SQL } from './Migration20261229000000_facet_pairs.ts';

// Three migrations were changed after a version of them had been committed, and a database that ran
// such an earlier text keeps it (a migration runs once): after an upgrade it differed from a new
// one, and `?country=DE&facets=format` answered 500 (found from outside, upgrading from the commits
// named below). This brings every database to what the migrations say now; on one that ran them as
// they are, it changes nothing but recreating one function as it was. From here on a committed
// migration is never changed (docs/development.md, "Migrations").
// - search_bitmaps before d61c3f6: search_config had no `marked_max` (the records waiting for their
//   fold that a read counts from their rows); facet_pair_counts and search_plan read it.
// - facet_pairs before 86adfb0: facet_pair_counts(facet, value, ...) of one filter value; the reads
//   call facet_pair_counts(facet, values[], ...).
// - last_starts before bdf68f0: a stored generated column `last_starts_at` with the two indexes on it;
//   the reads' condition is on the expression `starts[cardinality(starts)]`, which only the indexes
//   on that expression serve (and every write kept the column).
// Two earlier edits, each minutes after its migration was committed, are repaired too (cheaply and
// idempotently): scaling before 0595bd3 had no api_key.rate_limit nor rate_limit_usage, and
// webhook_test_events before c0ad255 no index for the pruning of test events. Other edits changed
// only comments, or objects that a later migration replaces (checked text by text, every version).
export class Migration20261231000000_edited_migrations extends Migration {
  override up(): void {
    this.addSql(
      `alter table search_config add column if not exists marked_max integer not null default 20000 check (marked_max >= 0)`,
    );
    this.addSql(`alter table search_config alter column marked_max drop default`);

    this.addSql(`alter table api_key add column if not exists rate_limit integer check (rate_limit > 0)`);
    this.addSql(`
      create table if not exists rate_limit_usage (
        key_id uuid not null references api_key (id) on delete cascade,
        window_start timestamptz not null,
        used bigint not null,
        primary key (key_id, window_start)
      )`);
    this.addSql(`create index if not exists event_test_events on event (occurred_at) where xid is null`);

    this.addSql(`drop function if exists facet_pair_counts(text, text, text[], integer)`);
    this.addSql(`drop function if exists facet_pair_counts(text, text[], text[], integer)`);
    this.addSql(FACET_PAIR_COUNTS_SQL);

    // Only where the column is: its indexes go with it, and the expression's are built instead.
    this.addSql(`
      do $$ begin
        if exists (select from information_schema.columns
                    where table_schema = current_schema() and table_name = 'list_entry' and column_name = 'last_starts_at') then
          alter table list_entry drop column last_starts_at;
          ${LAST_START_INDEXES_SQL.map((sql) => `${sql};`).join('\n          ')}
          analyze list_entry;
        end if;
      end $$`);
  }
}
