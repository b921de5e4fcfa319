// Settling claimed delivery jobs in one statement (the attempt row, the job's deletion, the next
// attempt or a dead letter, the receivers' health). Raw SQL on pgboss.job: pg-boss cannot do it in
// one round trip.
import { BOSS_SCHEMA, DELIVERY_QUEUE, type DeliveryJobData } from './boss.ts';
import { type AutoDisableReason, receiverHealthCtes } from './receiver-health-sql.ts';
import { RECEIVER_TO_SEND_COLUMNS } from './send-rows.ts';
import { type ClaimColumns, type Claims, claimsOf, REUSED_CTE } from './settled-claims.ts';
import { LANE_CTES } from './lanes.ts';
import { PAUSED_CTE } from './receiver-pause-sql.ts';
import { FOLLOW_UPS_CTE, SET_ASIDE_CTE } from './set-aside.ts';

/** One finished (or dropped) claim to settle: its fetched attempt, what to record, what follows. */
export type JobSettlement = {
  job: { id: string; retryCount: number };
  data: DeliveryJobData;
  /** The attempt row to insert, or null for a delivery dropped unsent. */
  attempt: {
    startedAt: Date;
    durationMs: number;
    statusCode: number | null;
    error: string | null;
    excerpt: string | null;
    outcome: string;
  } | null;
  /** What follows if the claim is still ours: nothing, the next attempt (with the delivery's throttling so far), or a dead letter. */
  next: { kind: 'done' } | RetryStep | { kind: 'dead'; reason?: string };
  /** A 429/503's Retry-After (ms): its receiver is left alone that long (receiver-pause-sql.ts). */
  receiverPauseMs?: number | null;
};
type RetryStep = { kind: 'retry'; delayMs: number; throttled?: number; throttledMs?: number; lost?: number };
/** Per settlement: whether the claim was still ours (else another worker owns the follow-up), its receiver still exists, and is enabled. */
export type SettleOutcome = { held: boolean; receiverExists: boolean; receiverEnabled: boolean };
/** A receiver that the settling statement disabled (receiver-health-sql.ts): why, and since when it was failing. */
export type DisabledReceiver = { id: string; reason: AutoDisableReason; failingSince: string | null };
/** What a settling statement did beside the outcomes: receivers it disabled, and their waiting deliveries it made dead letters. */
export type SettleResult = {
  outcomes: SettleOutcome[];
  disabled: DisabledReceiver[];
  setAside: number;
  claimed: Claims;
};

// One statement, so one round trip and atomic without BEGIN/COMMIT: the fenced lock of the claimed
// jobs (`held`: state active at the fetched retry count and step: a job that expired and was handed
// to another worker, or that carries a later delivery, is not ours any more), the attempt rows (also
// for claims no longer ours: the attempt happened), for claims still ours whose receiver exists, the
// follow-up job with the queue's own settings (what boss.insert() writes; the schema test compares
// the two), the receivers' health from the recorded attempts (receiver-health-sql.ts), for a
// receiver that this disables, its waiting deliveries moved to the dead letters (SET_ASIDE_CTE, as
// for an operator's disable), and the held jobs deleted or reused (REUSED_CTE). `id = any($1)` makes
// the lock a primary-key lookup per job rather than a scan of the queue's whole backlog; the fences
// are looked up by job id in one jsonb object built once (an InitPlan), not joined with `s`: the
// planner, which expects 10 rows of an unnest, nested that join the wrong way round and scanned all
// of `s` once per job (24 of a 47 ms statement for 236 settlements). The claims are joined with the
// settlements by the settled job's id (the reused job's own). Receivers that asked to be left alone: `paused` (receiver-pause-sql.ts).
const SETTLE_SQL = `
  with s as (
    select * from unnest($1::uuid[], $2::text[], $3::uuid[], $4::uuid[], $5::int[], $6::timestamptz[], $7::int[], $8::int[],
                         $9::text[], $10::text[], $11::text[], $12::text[], $13::int[], $14::text[], $15::boolean[], $18::int[], $19::bigint[], $20::int[], $21::int[])
      with ordinality as s (job_id, fence, event_id, receiver_id, attempt, started_at, duration_ms, status_code,
                            error, excerpt, outcome, next, delay_ms, reason, record, throttled, throttled_ms, pause_ms, lost, n)),
  held as materialized (
    select j.id from ${BOSS_SCHEMA}.job j
     where j.name = '${DELIVERY_QUEUE}' and j.id = any($1::uuid[]) and j.state = 'active'
       and j.retry_count || ':' || coalesce(j.data->>'step', '0') = (select jsonb_object($1::uuid[]::text[], $2::text[])) ->> j.id::text
       for update of j),
  ${PAUSED_CTE},
  k as materialized (
    select s.*, s.job_id in (select id from held) as held, r.enabled is not null as receiver_exists,
           coalesce(r.enabled, false) as receiver_enabled,
           gen_random_uuid() as next_job, p.until as paused_until, $17::boolean and p.until is null as claim
      from s left join paused p on p.receiver_id = s.receiver_id
      left join lateral (select r.enabled from receiver r where r.id = s.receiver_id) r on true),
  -- Neither a superseded delivery (not sent) nor a throttled answer (counted false) says anything of health.
  health_in as (
    select receiver_id, outcome = 'success' as ok, coalesce(status_code = 410, false) as gone, started_at, outcome <> 'throttled' as counted, now() + pause_ms * interval '1 millisecond' as pause_until from k
     where record and receiver_exists and outcome <> 'superseded'),
  ${receiverHealthCtes('$16')},
  disabled as (
    select id from health_next where reason is not null),
  -- The settlements whose delivery goes to the dead letters: a dead end, or the retry of a receiver
  -- this statement disabled (a 410, the last failure before automatic disabling) or that is disabled
  -- (an operator's disable committed while the attempt was made: its lane stops, LANE_CTES, and a
  -- retry enqueued beside the stopped lane was sent after the newer deliveries of the enable's
  -- catch-up). Their attempt rows say so.
  ended as (
    select n from k where held and receiver_exists
       and (next = 'dead' or (next = 'retry' and (receiver_id in (select id from disabled) or not receiver_enabled)))),
  recorded as (
    insert into delivery_attempt (event_id, receiver_id, attempt, started_at, duration_ms, status_code, error, response_excerpt, outcome, dead_lettered)
    select event_id, receiver_id, attempt, started_at, duration_ms, status_code, error, excerpt, outcome, n in (select n from ended)
      from k where record and receiver_exists),
  -- A receiver disabled here: its waiting deliveries become dead letters in this statement, and so
  -- does the retry that one of its attempts would have enqueued.
  ${SET_ASIDE_CTE},
  -- Per-record order (lanes.ts): the settled heads' lanes keep their head on a retry, move their
  -- next waiting delivery up, or go idle; disabled receivers' lanes are emptied into dead letters.
  ${LANE_CTES},
  follow as (
    select k.event_id, k.receiver_id, k.attempt, 'retry' as next, k.delay_ms, null as reason, k.next_job as job_id, k.throttled, k.throttled_ms, k.lost, k.paused_until as not_before
      from k where k.held and k.receiver_exists and k.next = 'retry' and k.receiver_id not in (select id from disabled) and k.receiver_enabled
       and k.job_id not in (select settled_job from lane_moved where superseded_retry)
    union all
    select k.event_id, k.receiver_id, k.attempt - (not k.record)::int, 'dead', 0, case when k.next = 'retry' then 'receiver_disabled' else k.reason end, null, null, null, null, null
      from k where k.n in (select n from ended)
    union all
    select event_id, receiver_id, attempts, 'dead', 0, 'receiver_disabled', null, null, null, null, null from set_aside
    union all
    select event_id, receiver_id, 0, 'promote', 0, null, job_id, null, null, null, (select until from paused p where p.receiver_id = lane_promoted.receiver_id) from lane_promoted
    union all
    select event_id, receiver_id, 0, 'dead', 0, 'receiver_disabled', null, null, null, null, null from lane_set_aside),
  -- A LATEST_STATE retry that a newer waiting event superseded: its next attempt is not made.
  superseded_retries as (
    insert into delivery_attempt (event_id, receiver_id, attempt, started_at, duration_ms, outcome)
    select k.event_id, k.receiver_id, k.attempt + 1, now(), 0, 'superseded'
      from k join lane_moved m on m.settled_job = k.job_id where m.superseded_retry),
  ${FOLLOW_UPS_CTE},
  -- The settled jobs: deleted, or (claim) carrying their lane's next event.
  released as (
    delete from ${BOSS_SCHEMA}.job j
     where j.name = '${DELIVERY_QUEUE}' and j.id in (select id from held) and j.id not in (select settled_job from lane_moved where reused)),
  ${REUSED_CTE}
  select k.held, k.receiver_exists as "receiverExists", k.receiver_enabled as "receiverEnabled", u.id as "disabledId", u.reason, u.failing_since::text as "failingSince",
         (select count(*)::int from set_aside) as "setAside",
         -- The claim of the lane this settlement moved up, on the settlement's own row, with its event's
         -- columns as plain values (the columns loadTargets reads: no load round trip per lane step).
         -- Built as JSON they took a third of the statement (escaping every body, then joining the
         -- claims with the lanes once per claim), and as much again to parse in the worker.
         f.id as "claimId", f.data as "claimData", f.expire_seconds as "claimExpireSeconds", f.group_id as "claimGroupId",
         f.followed as "claimFollowed", e.id as "claimEventId", e.type as "claimEventType",
         e.version as "claimEventVersion", e.body as "claimEventBody",
         -- The claims' receivers (a few), on the first row only.
         case when k.n = 1 then (select json_agg(c) from (select ${RECEIVER_TO_SEND_COLUMNS} from receiver r
            where r.id in (select (data->>'receiverId')::uuid from reused)) c) end as "claimedReceivers"
    from k left join health_updated u on u.id = k.receiver_id and u.reason is not null
    left join reused f on f.id = k.job_id
    left join event e on e.id = (f.data->>'eventId')::uuid
   order by k.n`;

type SettleRow = SettleOutcome &
  ClaimColumns & {
    disabledId: string | null;
    reason: DisabledReceiver['reason'] | null;
    failingSince: string | null;
    setAside: number;
  };

/**
 * Settles claims in one statement through `db` (a pool, or a transaction's client): an outcome per
 * settlement, in order, and the receivers the recorded attempts disabled (`disableAfterHours`:
 * WEBHOOK_DISABLE_AFTER_HOURS; omitted, failures never disable).
 */
export async function settleJobs(
  db: { query: (query: { name: string; text: string; values: unknown[] }) => Promise<{ rows: SettleRow[] }> },
  settlements: readonly JobSettlement[],
  options: { disableAfterHours?: number; claim?: boolean } = {},
): Promise<SettleResult> {
  const column = <T>(pick: (s: JobSettlement) => T) => settlements.map(pick);
  // Named: prepared once per connection, instead of parsed and planned on every settlement.
  const { rows } = await db.query({
    name: 'webhook-settle',
    text: SETTLE_SQL,
    values: [
      column((s) => s.job.id),
      // The fence: the retry count fetched, and how many deliveries the job carried before (REUSED_CTE).
      column((s) => `${s.job.retryCount}:${s.data.step ?? 0}`),
      column((s) => s.data.eventId),
      column((s) => s.data.receiverId),
      column((s) => s.data.attempt),
      column((s) => s.attempt?.startedAt ?? null),
      column((s) => s.attempt?.durationMs ?? null),
      column((s) => s.attempt?.statusCode ?? null),
      column((s) => s.attempt?.error ?? null),
      column((s) => s.attempt?.excerpt ?? null),
      column((s) => s.attempt?.outcome ?? null),
      column((s) => s.next.kind),
      column((s) => (s.next.kind === 'retry' ? s.next.delayMs : 0)),
      column((s) => (s.next.kind === 'dead' ? (s.next.reason ?? null) : null)),
      column((s) => s.attempt !== null),
      options.disableAfterHours ?? null,
      options.claim ?? false,
      column((s) => (s.next.kind === 'retry' ? (s.next.throttled ?? 0) : 0)),
      column((s) => (s.next.kind === 'retry' ? (s.next.throttledMs ?? 0) : 0)),
      column((s) => (s.attempt !== null ? (s.receiverPauseMs ?? null) : null)),
      column((s) => (s.next.kind === 'retry' ? (s.next.lost ?? 0) : 0)),
    ],
  });
  const disabled = new Map<string, DisabledReceiver>();
  for (const r of rows)
    if (r.disabledId && r.reason)
      disabled.set(r.disabledId, { id: r.disabledId, reason: r.reason, failingSince: r.failingSince });
  return {
    outcomes: rows.map((r) => ({ held: r.held, receiverExists: r.receiverExists, receiverEnabled: r.receiverEnabled })),
    disabled: [...disabled.values()],
    setAside: rows[0]?.setAside ?? 0,
    claimed: claimsOf(rows),
  };
}
