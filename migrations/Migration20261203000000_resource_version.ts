import { Migration } from '@mikro-orm/migrations';

// resource.version (docs/contract.md, "Event body"): a per-resource counter, strictly increasing across
// every event of one resource id, delete and re-create included. Kept in its own table, not
// derived from max(event.version): retention prunes events, and a re-created id goes on from
// where it stopped. The writer bumps it in the event's transaction, under the record's advisory
// lock (events/record-change.ts). event.version keeps each event's number for ordering and replay
// checks (the body carries it too, as `resource.version`).
// Existing events get versions in feed order (xid, position), their stored bodies gain the field
// (the feed serves the stored bytes, so feed items and deliveries stay identical), and the counters
// start after the highest version given.
export class Migration20261203000000_resource_version extends Migration {
  override up(): void {
    this.addSql(
      `create table resource_version (resource_id uuid primary key, version bigint not null check (version > 0))`,
    );
    this.addSql(`alter table event add column version bigint`);
    this.addSql(`
      update event e set version = o.v,
             body = regexp_replace(e.body, '"resource":\\{"type":"LEARNING_OPPORTUNITY","id":"([0-9a-f-]+)"\\}',
                                   '"resource":{"type":"LEARNING_OPPORTUNITY","id":"\\1","version":' || o.v || '}')
        from (select id, row_number() over (partition by resource_id order by xid, position) as v from event) o
       where o.id = e.id`);
    // The default is only for hand-written inserts of a fresh resource's first event (tests, benches);
    // the service always writes the bumped counter.
    this.addSql(
      `alter table event alter column version set not null, alter column version set default 1, add constraint event_version_positive check (version > 0)`,
    );
    this.addSql(
      `insert into resource_version (resource_id, version) select resource_id, max(version) from event group by resource_id`,
    );
    this.addSql(`create index event_resource_version on event (resource_id, version)`);
  }
}
