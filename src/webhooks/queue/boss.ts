// pg-boss for webhook deliveries: its construction, the two queues and their options, and the calls
// through its API (insert, fetch) plus handing fetched jobs back. This folder (queue/) is the only
// code that names pg-boss's tables; the rest of the service reaches pg-boss only through it, one
// file per statement family: boss.ts (here), settle-jobs.ts, dead-letters.ts, receiver-jobs.ts,
// job-reads.ts and retention-holds.ts.
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
import { type Db, type Job, PgBoss } from 'pg-boss';
import type { Config } from '../../kernel/config.ts';
import type { Logger } from '../../kernel/logger.ts';
import { createBossErrorLog } from './boss-errors.ts';
import { SESSION_OPTIONS } from '../../db/session-settings.ts';

export const BOSS_SCHEMA = 'pgboss';
export const DELIVERY_QUEUE = 'webhook-delivery';
export const DEAD_LETTER_QUEUE = 'webhook-dead-letter';

export type WebhookConfig = Config['webhooks'];
type QueueConfig = Pick<
  WebhookConfig,
  | 'timeoutMs'
  | 'lostRetryLimit'
  | 'queueRetentionDays'
  | 'deadLetterRetentionDays'
  | 'bossPoolMax'
  | 'bossMaintenanceIntervalSeconds'
>;

/**
 * A delivery job's payload: ids and the attempt number only, never a secret or a body. `step`: how many
 * deliveries the job carried before this one (a lane's head job moves on to the lane's next event in
 * place, settled-claims.ts REUSED_CTE); part of the settling fence. `throttled`, `throttledMs`: the
 * delivery's earlier attempts answered `throttled` (429/503 with Retry-After), which do not count
 * toward its attempts, and the total wait they asked for (delivery/retry-policy.ts); `lost`: those lost
 * with their worker (`worker_lost`, lost-attempts.ts), not counted either. Absent when none.
 */
export type DeliveryJobData = {
  eventId: string;
  receiverId: string;
  attempt: number;
  step?: number;
  throttled?: number;
  throttledMs?: number;
  lost?: number;
};
export type DeliveryJob = Job<DeliveryJobData>;
/**
 * A dead letter's payload: the delivery and how many attempts it had; `reason` is set when it was set
 * aside without exhausting its attempts (receiver_disabled) or its worker kept dying (worker_lost).
 * Dead letters pg-boss moved itself (retries after lost workers exhausted) carry the delivery job's
 * data instead ({..., attempt}); DEAD_LETTER_COLUMNS reads both as this shape.
 */
export type DeadLetterData = { eventId: string; receiverId: string; attempts: number; reason?: string };
const DAY = 24 * 60 * 60;

/** Both queues' names, as an SQL list for `name in ...`. */
export const QUEUES_SQL = `('${DELIVERY_QUEUE}', '${DEAD_LETTER_QUEUE}')`;

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
  return {
    retentionSeconds: config.deadLetterRetentionDays * DAY,
    deleteAfterSeconds: 7 * DAY,
    warningQueueSize: 1_000_000,
  };
}

/**
 * Starts pg-boss on `url` (installing or migrating its schema) and creates or updates both queues.
 * `supervise: true` (worker processes) runs pg-boss's maintenance: expiring jobs of crashed
 * workers and deleting old rows. A process that only sends jobs (role api, the CLI) passes false.
 */
export async function startBoss(options: {
  url: string;
  config: QueueConfig;
  logger: Logger;
  supervise: boolean;
  poolMax?: number;
}): Promise<PgBoss> {
  const { config } = options;
  // Supervision passes must come often enough that an expired job is handed out again soon after.
  const passSeconds = Math.min(30, Math.max(1, Math.ceil(expireInSeconds(config) / 2)));
  const boss = new PgBoss({
    connectionString: options.url,
    schema: BOSS_SCHEMA,
    application_name: 'lods-pgboss',
    options: SESSION_OPTIONS,
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
export async function ensureQueue(
  boss: PgBoss,
  name: string,
  options: Record<string, unknown>,
  createOnly: Record<string, unknown>,
  update: boolean,
): Promise<void> {
  if (!(await boss.getQueue(name))) await boss.createQueue(name, { ...options, ...createOnly });
  else if (update) await boss.updateQueue(name, options);
}

/**
 * The LISTEN channel on which pg-boss announces new jobs of notify-enabled queues: 'pgboss_' and 24
 * hex digits of sha224(schema name). pg-boss does not export its name; the schema test fails if the
 * derivation ever changes.
 */
export async function notifyChannel(boss: PgBoss): Promise<string> {
  const { rows } = await boss.getDb().executeSql(`select ${NOTIFY_CHANNEL_SQL} as channel`, []);
  return rows[0].channel as string;
}

/** The same channel as an SQL expression, for statements that insert jobs themselves (lanes.ts). */
export const NOTIFY_CHANNEL_SQL = `'pgboss_' || left(encode(sha224('${BOSS_SCHEMA}'::bytea), 'hex'), 24)`;

/** Subscribes to new delivery jobs (and to reconnects, which may have missed some); null without LISTEN. */
export async function listenForDeliveries(
  boss: PgBoss,
  onJobs: () => void,
): Promise<{ close: () => Promise<void> } | null> {
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
export function fetchDeliveries(
  boss: PgBoss,
  options: { batchSize: number; groupConcurrency: number; ignoreGroups: string[] },
): Promise<DeliveryJob[]> {
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
    .executeSql(
      `update ${BOSS_SCHEMA}.job set state = 'created', started_on = null, heartbeat_on = null where name = $1 and id = any($2::uuid[]) and state = 'active'`,
      [DELIVERY_QUEUE, ids],
    );
}

/**
 * Hands fetched jobs back as handBackJobs does, not to be handed out again for `delayMs` (from the
 * database's clock): the jobs of a receiver that asked to be left alone (a 429 or 503 with
 * Retry-After, delivery/retry-policy.ts), so that no worker fetches them before then.
 */
export async function deferJobs(boss: PgBoss, ids: readonly string[], delayMs: number): Promise<void> {
  if (ids.length === 0) return;
  await boss.getDb().executeSql(
    `update ${BOSS_SCHEMA}.job set state = 'created', started_on = null, heartbeat_on = null,
              start_after = greatest(start_after, ${BOSS_SCHEMA}.job_now() + $3 * interval '1 millisecond')
        where name = $1 and id = any($2::uuid[]) and state = 'active'`,
    [DELIVERY_QUEUE, ids, Math.max(0, Math.ceil(delayMs))],
  );
}
