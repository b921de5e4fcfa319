import { Migration } from '@mikro-orm/migrations';

// An open session start window beside a format or a language (`language=de&startsFrom=<in six
// months>`, "German courses still running next summer") read from one index (src/catalog/list-windows.ts
// lastStartFrom). A record has a session starting at or after `startsFrom` exactly when its last
// start does; list_entry's `starts` ascend, so that is its last element. The window was found from
// list_session's rows instead (every session after it, 520,000 at a million records, hashed against
// the 86,443 German rows read from the heap: 251 ms on a quiet machine for 13,556 matches).
// - `last_starts_at`: the last start, generated from `starts` (null without a session), so that an
//   index holds it as a column and a count reads the index alone (an index on the expression still
//   read each row: PostgreSQL answers a count from an index only when it holds the columns).
// - Its btrees after the status and the format or the language, holding each record's id and starts:
//   the matches of such a window are one range of them, read for their count and their next session
//   (the session order's page) without a row. Without the starts, the page read each match's row
//   (13,556 of them, 1.3 s on a machine slow at reading PostgreSQL's buffers; 23 ms with them).
//   A write pays two index entries of about 100 bytes.
// Adding a stored generated column rewrites list_entry (about 20 s at a million records, the table
// locked meanwhile).
export class Migration20261228000000_last_starts extends Migration {
  override up(): void {
    this.addSql(`alter table list_entry add column last_starts_at timestamptz(3)
                   generated always as (starts[cardinality(starts)]) stored`);
    this.addSql(
      `create index list_entry_format_last on list_entry (status, format, last_starts_at) include (id, starts) where last_starts_at is not null`,
    );
    this.addSql(
      `create index list_entry_language_last on list_entry (status, language, last_starts_at) include (id, starts) where last_starts_at is not null`,
    );
    this.addSql(`analyze list_entry`);
  }
}
