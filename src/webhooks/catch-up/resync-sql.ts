// The statements of a resync on demand (resync.ts), over the catalog, the event log, the receiver's
// lanes (queue/lanes.ts) and receiver_resync (migration receiver_resync_and_rate_cap). They follow the
// catch-up's (catch-up-sql.ts: the same record locks, the same latest event of a subscribed type),
// except in what a record needs: the receiver lost its copy, so a record's latest state is sent even
// when it was delivered before, unless that very version is already on its way in the record's lane;
// and a published record whose events are all gone gets one made of its current state.
import { isoSql } from '../../db/iso-sql.ts';
import { deadLetterEventsSql } from '../queue/dead-letters.ts';
import { pendingTopSql } from '../queue/lanes.ts';
import { latestEventSql, pickSql, progressJsonSql } from './catch-up-sql.ts';
import { LEFT_VIEW_EVENT_TYPE } from '../../views/left-view.ts';

/** $1 receiver id: the rows of its previous resync that were queued (those not queued yet stay, part of the new one). */
export const RESYNC_FORGET_QUEUED_SQL = `delete from receiver_resync where receiver_id = $1 and queued_at is not null`;

/**
 * $1 receiver id, $2 since (timestamptz) or null. The records of the resync: with $2, every record
 * with an event of a type the receiver subscribes to that occurred at or after $2 (a record archived
 * or deleted since is among them: its removal is its latest state), and every published record
 * updated at or after $2 (its events may be pruned: learning_opportunity_published_order); without,
 * every published record. For a receiver with a view, `inView` (a condition over the record's
 * list_entry row `le`, its values bound from $3: views/view.ts viewSql over listEntryFacetsSql) keeps
 * the published records to those in it (records changed since $2 stay: leaving is their news).
 * Their lanes forget the version delivered before (see `forgotten`). Returns `added` (rows left by a
 * resync cut short are kept, not counted again).
 */
export const resyncCandidatesSql = (inView: string | null) => `
  with r as (select id, event_types from receiver where id = $1),
  records as (
    select lo.id as resource_id from learning_opportunity lo
     where lo.status = 'PUBLISHED' and ($2::timestamptz is null or lo.updated_at >= $2::timestamptz)${
       inView
         ? `
       and exists (select 1 from list_entry le where le.id = lo.id and ${inView})`
         : ''
     }
    union
    select e.resource_id from r join event e on e.occurred_at >= $2::timestamptz
     where e.version is not null and (cardinality(r.event_types) = 0 or e.type = any(r.event_types))),
  added as (
    insert into receiver_resync (receiver_id, resource_id)
    select $1, resource_id from records order by resource_id
    on conflict (receiver_id, resource_id) do nothing
    returning 1),
  -- The receiver lost its copy: what its lanes delivered before says nothing of what it holds now.
  -- Kept, that version made a dead letter of the resync's own delivery read as delivered (the
  -- resync done, the replay skipping it as superseded, the catch-up passing it over). Locked in
  -- key order, as every writer of lanes locks them.
  forgotten as (
    select l.receiver_id, l.resource_id from delivery_lane l
     where l.receiver_id = $1 and l.delivered_version > 0 and l.resource_id in (select resource_id from records)
     order by l.resource_id for update of l),
  reset as (
    update delivery_lane l set delivered_version = 0
      from forgotten f where l.receiver_id = f.receiver_id and l.resource_id = f.resource_id)
  select count(*)::int as added from added`;

/** $1 receiver id, $2 since or null: the resync starts now. */
export const RESYNC_START_SQL = `update receiver set resync_started_at = now(), resync_since = $2::timestamptz where id = $1`;

/**
 * $1 receiver id: of its last resync, the records whose delivery is still on its way (its event waits,
 * is in flight or retries in the record's lane), and those not queued yet.
 */
export const RESYNC_UNDERWAY_SQL = `
  select count(*) filter (where c.queued_at is not null and c.event_id is not null
                            and (l.head_event = c.event_id or c.event_id = any(l.waiting)))::int as "onTheWay",
         count(*) filter (where c.queued_at is null)::int as "notQueued"
    from receiver_resync c
    left join delivery_lane l on l.receiver_id = c.receiver_id and l.resource_id = c.resource_id
   where c.receiver_id = $1`;

/** $1 receiver id, $2 batch size: the next records to queue, locked, each under its writers' advisory lock (pickSql). */
export const RESYNC_PICK_SQL = pickSql('receiver_resync');

// A published record with no stored event at all (retention pruned them after EVENT_RETENTION_DAYS,
// or it was seeded without any) gets one made for it: its state as the catalog holds it (the stored
// doc, spliced in as events/event-body.ts renders a body), of the type LEARNING_OPPORTUNITY_PUBLISHED
// (LEARNING_OPPORTUNITY_UPDATED for a receiver that subscribes to that and not to PUBLISHED; none for
// one that subscribes to neither), at the record's current resource.version (1 for a record that
// never had one: its first), occurred now, outside the change feed (xid and position null, as a test
// event: migration receiver_resync_and_rate_cap). The record's lock is held: no writer bumps its
// version meanwhile.
const MADE_TYPE_SQL = `case when cardinality(r.event_types) = 0 or 'LEARNING_OPPORTUNITY_PUBLISHED' = any(r.event_types) then 'LEARNING_OPPORTUNITY_PUBLISHED'
                            when 'LEARNING_OPPORTUNITY_UPDATED' = any(r.event_types) then 'LEARNING_OPPORTUNITY_UPDATED' end`;
const madeBodySql = (m: string, lo: string) =>
  `'{"id":' || to_json(${m}.id::text)::text || ',"type":' || to_json(${m}.type)::text || ',"occurredAt":' || to_json(${isoSql(`${m}.at`)})::text
   || ',"resource":{"type":"LEARNING_OPPORTUNITY","id":' || to_json(${lo}.id::text)::text || ',"version":' || ${m}.version::text || '},"data":' || ${lo}.doc || '}'`;

/**
 * $1 receiver id, $2 the picked record ids (their locks held): each record's latest event of a
 * subscribed type (one made for a published record that has no stored event, see above), and
 * whether to send it (`missed`): always, unless that version is already on its way in the record's
 * lane (that version or a newer one pending there: the receiver gets it anyway). A view
 * change's rows (`restated`) are sent even then: the delivery on its way was routed by the view
 * before (a record that left the view would get its PUBLISHED and never the LEFT_VIEW). The rows are
 * marked queued with that event in the same statement, unless the receiver is disabled (then nothing
 * is marked or made, and every row says enabled = false). A record with no such event (none of its
 * events is of a subscribed type, or it is not published and its events were pruned) is marked with
 * none: nothing to send (`skipped`). No row: the receiver is gone.
 */
const resyncBatchSql = (restated: boolean) => `
  with r as (select id, enabled, event_types from receiver where id = $1),
  latest as (
    select c.resource_id, t.id as event_id, t.version
      from unnest($2::uuid[]) as c (resource_id) cross join r
      left join lateral (${latestEventSql('c.resource_id')}) t on true),
  to_make as materialized (
    select lo.id as resource_id, gen_random_uuid() as id, ${MADE_TYPE_SQL} as type,
           coalesce((select v.version from resource_version v where v.resource_id = lo.id), 0) as version, now() as at
      from latest x cross join r
      join learning_opportunity lo on lo.id = x.resource_id and lo.status = 'PUBLISHED'
     where x.event_id is null and r.enabled
       -- A LEFT_VIEW row (one view's, kept outside the feed) is no state of the record: one whose
       -- feed events were pruned and that kept one was skipped, never sent (found from outside).
       and not exists (select 1 from event e where e.resource_id = lo.id and e.version is not null
                          and e.type <> '${LEFT_VIEW_EVENT_TYPE}')),
  first_versions as (
    insert into resource_version (resource_id, version)
    select resource_id, 1 from to_make where type is not null and version = 0 order by resource_id
    on conflict (resource_id) do nothing),
  made as (
    insert into event (id, type, resource_id, version, occurred_at, body, xid, position, view_after)
    select m.id, m.type, lo.id, m.version, m.at, ${madeBodySql('m', 'lo')}, null, null, view_facets(lo.doc::jsonb)
      from (select resource_id, id, type, greatest(version, 1) as version, at from to_make where type is not null) m
      join learning_opportunity lo on lo.id = m.resource_id
    returning id, resource_id, version),
  chosen as (
    select x.resource_id, coalesce(x.event_id, m.id) as event_id, coalesce(x.version, m.version) as version
      from latest x left join made m on m.resource_id = x.resource_id),
  marked as (
    update receiver_resync c set queued_at = now(), version = x.version, event_id = x.event_id
      from chosen x
     where c.receiver_id = $1 and c.resource_id = x.resource_id and (select enabled from r)
    returning c.resource_id)
  select (select enabled from r) as enabled, x.event_id::text as "eventId",
         x.event_id is not null${restated ? '' : ` and not coalesce(${pendingTopSql('l')} >= x.version, false)`} as missed
    from chosen x
    left join delivery_lane l on l.receiver_id = $1 and l.resource_id = x.resource_id`;
/**
 * $1 receiver id, $2 resource ids, $3 event ids, $4 versions: the event actually sent for each record
 * when routing replaced its newest (a LEFT_VIEW for a view receiver, a view change's restatement), so
 * that the progress finds it in the record's lane.
 */
export const RESYNC_SENT_SQL = `
  update receiver_resync c set event_id = x.event_id, version = x.version
    from unnest($2::uuid[], $3::uuid[], $4::bigint[]) as x (resource_id, event_id, version)
   where c.receiver_id = $1 and c.resource_id = x.resource_id`;

/** A resync's batch (see above). */
export const RESYNC_BATCH_SQL = resyncBatchSql(false);
/** A view change's batch: its records are restated (view-change.ts), sent even with their latest event on its way. */
export const RESYNC_RESTATED_BATCH_SQL = resyncBatchSql(true);

/**
 * The resync of receiver `r` (an alias of the receiver table) as JSON, null when it never had one:
 * records in it, queued, pending (not queued yet, or its event still in the record's lane, or a dead
 * letter not delivered since: `installed`, pg-boss's tables exist; a disable's dead letter of an
 * event that the catch-up then delivered kept the resync pending for good), skipped (queued with
 * nothing to send) and since.
 */
export const resyncJsonSql = (r: string, installed: boolean) =>
  progressJsonSql(r, {
    table: 'receiver_resync',
    startedAt: 'resync_started_at',
    pending: `c.queued_at is null or (c.event_id is not null and (l.head_event = c.event_id or c.event_id = any(l.waiting)${installed ? ' or (d.event_id is not null and coalesce(l.delivered_version, 0) < c.version)' : ''}))`,
    joins: installed ? `\n      left join (${deadLetterEventsSql(`${r}.id`)}) d on d.event_id = c.event_id` : '',
    extra: `, 'skipped', count(*) filter (where c.queued_at is not null and c.event_id is null)::int, 'since', ${isoSql(`${r}.resync_since`)}`,
  });

/** Every receiver that had a resync, with its pending records (the /metrics gauge). Parameterless. */
export const resyncPendingSql = (installed: boolean) => `
  select r.id::text as "receiverId", (${resyncJsonSql('r', installed)} ->> 'pending')::int as pending
    from receiver r where r.resync_started_at is not null order by r.id`;
