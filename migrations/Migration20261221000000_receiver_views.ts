import { Migration } from '@mikro-orm/migrations';

// Receivers that subscribe to a view (src/views/view.ts; the fan-out: src/webhooks/delivery/view-routing.ts).
// - receiver.view: the view's canonical text (canonicalView: parameters sorted, values distinct and
//   sorted, countries and cities in lower case), null for every record. Parsed again by every
//   reader: the text is the one spelling (equal views, however they were given, are equal here).
// - event: a record leaving a receiver's view is delivered as a LEARNING_OPPORTUNITY_LEFT_VIEW event
//   stored like a resync's made event (outside the change feed: xid and position null), under the id
//   the view's feed gives that same leave (views/left-view.ts leftViewEventId), its resource and
//   version those of the event that took the record out: receivers of one view share it, and the
//   lanes order it with the record's other deliveries. Retention prunes it with the other events.
export class Migration20261221000000_receiver_views extends Migration {
  override up(): void {
    this.addSql(`alter table receiver add column view text check (view <> '')`);
  }
}
