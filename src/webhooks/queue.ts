// pg-boss for webhook deliveries, in one place: its construction, the two queues and their options,
// and every statement on its tables. The rest of the service reaches pg-boss only through here.
//
// One job = one delivery attempt of one event to one receiver. The worker settles every job itself
// (records the attempt, deletes the job, and enqueues the next attempt or a dead letter, in one
// statement; see settleJobs), so pg-boss's own retry only covers a worker that died or lost its
// database mid-attempt: the job expires and is handed out again (and recorded as `worker_lost`).
//
// pg-boss's public API is used for starting, queues, inserting and fetching. Raw SQL on
// pgboss.job is kept to what the API cannot do in one round trip or at all (settling with the
// attempt row, handing fetched jobs back uncounted, dead-letter reads joined with our tables, a
// receiver's jobs, the reads at the end for retention, receivers, /metrics and /readyz); each says
// why the API does not do it. test/webhooks/boss-schema.test.ts and queue-schema.test.ts fail when
// pg-boss's schema or behaviour moves away from what these statements assume.
import type { Pool, PoolClient } from 'pg';
import { type Db, type Job, PgBoss } from 'pg-boss';
import type { Config } from '../config.ts';
import { boundedQuery, isMissingRelation } from '../db/bounded-query.ts';
import type { Logger } from '../logger.ts';
import { isoSql } from './attempt-reads.ts';
import { createBossErrorLog } from './boss-errors.ts';
import { receiverHealthCtes } from './receiver-health-sql.ts';
import type { DisabledReason } from './receiver-reads.ts';

export const BOSS_SCHEMA = 'pgboss';
export const DELIVERY_QUEUE = 'webhook-delivery';
export const DEAD_LETTER_QUEUE = 'webhook-dead-letter';

export type WebhookConfig = Config['webhooks'];
type QueueConfig = Pick<WebhookConfig, 'timeoutMs' | 'lostRetryLimit' | 'queueRetentionDays' | 'deadLetterRetentionDays' | 'bossPoolMax' | 'bossMaintenanceIntervalSeconds'>;

/** A delivery job's payload: ids and the attempt number only, never a secret or a body. */
export type DeliveryJobData = { eventId: string; receiverId: string; attempt: number };
export type DeliveryJob = Job<DeliveryJobData>;
/**
 * A dead letter's payload: the delivery and how many attempts it had; `reason` is set when it was set
 * aside without exhausting its attempts (receiver_disabled) or its worker kept dying (worker_lost).
 * Dead letters pg-boss moved itself (retries after lost workers exhausted) carry the delivery job's
 * data instead ({..., attempt}); DEAD_LETTER_COLUMNS reads both as this shape.
 */
export type DeadLetterData = { eventId: string; receiverId: string; attempts: number; reason?: string };

const DAY = 24 * 60 * 60;

/** How long a fetched job may stay active before another worker may take it (a crashed worker). */
export function expireInSeconds(config: Pick<WebhookConfig, 'timeoutMs'>): number {
  return Math.ceil((config.timeoutMs * 1.5) / 1000) + 2;
}

/** Every pg-boss option of the delivery queue (applied on every start, so config changes land). */
export function deliveryQueueOptions(config: QueueConfig) {
  return {
    expireInSeconds: expireInSeconds(config),
    // Only for crashed or cut-off workers (see above); a failed HTTP attempt is re-enqueued by us.
    retryLimit: config.lostRetryLimit,
    retryDelay: 1,
    retryBackoff: true,
    retryDelayMax: 300,
    // A job that no worker picks up for this long is dropped (a worker outage of that length).
    retentionSeconds: config.queueRetentionDays * DAY,
    // Settled jobs are deleted by the worker at once; this only bounds stragglers.
    deleteAfterSeconds: 3600,
    deadLetter: DEAD_LETTER_QUEUE,
    notify: true,
  };
}

/** Dead letters stay until an operator replays them (`deliveries replay-dead`). */
export function deadLetterQueueOptions(config: QueueConfig) {
  return { retentionSeconds: config.deadLetterRetentionDays * DAY, deleteAfterSeconds: 7 * DAY, warningQueueSize: 1_000_000 };
}

/**
 * Starts pg-boss on `url` (installing or migrating its schema) and creates or updates both queues.
 * `supervise: true` (worker processes) runs pg-boss's maintenance: expiring jobs of crashed
 * workers and deleting old rows. A process that only sends jobs (role api, the CLI) passes false.
 */
export async function startBoss(options: { url: string; config: QueueConfig; logger: Logger; supervise: boolean; poolMax?: number }): Promise<PgBoss> {
  const { config } = options;
  // Supervision passes must come often enough that an expired job is handed out again soon after.
  const passSeconds = Math.min(30, Math.max(1, Math.ceil(expireInSeconds(config) / 2)));
  const boss = new PgBoss({
    connectionString: options.url,
    schema: BOSS_SCHEMA,
    application_name: 'lods-pgboss',
    max: options.poolMax ?? config.bossPoolMax,
    supervise: options.supervise,
    // Cron (the hourly retention job, retention/prune-job.ts) runs where maintenance runs.
    schedule: options.supervise,
    superviseIntervalSeconds: passSeconds,
    monitorIntervalSeconds: passSeconds,
    maintenanceIntervalSeconds: config.bossMaintenanceIntervalSeconds,
  });
  const log = options.logger.child({ component: 'pg-boss' });
  const errors = createBossErrorLog(log);
  boss.on('error', errors.onError);
  boss.on('stopped', errors.close);
  boss.on('warning', (warning) => log.warn({ warning: warning.message, data: warning.data }, 'pg-boss warning'));
  await boss.start();
  try {
    // Workers own the queue options (the expiry follows their timeout); others only create them.
    await ensureQueue(boss, DEAD_LETTER_QUEUE, deadLetterQueueOptions(config), {}, options.supervise);
    await ensureQueue(boss, DELIVERY_QUEUE, deliveryQueueOptions(config), { partition: true }, options.supervise);
  } catch (error) {
    await boss.stop({ graceful: false, close: true }).catch(() => {});
    throw error;
  }
  return boss;
}

/** Creates queue `name` (with `createOnly`, what pg-boss fixes at creation: policy, partition) or, with `update`, brings its options up to date. */
export async function ensureQueue(boss: PgBoss, name: string, options: Record<string, unknown>, createOnly: Record<string, unknown>, update: boolean): Promise<void> {
  if (!(await boss.getQueue(name))) await boss.createQueue(name, { ...options, ...createOnly });
  else if (update) await boss.updateQueue(name, options);
}

/**
 * The LISTEN channel on which pg-boss announces new jobs of notify-enabled queues: 'pgboss_' and 24
 * hex digits of sha224(schema name). pg-boss does not export its name; the schema test fails if the
 * derivation ever changes.
 */
export async function notifyChannel(boss: PgBoss): Promise<string> {
  const { rows } = await boss.getDb().executeSql(`select 'pgboss_' || left(encode(sha224($1::bytea), 'hex'), 24) as channel`, [BOSS_SCHEMA]);
  return rows[0].channel as string;
}

/** Subscribes to new delivery jobs (and to reconnects, which may have missed some); null without LISTEN. */
export async function listenForDeliveries(boss: PgBoss, onJobs: () => void): Promise<{ close: () => Promise<void> } | null> {
  const channel = await notifyChannel(boss);
  const listener = await boss.getDb().listen?.(
    channel,
    (payload) => {
      if (payload === DELIVERY_QUEUE) onJobs();
    },
    onJobs,
  );
  return listener ?? null;
}

/** Claims up to `batchSize` ready deliveries, at most `groupConcurrency` in progress per receiver. */
export function fetchDeliveries(boss: PgBoss, options: { batchSize: number; groupConcurrency: number; ignoreGroups: string[] }): Promise<DeliveryJob[]> {
  return boss.fetch<DeliveryJobData>(DELIVERY_QUEUE, options);
}

export type Delivery = DeliveryJobData & { delayMs?: number; priority?: number };

/**
 * The priority of replayed dead letters: below every other delivery (0). pg-boss hands out the
 * ready jobs of the highest priority first, then the oldest; a fetch takes the oldest ready jobs
 * up to its batch size before the per-receiver cap, so a replay of thousands of one receiver's
 * dead letters at the same priority would hold every later delivery to every other receiver
 * behind it (first in, first out). Below them, it is sent as the live deliveries leave room.
 */
export const REPLAY_PRIORITY = -1;

/** One job per delivery, grouped by receiver (per-receiver concurrency), through the caller's `db`. */
export async function enqueueDeliveries(boss: PgBoss, db: Db, deliveries: readonly Delivery[]): Promise<void> {
  if (deliveries.length === 0) return;
  await boss.insert(
    DELIVERY_QUEUE,
    deliveries.map((d) => ({
      data: { eventId: d.eventId, receiverId: d.receiverId, attempt: d.attempt } satisfies DeliveryJobData,
      group: { id: d.receiverId },
      // Seconds relative to the database clock (a bare number is an interval in seconds).
      ...(d.delayMs ? { startAfter: (d.delayMs / 1000).toFixed(3) } : {}),
      ...(d.priority ? { priority: d.priority } : {}),
    })),
    { db },
  );
}

/**
 * Puts fetched jobs back as they were before the fetch (created, not counted as a retry: pg-boss
 * counts a claim only when started_on is set), for jobs the worker claimed but will not send now.
 * pg-boss's public restore works on cancelled jobs only, hence the statement.
 */
export async function handBackJobs(boss: PgBoss, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await boss
    .getDb()
    .executeSql(`update ${BOSS_SCHEMA}.job set state = 'created', started_on = null, heartbeat_on = null where name = $1 and id = any($2::uuid[]) and state = 'active'`, [DELIVERY_QUEUE, ids]);
}

/** One finished (or dropped) claim to settle: its fetched attempt, what to record, what follows. */
export type JobSettlement = {
  job: { id: string; retryCount: number };
  data: DeliveryJobData;
  /** The attempt row to insert, or null for a delivery dropped unsent. */
  attempt: { startedAt: Date; durationMs: number; statusCode: number | null; error: string | null; excerpt: string | null; outcome: string } | null;
  /** What follows if the claim is still ours: nothing, the next attempt, or a dead letter. */
  next: { kind: 'done' } | { kind: 'retry'; delayMs: number } | { kind: 'dead'; reason?: string };
};
/** Per settlement: whether the claim was still ours (else another worker owns the follow-up) and its receiver still exists. */
export type SettleOutcome = { held: boolean; receiverExists: boolean };
/** A receiver that the settling statement disabled (receiver-health-sql.ts): why, and since when it was failing. */
export type DisabledReceiver = { id: string; reason: Exclude<DisabledReason, 'manual'>; failingSince: string | null };
/** What a settling statement did beside the outcomes: receivers it disabled, and their waiting deliveries it made dead letters. */
export type SettleResult = { outcomes: SettleOutcome[]; disabled: DisabledReceiver[]; setAside: number };

// A disabled receiver's waiting (not in flight) deliveries, taken out of the queue for the dead
// letters: over a relation `disabled (id)`, in the settling statement (receivers a settlement
// disables) and in setAsideWaitingDeliveries (an operator's disable). A job being fetched
// concurrently is locked by the fetch (SKIP LOCKED there), so the delete waits and then skips it as
// active: sent or set aside, never both. The gate keeps the scan of the queue from running when
// nothing was disabled.
const SET_ASIDE_CTE = `set_aside as (
    delete from ${BOSS_SCHEMA}.job j
     where (select count(*) from disabled) > 0
       and j.name = '${DELIVERY_QUEUE}' and j.state < 'active' and j.data->>'receiverId' in (select id::text from disabled)
    returning (j.data->>'eventId')::uuid as event_id, (j.data->>'receiverId')::uuid as receiver_id, (j.data->>'attempt')::int - 1 as attempts)`;

// The jobs of a relation `follow (event_id, receiver_id, attempt, next, delay_ms, reason)`: the next
// attempt ('retry') or a dead letter ('dead', `attempt` being the attempts made), with the queue's
// own settings (what boss.insert() writes; boss-schema.test.ts compares the two).
const FOLLOW_UPS_CTE = `followed as (
    insert into ${BOSS_SCHEMA}.job (name, data, group_id, start_after, created_on, keep_until, expire_seconds, deletion_seconds,
                                    retry_limit, retry_delay, retry_backoff, retry_delay_max, policy, dead_letter, heartbeat_seconds)
    select q.name,
           case when f.next = 'retry' then jsonb_build_object('eventId', f.event_id, 'receiverId', f.receiver_id, 'attempt', f.attempt + 1)
                else jsonb_strip_nulls(jsonb_build_object('eventId', f.event_id, 'receiverId', f.receiver_id, 'attempts', f.attempt, 'reason', f.reason)) end,
           case when f.next = 'retry' then f.receiver_id::text end,
           t.at, ${BOSS_SCHEMA}.job_now(), t.at + q.retention_seconds * interval '1 second', q.expire_seconds, q.deletion_seconds,
           q.retry_limit, q.retry_delay, q.retry_backoff, q.retry_delay_max, q.policy, q.dead_letter, q.heartbeat_seconds
      from follow f
      cross join lateral (select ${BOSS_SCHEMA}.job_now() + f.delay_ms * interval '1 millisecond' as at) t
      join ${BOSS_SCHEMA}.queue q on q.name = case when f.next = 'retry' then '${DELIVERY_QUEUE}' else '${DEAD_LETTER_QUEUE}' end)`;

const SET_ASIDE_SQL = `
  with disabled as (select unnest($1::uuid[]) as id),
  ${SET_ASIDE_CTE},
  follow as (select event_id, receiver_id, attempts as attempt, 'dead'::text as next, 0 as delay_ms, 'receiver_disabled'::text as reason from set_aside),
  ${FOLLOW_UPS_CTE}
  select count(*)::int as n from set_aside`;

/**
 * Moves the waiting deliveries of `receiverIds` (just disabled by the caller, in its transaction
 * `client`) to the dead letters, replayable with `deliveries replay-dead` after `enable`; returns
 * how many. Jobs in flight are not touched: their follow-up meets the disabled receiver in the
 * worker (drop-delivery.ts). Raw: pg-boss has no "delete queued jobs matching data" call, and
 * finding ids first would race the fetch.
 */
export async function setAsideWaitingDeliveries(client: PoolClient, receiverIds: readonly string[]): Promise<number> {
  // pg-boss installs its schema on its first start; before that no delivery waits.
  if (receiverIds.length === 0 || !(await bossInstalled(client))) return 0;
  const { rows } = await client.query<{ n: number }>({ name: 'webhook-set-aside', text: SET_ASIDE_SQL, values: [receiverIds] });
  return rows[0]!.n;
}

// One statement, so one round trip and atomic without BEGIN/COMMIT: the fenced delete of the claimed
// jobs (state active at the fetched retry count: a job that expired and was handed to another worker
// is not ours any more), the attempt rows (also for claims no longer ours: the attempt happened),
// for claims still ours whose receiver exists, the follow-up job with the queue's own settings
// (what boss.insert() writes; the schema test compares the two), the receivers' health from the
// recorded attempts (receiver-health-sql.ts), and, for a receiver that this disables, its waiting
// deliveries moved to the dead letters (SET_ASIDE_CTE, as for an operator's disable). `id = any($1)`
// makes the delete a primary-key lookup per job rather than a scan of the queue's whole backlog.
const SETTLE_SQL = `
  with s as (
    select * from unnest($1::uuid[], $2::int[], $3::uuid[], $4::uuid[], $5::int[], $6::timestamptz[], $7::int[], $8::int[],
                         $9::text[], $10::text[], $11::text[], $12::text[], $13::int[], $14::text[], $15::boolean[])
      with ordinality as s (job_id, retry_count, event_id, receiver_id, attempt, started_at, duration_ms, status_code,
                            error, excerpt, outcome, next, delay_ms, reason, record, n)),
  held as (
    delete from ${BOSS_SCHEMA}.job j using s
     where j.name = '${DELIVERY_QUEUE}' and j.id = any($1::uuid[]) and j.id = s.job_id and j.state = 'active' and j.retry_count = s.retry_count
    returning j.id),
  k as (
    select s.*, s.job_id in (select id from held) as held, exists (select 1 from receiver r where r.id = s.receiver_id) as receiver_exists from s),
  recorded as (
    insert into delivery_attempt (event_id, receiver_id, attempt, started_at, duration_ms, status_code, error, response_excerpt, outcome, dead_lettered)
    select event_id, receiver_id, attempt, started_at, duration_ms, status_code, error, excerpt, outcome, held and next = 'dead'
      from k where record and receiver_exists),
  health_in as (
    select receiver_id, outcome = 'success' as ok, coalesce(status_code = 410, false) as gone, started_at from k where record and receiver_exists),
  ${receiverHealthCtes('$16')},
  disabled as (
    select id from health_next where reason is not null),
  -- A receiver disabled here: its waiting deliveries become dead letters in this statement, and so
  -- does the retry that one of its attempts would have enqueued.
  ${SET_ASIDE_CTE},
  follow as (
    select k.event_id, k.receiver_id, k.attempt, 'retry' as next, k.delay_ms, null as reason
      from k where k.held and k.receiver_exists and k.next = 'retry' and k.receiver_id not in (select id from disabled)
    union all
    select k.event_id, k.receiver_id, k.attempt - (not k.record)::int, 'dead', 0, case when k.next = 'retry' then 'receiver_disabled' else k.reason end
      from k where k.held and k.receiver_exists and (k.next = 'dead' or (k.next = 'retry' and k.receiver_id in (select id from disabled)))
    union all
    select event_id, receiver_id, attempts, 'dead', 0, 'receiver_disabled' from set_aside),
  ${FOLLOW_UPS_CTE}
  select k.held, k.receiver_exists as "receiverExists", u.id as "disabledId", u.reason, u.failing_since::text as "failingSince",
         (select count(*)::int from set_aside) as "setAside"
    from k left join health_updated u on u.id = k.receiver_id and u.reason is not null
   order by k.n`;

type SettleRow = SettleOutcome & { disabledId: string | null; reason: DisabledReceiver['reason'] | null; failingSince: string | null; setAside: number };

/**
 * Settles claims in one statement through `db` (a pool, or a transaction's client): an outcome per
 * settlement, in order, and the receivers the recorded attempts disabled (`disableAfterHours`:
 * WEBHOOK_DISABLE_AFTER_HOURS; omitted, failures never disable).
 */
export async function settleJobs(
  db: { query: (query: { name: string; text: string; values: unknown[] }) => Promise<{ rows: SettleRow[] }> },
  settlements: readonly JobSettlement[],
  options: { disableAfterHours?: number } = {},
): Promise<SettleResult> {
  const column = <T>(pick: (s: JobSettlement) => T) => settlements.map(pick);
  // Named: prepared once per connection, instead of parsed and planned on every settlement.
  const { rows } = await db.query({ name: 'webhook-settle', text: SETTLE_SQL, values: [
    column((s) => s.job.id),
    column((s) => s.job.retryCount),
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
  ] });
  const disabled = new Map<string, DisabledReceiver>();
  for (const r of rows) if (r.disabledId && r.reason) disabled.set(r.disabledId, { id: r.disabledId, reason: r.reason, failingSince: r.failingSince });
  return { outcomes: rows.map((r) => ({ held: r.held, receiverExists: r.receiverExists })), disabled: [...disabled.values()], setAside: rows[0]?.setAside ?? 0 };
}

// Dead letters, read as DeadLetterData whichever wrote them: pg-boss moves a job whose lost-worker
// retries ran out with the delivery job's own data ({..., attempt}), which is its last attempt and
// means worker_lost.
const DEAD_LETTER_DATA = `j.data->>'eventId' as "eventId", j.data->>'receiverId' as "receiverId",
  coalesce((j.data->>'attempts')::int, (j.data->>'attempt')::int) as attempts,
  coalesce(j.data->>'reason', case when j.data ? 'attempt' then 'worker_lost' end) as reason`;
const DEAD_LETTER_WHERE = `j.name = '${DEAD_LETTER_QUEUE}' and j.state = 'created' and ($1::text is null or j.data->>'receiverId' = $1)`;

export type DeadLetterRow = DeadLetterData & { eventType: string | null; receiverUrl: string | null; receiverEnabled: boolean | null; deadSince: string; lastStatusCode: number | null; lastError: string | null; lastAttemptAt: string | null };

// One row when pg-boss's job table exists: pg-boss installs its schema on its first start.
const INSTALLED_SQL = `select 1 where to_regclass('${BOSS_SCHEMA}.job') is not null`;

/**
 * Whether pg-boss's job table exists: pg-boss installs its schema on its first start.
 * Raw: isInstalled() needs a started pg-boss instance; retention and receiver reads have a pool.
 */
export async function bossInstalled(db: Pick<Pool, 'query'> | Pick<PoolClient, 'query'>): Promise<boolean> {
  return ((await db.query(INSTALLED_SQL)).rowCount ?? 0) > 0;
}

/**
 * Dead letters (of one receiver, or all), oldest first, with the outcome of each delivery's last attempt.
 * Raw: joined with event, receiver and delivery_attempt in one statement; findJobs() cannot join.
 */
export async function selectDeadLetters(pool: Pool, receiverId: string | null, limit: number): Promise<DeadLetterRow[]> {
  // pg-boss installs its schema on its first start; before that there are no dead letters.
  if (!(await bossInstalled(pool))) return [];
  const { rows } = await pool.query<DeadLetterRow>(
    `select ${DEAD_LETTER_DATA}, e.type as "eventType", r.url as "receiverUrl", r.enabled as "receiverEnabled", ${isoSql('j.created_on')} as "deadSince",
            last.status_code as "lastStatusCode", last.error as "lastError", ${isoSql('last.started_at')} as "lastAttemptAt"
       from ${BOSS_SCHEMA}.job j
       left join event e on e.id = (j.data->>'eventId')::uuid
       left join receiver r on r.id = (j.data->>'receiverId')::uuid
       left join lateral (
         -- The letter's own last attempt: the one with its attempt count, made before it died (the
         -- same event may have gone to the same receiver since, by a redelivery or a replay).
         select status_code, error, started_at from delivery_attempt a
          where a.event_id = e.id and a.receiver_id = r.id
          order by (a.attempt = coalesce((j.data->>'attempts')::int, (j.data->>'attempt')::int)) desc, (a.started_at <= j.created_on) desc, a.id desc
          limit 1) last on true
      where ${DEAD_LETTER_WHERE}
      order by j.created_on, j.id
      limit $2`,
    [receiverId, limit],
  );
  return rows;
}

/**
 * Deletes up to `limit` dead letters of enabled receivers (of one event, when `eventId` is given)
 * through `client` (the caller's transaction) and returns them. Materialized, so that the locked pick runs exactly once (pgboss.job is
 * partitioned; a plain IN (subquery ... limit) may be evaluated per partition and take more).
 * Raw: picks only enabled receivers' letters (a join) and deletes them in the caller's transaction.
 */
export async function takeDeadLetters(client: PoolClient, receiverId: string | null, limit: number, eventId: string | null = null): Promise<DeadLetterData[]> {
  const { rows } = await client.query<DeadLetterData>(
    `with picked as materialized (
       select j.id from ${BOSS_SCHEMA}.job j
         join receiver r on r.id = (j.data->>'receiverId')::uuid and r.enabled
        where ${DEAD_LETTER_WHERE} and ($3::text is null or j.data->>'eventId' = $3)
        order by j.created_on, j.id
        limit $2
        for update of j skip locked)
     delete from ${BOSS_SCHEMA}.job j where j.name = '${DEAD_LETTER_QUEUE}' and j.id in (select id from picked)
     returning ${DEAD_LETTER_DATA}`,
    [receiverId, limit, eventId],
  );
  return rows;
}

/** Raw: a count filtered by receiver (job data); getQueueStats() counts a whole queue, as of its last pass. */
export async function countDeadLetters(pool: Pool, receiverId: string | null): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(`select count(*) as n from ${BOSS_SCHEMA}.job j where ${DEAD_LETTER_WHERE}`, [receiverId]);
  return Number(rows[0]?.n ?? 0);
}

/**
 * Deletes a receiver's waiting deliveries and dead letters through `db` (the caller's transaction); returns how many.
 * Raw: selected by job data across both queues; deleteJob() takes ids.
 */
export async function removeReceiverJobs(db: Db, receiverId: string): Promise<number> {
  // pg-boss installs its schema on its first start; before that there is nothing to remove.
  const { rows: installed } = await db.executeSql(INSTALLED_SQL);
  if (installed.length === 0) return 0;
  const { rows } = await db.executeSql(
    `with removed as (delete from ${BOSS_SCHEMA}.job where name in ($1, $2) and state < 'active' and data->>'receiverId' = $3 returning 1) select count(*)::int as n from removed`,
    [DELIVERY_QUEUE, DEAD_LETTER_QUEUE, receiverId],
  );
  return rows[0].n as number;
}

// Reads for the rest of the service (retention, receivers, /metrics, /readyz), so that no other
// module names pg-boss's tables. Each one-liner says why pg-boss's public API does not do it.

const QUEUES = `('${DELIVERY_QUEUE}', '${DEAD_LETTER_QUEUE}')`;

/**
 * SQL condition: the event `alias` (a row of `event`) is referenced by an unsettled delivery job or a
 * dead letter, i.e. the worker will still load its body (retention keeps it).
 * Raw: a condition inside retention's batched delete; findJobs() reads one queue per call, client-side.
 */
export function eventHeldCondition(alias: string): string {
  return `exists (select 1 from ${BOSS_SCHEMA}.job j where j.name in ${QUEUES} and j.state in ('created', 'retry', 'active') and j.data->>'eventId' = ${alias}.id::text)`;
}

/**
 * SQL condition: the attempt `alias` (a row of `delivery_attempt`) belongs to a delivery that is a
 * dead letter now (retention keeps its history with it).
 * Raw: a condition inside retention's batched delete, as above.
 */
export function deadLetterAttemptCondition(alias: string): string {
  return `exists (select 1 from ${BOSS_SCHEMA}.job j where j.name = '${DEAD_LETTER_QUEUE}' and j.state = 'created'
             and j.data->>'eventId' = ${alias}.event_id::text and j.data->>'receiverId' = ${alias}.receiver_id::text)`;
}

/**
 * SQL subquery: per receiver (`receiver_id`, text), its waiting deliveries (not yet in flight) and its
 * dead letters, of the receiver whose id is in the parameter `receiverParam` (e.g. '$1'), or of all
 * when that parameter is null.
 * Raw: joined with the receiver table in one statement; pg-boss counts per queue, not per job data.
 */
export function deliveryCountsByReceiverSql(receiverParam: string): string {
  return `select data->>'receiverId' as receiver_id,
                 count(*) filter (where name = '${DELIVERY_QUEUE}' and state < 'active')::int as waiting,
                 count(*) filter (where name = '${DEAD_LETTER_QUEUE}' and state = 'created')::int as dead
            from ${BOSS_SCHEMA}.job
           where name in ${QUEUES} and state < 'active' and (${receiverParam}::text is null or data->>'receiverId' = ${receiverParam})
           group by 1`;
}

/**
 * Open (waiting, retrying or in-flight) jobs of the delivery queue and of the dead letters, counted
 * now in one statement bounded by `timeoutMs` (pgboss.job is partitioned by queue name, so only those
 * two partitions are read). No pg-boss schema yet means no jobs: zeros, not an error.
 * Raw: getQueueStats() is pg-boss's monitor snapshot (up to a pass old) and unbounded on its own pool.
 */
export async function openJobCounts(pool: Pool, timeoutMs: number): Promise<{ deliveries: number; deadLetters: number }> {
  const sql = `select count(*) filter (where name = '${DELIVERY_QUEUE}')::int as deliveries,
                      count(*) filter (where name = '${DEAD_LETTER_QUEUE}')::int as "deadLetters"
                 from ${BOSS_SCHEMA}.job
                where name in ${QUEUES} and state in ('created', 'retry', 'active')`;
  try {
    const [row] = await boundedQuery<{ deliveries: number; deadLetters: number }>(pool, sql, timeoutMs);
    return { deliveries: row?.deliveries ?? 0, deadLetters: row?.deadLetters ?? 0 };
  } catch (error) {
    if (isMissingRelation(error)) return { deliveries: 0, deadLetters: 0 };
    throw error;
  }
}

/**
 * Whether pg-boss's schema is ready in the database behind `pool`: 'absent' before pg-boss's first
 * start, 'installing' while its version row is not written yet. Bounded by `timeoutMs` (a pg-boss
 * migration holding its tables must not hang a probe); rejects when the database does not answer.
 * Raw: schemaVersion() runs on a pg-boss instance's own pool, with no deadline.
 */
export async function queueSchemaState(pool: Pool, timeoutMs: number): Promise<'ready' | 'installing' | 'absent'> {
  try {
    const rows = await boundedQuery<{ version: number }>(pool, `select version from ${BOSS_SCHEMA}.version limit 1`, timeoutMs);
    return rows.length === 0 ? 'installing' : 'ready';
  } catch (error) {
    if (isMissingRelation(error)) return 'absent';
    throw error;
  }
}
