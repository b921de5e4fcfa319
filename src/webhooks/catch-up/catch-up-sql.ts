// The statements of the catch-up on enable (catch-up.ts), over the event log, the receiver's lanes
// (queue/lanes.ts: queued_version / delivered_version per record) and receiver_catch_up (migration
// receiver_catch_up). No job per missed event: the records are found in SQL, and each batch hands its
// deliveries to the lanes in one enqueueing statement.
import { isoSql } from '../../db/iso-sql.ts';
import { recordLockSql } from '../../db/record-locks.ts';
import { LEFT_VIEW_EVENT_TYPE } from '../../views/left-view.ts';
import { pendingTopSql } from '../queue/lanes.ts';

// The newest event of record `resourceSql` of a type receiver `r` subscribes to (an empty subscription
// is every type): its stored body is the record's latest state as the events render it (type of
// its last change, newest resource.version, the public rendering as data). Test events (no version)
// are not records' events, nor are LEFT_VIEW events (they stand for one view's; the receiver's view
// decides: queueLatestStates). Of one version, the feed's own event comes before a copy stored
// aside (a view change's restatement: webhooks/delivery/view-routing.ts). Index event_resource_version,
// read backwards. Also the resync's (resync-sql.ts).
export const latestEventSql = (resourceSql: string) => `
  select e.id, e.version from event e
   where e.resource_id = ${resourceSql} and e.version is not null and e.type <> '${LEFT_VIEW_EVENT_TYPE}'
     and (cardinality(r.event_types) = 0 or e.type = any(r.event_types))
   order by e.version desc, e.xid is null limit 1`;

// A record the receiver missed: its latest subscribed version is above what it got and not on its way
// in the record's lane (never queued, or queued and dead-lettered or set aside when it was disabled).
const missedSql = (version: string, lane: string) =>
  `${version} > coalesce(${lane}.delivered_version, 0) and not coalesce(${pendingTopSql(lane)} >= ${version}, false)`;

/**
 * $1 receiver id, $2 include the receiver's lanes whose last queued delivery never arrived. Adds to
 * receiver_catch_up the records the receiver missed among those with an event of a subscribed type
 * from `receiver.catch_up_from` on (and, with $2, those of such lanes), and hands a queued row back
 * to be queued again when it is missed again (an event committed after its batch, by a writer whose
 * fan-out still saw the receiver disabled). Returns `xmin`, the horizon of this statement's snapshot:
 * every event it did not see has a transaction id at least that (the caller's next `catch_up_from`),
 * and `added`.
 */
export const CANDIDATES_SQL = `
  with w as (select pg_snapshot_xmin(pg_current_snapshot()) as xmin),
  r as (select id, event_types, catch_up_from from receiver where id = $1),
  changed as (
    select distinct e.resource_id from r join event e on e.xid >= r.catch_up_from
     where e.version is not null and (cardinality(r.event_types) = 0 or e.type = any(r.event_types))
    union
    select l.resource_id from delivery_lane l
     where $2::boolean and l.receiver_id = $1 and l.head_job is null and l.queued_version > l.delivered_version),
  latest as (
    select c.resource_id, t.version from changed c cross join r cross join lateral (${latestEventSql('c.resource_id')}) t),
  missed as (
    select x.resource_id from latest x
      left join delivery_lane l on l.receiver_id = $1 and l.resource_id = x.resource_id
     where ${missedSql('x.version', 'l')}),
  added as (
    insert into receiver_catch_up as c (receiver_id, resource_id)
    select $1, resource_id from missed order by resource_id
    on conflict (receiver_id, resource_id) do update set queued_at = null, version = null where c.queued_at is not null
    returning 1)
  select (select xmin::text from w) as xmin, (select count(*)::int from added) as added`;

/** $1 receiver id: the rows of its previous catch-up that were queued (those not queued yet stay, part of the new one). */
export const FORGET_QUEUED_SQL = `delete from receiver_catch_up where receiver_id = $1 and queued_at is not null`;

/** $1 receiver id, $2 the horizon from which its next sweep looks (CANDIDATES_SQL's xmin). */
export const START_SQL = `update receiver set catch_up_from = $2::xid8, catch_up_started_at = now() where id = $1`;

/**
 * $1 receiver id, $2 batch size: the next records to queue from `table` (receiver_catch_up here, or
 * receiver_resync: resync-sql.ts), locked (two runs of one catch-up share the work), and each record's
 * advisory lock taken as the catalog's writers take it (db/record-locks.ts), so no writer of these
 * records is between its fan-out and its commit while the batch reads their latest events and enqueues: a
 * later change of one is fanned out behind its catch-up delivery, in its lane. The locks are taken in
 * the subquery's order.
 */
export const pickSql = (table: string) => `
  with picked as (
    select resource_id::text as id from ${table}
     where receiver_id = $1 and queued_at is null
     order by resource_id limit $2
       for update skip locked)
  select id, ${recordLockSql('id')} from (select id from picked order by id) ordered`;
export const PICK_SQL = pickSql('receiver_catch_up');

/**
 * $1 receiver id, $2 the picked record ids (their locks held): each record's latest subscribed
 * event, and whether the receiver missed it; the rows are marked queued (with the version the
 * receiver is brought to) in the same statement, unless the receiver is disabled again (then
 * nothing is marked, and every row says enabled = false). No row: the receiver is gone.
 */
export const BATCH_SQL = `
  with r as (select id, enabled, event_types from receiver where id = $1),
  latest as (
    select c.resource_id, t.id as event_id, coalesce(t.version, 0) as version
      from unnest($2::uuid[]) as c (resource_id) cross join r
      left join lateral (${latestEventSql('c.resource_id')}) t on true),
  marked as (
    update receiver_catch_up c set queued_at = now(), version = x.version
      from latest x
     where c.receiver_id = $1 and c.resource_id = x.resource_id and (select enabled from r)
    returning c.resource_id)
  select (select enabled from r) as enabled, x.event_id::text as "eventId",
         x.event_id is not null and (${missedSql('x.version', 'l')}) as missed
    from latest x
    left join delivery_lane l on l.receiver_id = $1 and l.resource_id = x.resource_id`;

/**
 * $1 receiver id, $2 the horizon its sweep looked from, $3 where the next enable looks from (null:
 * nothing more to look for); unless it was disabled (and maybe enabled) again since.
 */
export const FINISH_SQL = `update receiver set catch_up_from = $3::xid8 where id = $1 and enabled and catch_up_from = $2::xid8`;

/** $1 a pg_snapshot: how many of the transactions open at that snapshot are still open. */
export const STILL_OPEN_SQL = `select count(*)::int as open from pg_snapshot_xip($1::pg_snapshot) as x where pg_xact_status(x) = 'in progress'`;

/**
 * The records of a receiver's last catch-up or resync as JSON, over `table` (receiver_catch_up,
 * receiver_resync) aliased `c` and the records' lanes aliased `l`, for receiver `r` (an alias of the
 * receiver table): null when `startedAt` (its column of r) is null, else the records in it (`total`),
 * `queued`, those for which `pending` holds, and `startedAt`; `joins` adds relations, `extra` more
 * `, 'key', value` pairs.
 */
export const progressJsonSql = (
  r: string,
  of: { table: string; startedAt: string; pending: string; joins?: string; extra?: string },
) => `
  case when ${r}.${of.startedAt} is null then null else (
    select json_build_object('total', count(*)::int, 'queued', count(c.queued_at)::int,
             'pending', count(*) filter (where ${of.pending})::int,
             'startedAt', ${isoSql(`${r}.${of.startedAt}`)}${of.extra ?? ''})
      from ${of.table} c
      left join delivery_lane l on l.receiver_id = c.receiver_id and l.resource_id = c.resource_id${of.joins ?? ''}
     where c.receiver_id = ${r}.id) end`;

/**
 * The catch-up of receiver `r` (an alias of the receiver table) as JSON, null when it never had one:
 * records in it, queued, and pending (not queued yet, or queued and the lane's delivered version has
 * not reached the row's: not yet acknowledged, or dead-lettered), but for the records of a resync
 * started since (`rr`): it sends them again, its lanes forget what they delivered
 * (resync-sql.ts), and its own progress counts them (found from outside: a catch-up finished long
 * before showed 201 pending while a resync ran, and for as long as the receiver stayed disabled).
 */
export const catchUpJsonSql = (r: string) =>
  progressJsonSql(r, {
    table: 'receiver_catch_up',
    startedAt: 'catch_up_started_at',
    joins: `
      left join receiver_resync rr on rr.receiver_id = c.receiver_id and rr.resource_id = c.resource_id
            and ${r}.resync_started_at >= ${r}.catch_up_started_at`,
    pending: 'rr.resource_id is null and (c.queued_at is null or coalesce(l.delivered_version, 0) < c.version)',
  });

/** Every receiver that had a catch-up, with its pending records (the /metrics gauge). Parameterless. */
export const PENDING_SQL = `
  select r.id::text as "receiverId", (${catchUpJsonSql('r')} ->> 'pending')::int as pending
    from receiver r where r.catch_up_started_at is not null order by r.id`;
