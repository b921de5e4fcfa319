// Delivery lanes: per-record order per receiver (docs/contract.md, "Delivery guarantees"; the design and the rejected
// alternatives are in docs/architecture.md, "Ordered delivery").
//
// A lane is one row of `delivery_lane` per (receiver, resource). Its `head_job` is the one pg-boss job
// of that pair that may exist (waiting, retrying or in flight); later deliveries of the pair wait in
// the lane's `waiting` (event ids, oldest first) and are not in the queue at all. So pg-boss's fetch
// is the plain one (no per-key policy to evaluate: the queue holds only lane heads), per-receiver
// concurrency and priorities stay what they were, and order needs no help from the fetch:
// - enqueueing (the writers' fan-out, redelivery, replays: enqueueSql) upserts the lanes, in key
//   order, and inserts a job only for a lane that had no head; the lane's row lock serialises it with
//   the settling statement, and the decision is made on the locked row, so neither can miss the other;
// - the settling statement (settle-jobs.ts, LANE_CTES) keeps the head on a retry (the new job's id
//   becomes the head) and, when the head is done or dead, makes the next waiting event the head (a new
//   job) in the same statement, locking its lanes in key order first (no deadlock with writers);
// - a lane whose head job vanished without being settled (pg-boss dead-lettered a job whose workers
//   kept dying, or dropped one past its retention) is moved on by sweepLanes, which only touches
//   lanes unchanged for a while (a lane changed since its snapshot fails the re-check of touched_at).
// LATEST_STATE receivers: a new event replaces the lane's waiting list, and a head that is still
// waiting (not in flight) is deleted and replaced too; each replaced delivery gets a `superseded`
// attempt row.
import type { Pool } from 'pg';
import { BOSS_SCHEMA, DELIVERY_QUEUE, NOTIFY_CHANNEL_SQL } from './boss.ts';
import { recordLockSql } from '../../db/record-locks.ts';

/** The pg-boss columns of a new delivery job with the queue's own settings (what boss.insert() writes; boss-schema.test.ts compares). */
export const JOB_SETTINGS_COLUMNS =
  'expire_seconds, deletion_seconds, retry_limit, retry_delay, retry_backoff, retry_delay_max, policy, dead_letter, heartbeat_seconds';
export const jobSettings = (q: string) =>
  `${q}.expire_seconds, ${q}.deletion_seconds, ${q}.retry_limit, ${q}.retry_delay, ${q}.retry_backoff, ${q}.retry_delay_max, ${q}.policy, ${q}.dead_letter, ${q}.heartbeat_seconds`;

/**
 * The highest version on its way in lane `lane`, null when none is: its waiting events' (the settling
 * statement or the sweeper moves them up, whatever becomes of the head) and its head's. Not
 * `queued_version`, the highest ever queued: that one may have been dead-lettered while an older
 * one, replayed, is the head now (replays skipping the newest as pending left receivers on an older
 * version for good, found from outside). `liveHead`: the head counts only while its job is live
 * (waiting, retrying or in flight; one pg-boss dead-lettered, a lost worker's, is not on its way: a
 * replay is the only way it arrives). That reads pg-boss's table, which the catch-up and the resync
 * must not: the CLI runs them on a database whose queue pg-boss has not made yet (they count a
 * head while it is there, and the sweeper moves a lane whose head job is gone).
 */
export const pendingTopSql = (lane: string, liveHead = false) => `greatest(
    (select max(p.version) from event p where p.id = any(${lane}.waiting)),
    (select p.version from event p where p.id = ${lane}.head_event and ${lane}.head_job is not null${
      liveHead
        ? ` and exists (
       select 1 from ${BOSS_SCHEMA}.job j where j.name = '${DELIVERY_QUEUE}' and j.id = ${lane}.head_job and j.state <= 'active')`
        : ''
    }))`;

// $1 event ids, $2 receiver ids, $3 priorities; a replay's statement (`replay`) also $4, skip also
// the version the receiver already has. The writers' fan-out runs the statement without the replay's
// parts (no CTE, join or condition of theirs to plan or run in every write).
// pending: each lane of this call once, the highest version on its way in it (a lane of thousands of
// waiting events is read once per batch, not once per delivery).
// d: each delivery with its resource, version and the lane's state as of this statement's snapshot
// (a replay's caller holds the records' locks: redeliver.ts, so no writer's fan-out is between its
// lane update and its commit).
// skip: replays only; a delivery whose record has a newer successful delivery to the receiver, or a
// newer one on its way, would regress the receiver (docs/contract.md, "Delivery guarantees"); with $4
// (dead letters replayed), one of the version it already got (a catch-up on enable delivers a
// record's latest event, often the very one that was dead-lettered) would repeat it, as would the
// version on its way (the catch-up's, still waiting).
// g: per lane, the new events in version order, and the id of the job that becomes the head if the
// lane has none (or a LATEST_STATE head still waiting, dropped_heads). A receiver that asked to be left
// alone (receiver.throttled_until: a 429/503 with Retry-After, delivery/retry-policy.ts) gets its new
// jobs deferred until then (`not_before`).
const enqueueSql = (replay: boolean) => `
  with ${
    replay
      ? `pending as materialized (
    select l.receiver_id, l.resource_id, ${pendingTopSql('l', true)} as top
      from (select distinct u.receiver_id, e.resource_id from unnest($1::uuid[], $2::uuid[]) as u (event_id, receiver_id)
              join event e on e.id = u.event_id) k
      join delivery_lane l on l.receiver_id = k.receiver_id and l.resource_id = k.resource_id),`
      : ''
  }
  d as (
    select u.event_id, u.receiver_id, u.priority, e.resource_id, e.version, r.delivery_mode = 'latest_state' as latest, r.throttled_until,
           ${
             replay
               ? `case when e.version < coalesce(l.delivered_version, 0) then true
                when e.version < pt.top then true
                when $4::boolean then coalesce(e.version = l.delivered_version or e.version = pt.top, false)
                else false end`
               : 'false'
           } as skip
      from unnest($1::uuid[], $2::uuid[], $3::int[]) with ordinality as u (event_id, receiver_id, priority, n)
      join event e on e.id = u.event_id
      join receiver r on r.id = u.receiver_id
      left join delivery_lane l on l.receiver_id = u.receiver_id and l.resource_id = e.resource_id${
        replay
          ? `
      left join pending pt on pt.receiver_id = u.receiver_id and pt.resource_id = e.resource_id`
          : ''
      }),
  g as materialized (
    select receiver_id, resource_id, bool_or(latest) as latest, max(priority) as priority, max(version) as top_version,
           array_agg(event_id order by version, event_id) as events, gen_random_uuid() as job_id, max(throttled_until) as not_before
      from d where not skip group by receiver_id, resource_id),
  -- Driven from this call's LATEST_STATE lanes, and not run at all without one: joined the other way
  -- round, the planner read every queued job of the queue in each writer's enqueue (26 of 27 ms at a
  -- backlog of 2,700 jobs).
  latest_heads as materialized (
    select l.head_job, l.receiver_id from g join delivery_lane l on l.receiver_id = g.receiver_id and l.resource_id = g.resource_id
     where g.latest and l.head_job is not null),
  dropped_heads as (
    delete from ${BOSS_SCHEMA}.job j using latest_heads h
     where (select count(*) from latest_heads) > 0
       and j.name = '${DELIVERY_QUEUE}' and j.id = h.head_job and j.state < 'active'
    returning j.id, h.receiver_id, (j.data->>'eventId')::uuid as event_id),
  lanes as (
    insert into delivery_lane as l (receiver_id, resource_id, head_job, head_event, waiting, queued_version)
    select receiver_id, resource_id, job_id,
           case when latest then events[cardinality(events)] else events[1] end,
           case when latest then '{}'::uuid[] else events[2:] end,
           top_version
      from g order by receiver_id, resource_id
    on conflict (receiver_id, resource_id) do update set
      head_job = case when l.head_job is null or l.head_job in (select id from dropped_heads) then excluded.head_job else l.head_job end,
      head_event = case when l.head_job is null or l.head_job in (select id from dropped_heads) then excluded.head_event else l.head_event end,
      waiting = case when l.head_job is null or l.head_job in (select id from dropped_heads) then excluded.waiting
                     when (select delivery_mode = 'latest_state' from receiver where id = l.receiver_id) then array[excluded.head_event]
                     else l.waiting || excluded.head_event || excluded.waiting end,
      replaced = case when (select delivery_mode = 'latest_state' from receiver where id = l.receiver_id) then l.waiting else '{}' end,
      queued_version = greatest(l.queued_version, excluded.queued_version),
      touched_at = now()
    returning l.receiver_id, l.resource_id, l.head_job, l.head_event, l.replaced),
  jobs as (
    insert into ${BOSS_SCHEMA}.job (id, name, data, group_id, priority, start_after, created_on, keep_until, ${JOB_SETTINGS_COLUMNS})
    select n.head_job, q.name, jsonb_build_object('eventId', n.head_event, 'receiverId', n.receiver_id, 'attempt', 1), n.receiver_id::text, g.priority,
           greatest(${BOSS_SCHEMA}.job_now(), g.not_before), ${BOSS_SCHEMA}.job_now(), ${BOSS_SCHEMA}.job_now() + q.retention_seconds * interval '1 second', ${jobSettings('q')}
      from lanes n
      join g on g.receiver_id = n.receiver_id and g.resource_id = n.resource_id and n.head_job = g.job_id
      join ${BOSS_SCHEMA}.queue q on q.name = '${DELIVERY_QUEUE}'
    returning id),
  -- Of this call's deliveries: the skipped replays, and LATEST_STATE's older ones of the same record.
  superseded_here as (
    select receiver_id, unnest(events[1:cardinality(events) - 1]) as event_id from g where latest
    union all select receiver_id, event_id from d where skip),
  -- With those of earlier calls that these replace (LATEST_STATE).
  superseded as (
    select receiver_id, event_id from superseded_here
    union all select receiver_id, event_id from dropped_heads
    union all select receiver_id, unnest(replaced) from lanes),
  woken as (
    select pg_notify(${NOTIFY_CHANNEL_SQL}, '${DELIVERY_QUEUE}') from (select 1 from jobs limit 1) any_job)
  select (select count(*)::int from d) - (select count(*)::int from superseded_here) as queued,
         (select array_agg(receiver_id) from superseded_here) as skipped_receivers,
         (select array_agg(event_id) from superseded) as superseded_events,
         (select array_agg(receiver_id) from superseded) as superseded_receivers,
         (select count(*)::int from woken) as woken`;
const ENQUEUE_SQL = enqueueSql(false);
const REPLAY_ENQUEUE_SQL = enqueueSql(true);

// The `superseded` attempt rows, written by a statement of their own only when there are any: an
// insert into delivery_attempt in every enqueueing statement would make each writer take that
// table's lock.
const RECORD_SUPERSEDED_SQL = `
  insert into delivery_attempt (event_id, receiver_id, attempt, started_at, duration_ms, outcome)
  select s.event_id, s.receiver_id, 1, now(), 0, 'superseded' from unnest($1::uuid[], $2::uuid[]) as s (event_id, receiver_id)
   where exists (select 1 from event e where e.id = s.event_id) and exists (select 1 from receiver r where r.id = s.receiver_id)`;

/**
 * Takes, in the caller's transaction, the locks of the records of `eventIds` (db/record-locks.ts),
 * before a replay's enqueue: a writer holds its records' locks from its fan-out to its commit, so the
 * replay's statement then sees that writer's lane as committed. Without them a replay judged the lane by a
 * snapshot from before a write committing beside it, and could queue a version behind a newer one.
 */
export async function lockRecordsOfEvents(run: RunQuery, eventIds: readonly string[]): Promise<void> {
  if (eventIds.length === 0) return;
  await run(
    `select count(${recordLockSql('id')}) from (
       select distinct e.resource_id::text as id from event e where e.id = any($1::uuid[]) and e.resource_id is not null order by 1) ordered`,
    [eventIds],
  );
}

/** A delivery to enqueue: an event to a receiver (attempt 1), with an optional pg-boss priority. */
export type OrderedDelivery = { eventId: string; receiverId: string; priority?: number };
/** Of the deliveries given (not earlier calls' they replace): `queued`; `superseded`, the receiver of each not to be sent (skipped replays; LATEST_STATE: older ones of the same record). */
export type EnqueueResult = { queued: number; superseded: string[] };

/** Runs one statement with bound parameters and returns its rows (a pool, a client, pg-boss's Db adapter). */
export type RunQuery = (text: string, values: unknown[]) => Promise<{ rows: unknown[] }>;

/**
 * Enqueues deliveries through their lanes, in the caller's transaction (`run`). `replay: true`
 * (replays, redeliveries) skips the ones a newer delivery supersedes (counted in `superseded`, with
 * an attempt row); `skipDelivered` (dead letters replayed) also those of a version the receiver
 * already got. Deliveries of events or receivers that do not exist are ignored.
 */
export async function enqueueOrdered(
  run: RunQuery,
  deliveries: readonly OrderedDelivery[],
  options: { replay?: boolean; skipDelivered?: boolean } = {},
): Promise<EnqueueResult> {
  if (deliveries.length === 0) return { queued: 0, superseded: [] };
  const values = [
    deliveries.map((d) => d.eventId),
    deliveries.map((d) => d.receiverId),
    deliveries.map((d) => d.priority ?? 0),
  ];
  const { rows } = await (options.replay
    ? run(REPLAY_ENQUEUE_SQL, [...values, options.skipDelivered ?? false])
    : run(ENQUEUE_SQL, values));
  const row = rows[0] as {
    queued: number;
    skipped_receivers: string[] | null;
    superseded_events: string[] | null;
    superseded_receivers: string[] | null;
  };
  if (row.superseded_events?.length)
    await run(RECORD_SUPERSEDED_SQL, [row.superseded_events, row.superseded_receivers]);
  return { queued: row.queued, superseded: row.skipped_receivers ?? [] };
}

/**
 * The lane part of the settling statement (settle-jobs.ts), over its relations `k` (the settlements:
 * job_id, event_id, receiver_id, next, next_job, outcome, held, claim), `disabled` (receivers this
 * statement disables) and `set_aside` (waiting jobs of disabled receivers taken out: job_id). Defines:
 * - lane_moved: the lanes whose head was settled here: a retry keeps the lane (its new job `next_job`
 *   is the head); done or dead moves the next waiting event up or leaves the lane idle. The event
 *   moved up rides on the settled job itself when the settling worker claims it (`reused`, the
 *   caller updates that job), else on a new job `next_job` made by the caller from lane_promoted;
 *   `followed` when more events wait behind it. A receiver disabled (here or before) takes its
 *   waiting events out as dead letters (lane_set_aside);
 * - lanes_aside: the lanes of heads that set_aside took out, emptied the same way.
 */
export const LANES_ASIDE_CTE = `lanes_aside as (
    update delivery_lane l set head_job = null, head_event = null, waiting = '{}', replaced = l.waiting, touched_at = now()
     where (select count(*) from set_aside) > 0 and l.head_job in (select job_id from set_aside)
    returning l.receiver_id, l.replaced)`;

export const LANE_CTES = `
  lane_locked as materialized (
    select l.receiver_id, l.resource_id, k.job_id, k.next, k.next_job, k.claim, k.outcome = 'success' as ok, e.version,
           (k.receiver_id in (select id from disabled) or not k.receiver_enabled) as stop,
           coalesce(r.delivery_mode = 'latest_state', false) as latest, cardinality(l.waiting) as waiting_n
      from k
      join delivery_lane l on l.head_job = k.job_id
      left join event e on e.id = k.event_id
      left join receiver r on r.id = k.receiver_id
     where k.held
     order by l.receiver_id, l.resource_id
       for update of l),
  -- keep: a retry stays the head, unless a newer event waits behind it for a LATEST_STATE receiver
  -- (then the retry is superseded: not enqueued, and the newer one moves up).
  -- reuse (the settling worker claims, k.claim): the next waiting event moves up on the settled job
  -- itself (settled-claims.ts REUSED_CTE), so head_job does not change. (touched_at still does: left
  -- alone, the lane's update could be a HOT one, but lookups then walked the row's chain of versions,
  -- 95 µs each on a table autovacuum had not visited, against 2-4 µs.)
  lane_next as materialized (
    select y.*, y.claim and not y.keep and not y.stop and y.waiting_n > 0 as reuse
      from (select x.*, x.next = 'retry' and not x.stop and not (x.latest and x.waiting_n > 0) as keep from lane_locked x) y),
  lane_moved as (
    update delivery_lane l set
      head_job = case when x.stop then null when x.keep then x.next_job when cardinality(l.waiting) = 0 then null
                      when x.reuse then l.head_job else x.next_job end,
      head_event = case when x.stop then null when x.keep then l.head_event when cardinality(l.waiting) = 0 then null else l.waiting[1] end,
      waiting = case when x.stop then '{}' when x.keep then l.waiting else l.waiting[2:] end,
      replaced = case when x.stop then l.waiting else '{}' end,
      delivered_version = case when x.ok then greatest(l.delivered_version, x.version) else l.delivered_version end,
      touched_at = now()
      from lane_next x
     where l.receiver_id = x.receiver_id and l.resource_id = x.resource_id
    returning l.receiver_id, l.head_job, l.head_event, x.keep as retried, x.next = 'retry' and not x.keep and not x.stop as superseded_retry, x.job_id as settled_job, l.replaced,
              cardinality(l.waiting) > 0 as followed, x.reuse as reused),
  ${LANES_ASIDE_CTE},
  lane_promoted as (
    select head_event as event_id, receiver_id, head_job as job_id, followed from lane_moved where not retried and not reused and head_job is not null),
  lane_set_aside as (
    select unnest(replaced) as event_id, receiver_id from lane_moved
    union all select unnest(replaced), receiver_id from lanes_aside)`;

// Lanes whose head job is gone unsettled (dead-lettered by pg-boss after its workers kept dying, or
// dropped past its retention), untouched for $1 ms: the next waiting event becomes the head, or the
// lane goes idle. Locked in key order, skipping locked ones; the re-check of touched_at after a lock
// wait leaves out any lane changed since this statement's snapshot. Each head job is probed by its key
// (an anti join planned on an empty queue's statistics read every delivery job per lane).
export const SWEEP_SQL = `
  with stale as materialized (
    select l.receiver_id, l.resource_id from delivery_lane l
     where l.head_job is not null and l.touched_at < now() - $1 * interval '1 millisecond'
       and (select j.state <= 'active' from ${BOSS_SCHEMA}.job j where j.name = '${DELIVERY_QUEUE}' and j.id = l.head_job) is not true
     order by l.receiver_id, l.resource_id
       for update of l skip locked),
  moved as (
    update delivery_lane l set
      head_job = case when cardinality(l.waiting) > 0 then gen_random_uuid() end,
      head_event = l.waiting[1],
      waiting = l.waiting[2:],
      touched_at = now()
      from stale s
     where l.receiver_id = s.receiver_id and l.resource_id = s.resource_id
    returning l.receiver_id, l.head_job, l.head_event),
  jobs as (
    insert into ${BOSS_SCHEMA}.job (id, name, data, group_id, start_after, created_on, keep_until, ${JOB_SETTINGS_COLUMNS})
    select m.head_job, q.name, jsonb_build_object('eventId', m.head_event, 'receiverId', m.receiver_id, 'attempt', 1), m.receiver_id::text,
           ${BOSS_SCHEMA}.job_now(), ${BOSS_SCHEMA}.job_now(), ${BOSS_SCHEMA}.job_now() + q.retention_seconds * interval '1 second', ${jobSettings('q')}
      from moved m join ${BOSS_SCHEMA}.queue q on q.name = '${DELIVERY_QUEUE}'
     where m.head_job is not null
    returning id)
  select (select count(*)::int from moved) as moved, (select count(*)::int from jobs) as promoted,
         (select count(*)::int from (select pg_notify(${NOTIFY_CHANNEL_SQL}, '${DELIVERY_QUEUE}') from (select 1 from jobs limit 1) j) w) as woken`;
/** Moves on lanes whose head job vanished unsettled (see SWEEP_SQL); returns how many lanes moved. */
export async function sweepLanes(pool: Pool, untouchedForMs: number): Promise<number> {
  const { rows } = await pool.query<{ moved: number }>(SWEEP_SQL, [untouchedForMs]);
  return rows[0]!.moved;
}
