import { Migration } from '@mikro-orm/migrations';

// Resync on demand and a per-receiver rate cap (src/webhooks/catch-up/resync.ts,
// src/webhooks/receivers/rate-cap.ts, src/webhooks/delivery/rate-gate.ts).
// - receiver_resync: the records of a receiver's last resync, one row each, as receiver_catch_up
//   holds a catch-up's (migration receiver_catch_up): `queued_at` once its delivery was handed to its
//   lane, `event_id` and `version` the event that brings the receiver to the record's latest state and
//   its resource.version (null: the record has no stored event of a type the receiver subscribes to,
//   so nothing was sent; `skipped` in its progress). Replaced by the next resync,
//   removed with the receiver. receiver.resync_started_at (null: never) and resync_since (null: every
//   published record) say which resync it was.
// - event: a resync restates the current state of a published record that has no stored event any
//   more (retention pruned them after EVENT_RETENTION_DAYS, or it was seeded without any) as an event
//   of its own, kept outside the change feed as a test event is (xid and position null: every feed
//   statement compares them with a bound, never true for null; the view trigger of migration
//   view_states passes such events by). The check of migration webhook_test_events admitted a null
//   feed position for WEBHOOK_TEST only; now: both null or neither, and a test event never in the feed.
// - receiver.max_per_second: at most this many deliveries of the receiver start in any one-second
//   window, across every worker (null: no cap).
// - receiver_pace: one row per capped receiver that was sent to, its pacing state as the generic cell
//   rate algorithm keeps it: `tat` (the theoretical arrival time of the next send), the interval and
//   the burst tolerance derived from max_per_second at each take, and `granted` (the sends the last
//   take allowed). Written by one statement per take of send tokens (receivers/rate-cap.ts); a narrow
//   row, updated in place (HOT: no indexed column changes, and the fill factor leaves room on the page).
export class Migration20261220000000_receiver_resync_and_rate_cap extends Migration {
  override up(): void {
    this.addSql(`
      alter table receiver
        add column max_per_second int check (max_per_second between 1 and 10000),
        add column resync_started_at timestamptz(3),
        add column resync_since timestamptz(3)`);
    this.addSql(`
      create table receiver_resync (
        receiver_id uuid not null references receiver (id) on delete cascade,
        resource_id uuid not null,
        version bigint,
        event_id uuid,
        queued_at timestamptz(3),
        primary key (receiver_id, resource_id)
      )`);
    // The records still to hand to the queue, in the order the batches take them.
    this.addSql(
      `create index receiver_resync_to_queue on receiver_resync (receiver_id, resource_id) where queued_at is null`,
    );
    this.addSql(`alter table event drop constraint event_feed_position_only_for_test`);
    // Not valid first, validated after: the check of existing rows then takes no lock that blocks writers.
    this.addSql(
      `alter table event add constraint event_feed_position check ((xid is null) = (position is null) and (xid is null or type <> 'WEBHOOK_TEST')) not valid`,
    );
    this.addSql(`alter table event validate constraint event_feed_position`);
    this.addSql(`
      create table receiver_pace (
        receiver_id uuid primary key references receiver (id) on delete cascade,
        tat timestamptz not null,
        interval_us bigint not null check (interval_us > 0),
        tolerance_us bigint not null check (tolerance_us >= 0),
        granted int not null
      ) with (fillfactor = 50)`);
  }
}
