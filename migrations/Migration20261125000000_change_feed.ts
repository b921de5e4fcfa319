import { Migration } from '@mikro-orm/migrations';

// The change feed (GET /v1/events, docs/contract.md, "The change feed") and retention. Written by hand:
// - event.xid: the id of the transaction that wrote the event (pg_current_xact_id(), a column
//   default, so the writers are unchanged). The feed reads only below the horizon
//   pg_snapshot_xmin(pg_current_snapshot()): every transaction with a lower id has ended, so no event
//   can appear later behind a reader's cursor, whatever order transactions commit in.
// - event.position: order within one transaction (a sequence; across transactions xid decides).
// - event_feed_order: the feed's only index; every page and the prune are seeks on it.
// - a statement trigger NOTIFYs lods_event_feed in the writing transaction; PostgreSQL delivers it at
//   commit, which wakes long-polling readers (src/feed/feed-notifier.ts).
// - event_feed_pruned: one row, the highest (xid, position) the prune has passed; a cursor below it
//   is expired (410), and a read without a cursor starts there.
export class Migration20261125000000_change_feed extends Migration {
  override up(): void {
    this.addSql(`alter table event add column xid xid8, add column position bigint`);
    // Events written before the feed existed: one transaction's worth (this one), in time order.
    this.addSql(`create sequence event_position_seq as bigint owned by event.position`);
    this.addSql(`
      update event e set xid = pg_current_xact_id(), position = o.n
        from (select id, row_number() over (order by occurred_at, id) as n from event) o
       where o.id = e.id`);
    this.addSql(`select setval('event_position_seq', coalesce((select max(position) from event), 0) + 1, false)`);
    this.addSql(`
      alter table event
        alter column xid set default pg_current_xact_id(), alter column xid set not null,
        alter column position set default nextval('event_position_seq'), alter column position set not null`);
    this.addSql(`create unique index event_feed_order on event (xid, position)`);

    this.addSql(`
      create function event_feed_notify() returns trigger language plpgsql as $$
      begin
        perform pg_notify('lods_event_feed', '');
        return null;
      end $$`);
    this.addSql(
      `create trigger event_feed_notify after insert on event for each statement execute function event_feed_notify()`,
    );

    this.addSql(`
      create table event_feed_pruned (
        only_row boolean primary key default true check (only_row),
        xid xid8 not null,
        position bigint not null
      )`);
    this.addSql(`insert into event_feed_pruned (xid, position) values ('0', 0)`);
  }
}
