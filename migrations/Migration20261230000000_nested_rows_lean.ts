import { Migration } from '@mikro-orm/migrations';

// Every write inserts a record's nested rows (about eleven per record) and every index on them;
// three of those indexes no statement reads any more (bench/README.md, "Nested rows' indexes"):
// - unique (learning_opportunity_id, position) on the five nested tables: write-docs.ts numbers the
//   items from their array's order, so positions are unique by construction, and the loads of a
//   record's items (by learning_opportunity_id) use the unique (learning_opportunity_id, item_id);
// - lo_session (starts_at, learning_opportunity_id) and (learning_opportunity_id, starts_at): the
//   session windows and the session order read list_session since migration list_session, and the
//   records without a future session are found there too (list-keys.ts).
// At 100,000 records they were 16 % of a seed batch's PostgreSQL CPU.
const NESTED = ['lo_session', 'lo_deadline', 'lo_faq', 'lo_external_review', 'lo_accolade'];

export class Migration20261230000000_nested_rows_lean extends Migration {
  override up(): void {
    for (const table of NESTED)
      this.addSql(`alter table ${table} drop constraint if exists ${table}_learning_opportunity_id_position_key`);
    this.addSql(`drop index if exists lo_session_starts_at`);
    this.addSql(`drop index if exists lo_session_record_starts_at`);
  }
}
