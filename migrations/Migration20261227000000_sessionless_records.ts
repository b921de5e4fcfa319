import { Migration } from '@mikro-orm/migrations';

// The records without a session, by status (src/catalog/list-windows.ts, "long windows"). A long
// or open session start window (`startsFrom` five years ago, `startsBefore` in five) matches nearly
// every record: its page and exact total are found from the few records it does not match, and a
// record without any session is one of them. A partial index: a write pays for it only when its
// record has no session.
export class Migration20261227000000_sessionless_records extends Migration {
  override up(): void {
    this.addSql(`create index list_entry_sessionless on list_entry (status, id) where cardinality(starts) = 0`);
    this.addSql(`analyze list_entry`);
  }
}
