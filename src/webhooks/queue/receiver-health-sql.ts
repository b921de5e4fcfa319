// Receiver health as SQL common table expressions, run inside the statement that settles a group of
// attempts (settle-jobs.ts SETTLE_SQL), so that keeping it costs no round trip and no commit of its own.
// It lives here, beside that statement, its only user: receivers/ reads what it writes, never its SQL.
// What it keeps, and what follows a disable, is described in receivers/auto-disable.ts.
//
// Precision: a healthy receiver's last success time is kept to within a second (see health_due).
//
// Input: a CTE named `health_in` with one row per attempt (receiver_id uuid, ok boolean, gone
// boolean, started_at timestamptz, counted boolean, pause_until timestamptz). Output: CTEs
// `health_next` (id, reason, ...) with a row per receiver to write, `reason` set for each receiver
// this statement disables, and `health_updated` (id, reason, failing_since), the rows written. The
// other CTEs' names start with `health_` too. `hoursParam` is the placeholder of
// WEBHOOK_DISABLE_AFTER_HOURS (an int; 0 or null = never for failures).
//
// Backpressure (delivery/retry-policy.ts): an attempt with `counted` false (a `throttled` answer: 429
// or 503 with Retry-After) says nothing of the receiver's health: it neither starts, extends nor ends
// `failing_since`, and cannot disable. `pause_until` (set for every 429/503 with a valid Retry-After,
// counted or not) moves `receiver.throttled_until` forward, never back.
//
// Rows are locked in id order (FOR NO KEY UPDATE, which does not conflict with the attempt inserts'
// foreign-key locks), so that two statements settling overlapping receivers cannot deadlock.
/** Why this SQL disables a receiver: failing too long, or answered 410 Gone (receiver-reads.ts adds `manual`). */
export type AutoDisableReason = 'failing' | 'gone';

export function receiverHealthCtes(hoursParam: string): string {
  const hours = `coalesce(${hoursParam}::int, 0)`;
  return `
  health_sum as (
    select receiver_id, max(started_at) filter (where counted and ok) as last_ok, max(started_at) filter (where counted and not ok) as last_fail,
           bool_or(counted) as counted, max(pause_until) as pause_until
      from health_in group by receiver_id
  ), health_after_ok as (
    -- after the group's last success: the first failure; and whether a 410 came at all (a 410 disables
    -- whatever else the group holds, so that the same answers disable however the worker grouped them)
    select s.receiver_id, s.last_ok, s.last_fail, s.counted, s.pause_until,
           min(a.started_at) filter (where a.counted and not a.ok and a.started_at > coalesce(s.last_ok, '-infinity')) as first_fail,
           coalesce(bool_or(a.counted and a.gone), false) as gone
      from health_sum s join health_in a using (receiver_id)
     group by s.receiver_id, s.last_ok, s.last_fail, s.counted, s.pause_until
  ), health_due as (
    -- A receiver that is healthy and whose recorded last success is less than a second older than
    -- this group's is left alone: under steady success its row is written (and locked) about once a
    -- second, not by every group, so settling statements do not queue behind each other on a busy
    -- receiver's row. Read without a lock: if a concurrent settlement has just recorded a failure,
    -- the next group sees failing_since set and writes. A receiver that asked to be left alone for
    -- longer than recorded is written too.
    select s.receiver_id from health_sum s join receiver r on r.id = s.receiver_id
     where (s.counted and (s.last_fail is not null or r.failing_since is not null or r.last_success_at is null or s.last_ok >= r.last_success_at + interval '1 second'))
        or s.pause_until > coalesce(r.throttled_until, '-infinity')
  ), health_locked as (
    select id, enabled, failing_since from receiver where id in (select receiver_id from health_due) order by id for no key update
  ), health_next as (
    select l.id, h.last_ok, h.last_fail, f.failing_since, h.pause_until,
           case when not l.enabled or not h.counted then null
                when h.gone then 'gone'
                when ${hours} > 0 and f.failing_since <= h.last_fail - make_interval(hours => ${hours}) then 'failing' end as reason
      from health_locked l join health_after_ok h on h.receiver_id = l.id
      cross join lateral (select case when not h.counted then l.failing_since when h.first_fail is null then null
                                      when h.last_ok is null then coalesce(l.failing_since, h.first_fail) else h.first_fail end as failing_since) f
  ), health_updated as (
    update receiver r
       set last_success_at = greatest(r.last_success_at, n.last_ok),
           last_failure_at = greatest(r.last_failure_at, n.last_fail),
           failing_since = n.failing_since,
           throttled_until = greatest(r.throttled_until, n.pause_until),
           enabled = r.enabled and n.reason is null,
           disabled_reason = coalesce(n.reason, r.disabled_reason),
           disabled_at = case when n.reason is null then r.disabled_at else now() end
      from health_next n
     where r.id = n.id
    returning r.id, n.reason, n.failing_since
  )`;
}
