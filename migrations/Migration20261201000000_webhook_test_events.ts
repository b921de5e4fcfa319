import { Migration } from '@mikro-orm/migrations';

// Test events ("Send test event", `receivers test ID`, docs/console.md): a WEBHOOK_TEST event
// is stored in `event` like any other, so that the worker sends its stored bytes and its attempts are
// recorded (delivery_attempt.event_id references event), but it is not part of the change feed. Its
// feed position stays null: every feed statement (pages, head, pending, prune) compares
// (xid, position) with a bound, and a comparison with null is never true, so the feed and its
// retention never see it, with no change to their statements or to event_feed_order (a unique index
// admits any number of nulls). Catalog events keep their defaults and are never null.
export class Migration20261201000000_webhook_test_events extends Migration {
  override up(): void {
    this.addSql(`alter table event alter column xid drop not null, alter column position drop not null`);
    // Not valid first, validated after: the check of existing rows then takes no lock that blocks writers.
    this.addSql(
      `alter table event add constraint event_feed_position_only_for_test check ((xid is null and position is null) = (type = 'WEBHOOK_TEST')) not valid`,
    );
    this.addSql(`alter table event validate constraint event_feed_position_only_for_test`);
    // Retention finds old test events here (they are outside the feed order it walks).
    this.addSql(`create index event_test_events on event (occurred_at) where xid is null`);
  }
}
