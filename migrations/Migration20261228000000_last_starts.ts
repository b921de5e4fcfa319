import { Migration } from '@mikro-orm/migrations';

// An open session start window beside a format or a language (`language=de&startsFrom=<in six
// months>`, "German courses still running next summer") read from one index (src/catalog/list-windows.ts
// lastStartFrom). A record has a session starting at or after `startsFrom` exactly when its last
// start does; list_entry's `starts` ascend, so that is `starts[cardinality(starts)]`. The window was
// found from list_session's rows instead (every session after it, 520,000 at a million records,
// hashed against the 86,443 German rows read from the heap: 251 ms on a quiet machine for 13,556
// matches).
// - Btrees of the status, the format or the language, and the last start, holding each record's id
//   and starts: the matches of such a window are one range of them, read for their count and their
//   next session (the session order's page) without a row (without the starts, the page read each
//   match's row: 13,556 of them, 1.3 s on a machine slow at reading PostgreSQL's buffers; 23 ms with
//   them). A write pays two index entries of about 100 bytes.
// - Partial (a last start, which the window's condition implies): the triggers' statements that read
//   list_entry by id, planned once per session on a possibly empty catalog, could otherwise take a
//   full scan of one for theirs, since it holds every column they read.
// - On an expression, not a stored column: adding one would rewrite list_entry (about 20 s at a
//   million records, every list waiting); building an index lets reads go on.
const LAST_START = 'starts[cardinality(starts)]';

// Exported for migration edited_migrations, which brings them to a database that ran an earlier text of this one.
export const LAST_START_INDEXES_SQL = ['format', 'language'].map(
  (facet) =>
    `create index list_entry_${facet}_last on list_entry (status, ${facet}, (${LAST_START})) include (id, starts)
           where ${LAST_START} is not null`,
);

export class Migration20261228000000_last_starts extends Migration {
  override up(): void {
    for (const sql of LAST_START_INDEXES_SQL) this.addSql(sql);
    this.addSql(`analyze list_entry`);
  }
}
