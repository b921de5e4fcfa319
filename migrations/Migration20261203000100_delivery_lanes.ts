import { Migration } from '@mikro-orm/migrations';

// Per-record order per receiver (docs/contract.md, "Delivery guarantees"; docs/architecture.md "Ordered delivery"):
// one lane per (receiver, resource). While a delivery of the resource to the receiver is open (a
// job waiting, retrying or in flight: `head_job`), later ones wait in `waiting` (event ids, oldest
// first) instead of the queue; settling the head promotes the next one in the same statement.
// `queued_version` / `delivered_version`: the highest resource.version ever queued / delivered with
// success on this lane (replays never regress a receiver). `replaced`: scratch for the statement
// that last replaced `waiting` (its old contents, read back by RETURNING). `touched_at`: the last
// change, so the sweeper (lanes whose head job vanished) can never act on a lane changed since it
// looked. Idle lanes (no head) stay, for the versions; removed with their receiver.
//
// Deliveries queued before this migration: per (receiver, resource), the one in flight (or else the
// oldest by version) becomes the lane's head, and the others still waiting leave the queue for the
// lane's waiting list, in version order (they start again at attempt 1). Two or more in flight at
// once (possible only before) are left as they are.
export class Migration20261203000100_delivery_lanes extends Migration {
  override up(): void {
    this.addSql(`
      create table delivery_lane (
        receiver_id uuid not null references receiver (id) on delete cascade,
        resource_id uuid not null,
        head_job uuid,
        head_event uuid,
        waiting uuid[] not null default '{}',
        replaced uuid[] not null default '{}',
        queued_version bigint not null default 0,
        delivered_version bigint not null default 0,
        touched_at timestamptz not null default now(),
        primary key (receiver_id, resource_id),
        check ((head_job is null) = (head_event is null)),
        check (head_job is not null or cardinality(waiting) = 0)
      )`);
    this.addSql(`create unique index delivery_lane_head_job on delivery_lane (head_job) where head_job is not null`);
    this.addSql(`create index delivery_lane_busy on delivery_lane (touched_at) where head_job is not null`);
    this.addSql(`alter table delivery_attempt drop constraint delivery_attempt_outcome_check`);
    this.addSql(`
      alter table delivery_attempt add constraint delivery_attempt_outcome_check
        check (outcome in ('success', 'http_error', 'timeout', 'connection_error', 'redirect', 'worker_lost', 'secret_unavailable', 'superseded'))`);
    this.addSql(`
      do $$
      begin
        if to_regclass('pgboss.job') is null then return; end if;
        create temporary table open_delivery on commit drop as
          select j.id, j.state, (j.data->>'eventId')::uuid as event_id, (j.data->>'receiverId')::uuid as receiver_id, e.resource_id, e.version,
                 row_number() over (partition by (j.data->>'receiverId'), e.resource_id order by (j.state = 'active') desc, e.version, j.created_on, j.id) as n
            from pgboss.job j join event e on e.id = (j.data->>'eventId')::uuid
           where j.name = 'webhook-delivery' and j.state in ('created', 'retry', 'active')
             and exists (select 1 from receiver r where r.id = (j.data->>'receiverId')::uuid);
        insert into delivery_lane (receiver_id, resource_id, head_job, head_event, waiting, queued_version)
          select h.receiver_id, h.resource_id, h.id, h.event_id,
                 coalesce((select array_agg(w.event_id order by w.version, w.n) from open_delivery w
                            where w.receiver_id = h.receiver_id and w.resource_id = h.resource_id and w.n > 1 and w.state <> 'active'), '{}'),
                 (select max(version) from open_delivery m where m.receiver_id = h.receiver_id and m.resource_id = h.resource_id)
            from open_delivery h where h.n = 1;
        delete from pgboss.job j using open_delivery o where j.name = 'webhook-delivery' and j.id = o.id and o.n > 1 and o.state <> 'active';
      end $$`);
  }
}
