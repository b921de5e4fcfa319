import { Migration } from '@mikro-orm/migrations';

// Catch-up on enable (src/webhooks/catch-up/): a receiver enabled again gets one delivery of the
// latest state of every record it missed while it was disabled.
// - receiver.catch_up_from (xid8): from which transaction on the event log may hold events this
//   receiver was not fanned out to. Set by the trigger below whenever a receiver goes from enabled to
//   disabled, whoever disables it: an operator (webhooks/receivers/receivers.ts disableReceiver) or
//   the settling statement (webhooks/receivers/receiver-health-sql.ts, failing or 410). It is the
//   xmin of the disabling statement's snapshot: a writer whose fan-out (webhooks/delivery/fan-out.ts)
//   saw the receiver disabled ran after that statement committed, so its transaction was still open
//   at that moment or began later, and its id (event.xid) is at least that xmin. The catch-up reads
//   the events from there on (event_feed_order) and moves it on (catch-up-sql.ts); null: nothing
//   left to look for.
// - receiver.catch_up_started_at: when the last catch-up started (null: never).
// - receiver_catch_up: the records of a receiver's last catch-up, one row each; `queued_at` once its
//   delivery was handed to its lane (queue/lanes.ts), `version` the resource.version the receiver is
//   brought to (pending until the lane's delivered_version reaches it). Replaced by the next
//   catch-up, removed with the receiver.
// Receivers disabled before this migration: from the first event written from five minutes before
// their disabled_at on (their writers' transactions may have begun before it), else from now.
export class Migration20261217000000_receiver_catch_up extends Migration {
  override up(): void {
    this.addSql(`alter table receiver add column catch_up_from xid8, add column catch_up_started_at timestamptz(3)`);
    this.addSql(`
      create table receiver_catch_up (
        receiver_id uuid not null references receiver (id) on delete cascade,
        resource_id uuid not null,
        version bigint,
        queued_at timestamptz(3),
        primary key (receiver_id, resource_id)
      )`);
    // The records still to hand to the queue, in the order the batches take them.
    this.addSql(
      `create index receiver_catch_up_to_queue on receiver_catch_up (receiver_id, resource_id) where queued_at is null`,
    );
    this.addSql(`
      create function receiver_catch_up_from() returns trigger language plpgsql as $$
      begin
        new.catch_up_from := pg_snapshot_xmin(pg_current_snapshot());
        return new;
      end $$`);
    // The condition is evaluated before any call: the settling statement's health updates, which
    // write `enabled` unchanged, cost no function call.
    this.addSql(`
      create trigger receiver_catch_up_from before update on receiver
        for each row when (old.enabled and not new.enabled) execute function receiver_catch_up_from()`);
    this.addSql(`
      update receiver r set catch_up_from = coalesce(
        (select min(e.xid) from event e where e.xid is not null and e.occurred_at >= coalesce(r.disabled_at, r.created_at) - interval '5 minutes'),
        pg_snapshot_xmin(pg_current_snapshot()))
       where not r.enabled`);
  }
}
