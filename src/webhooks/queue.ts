// pg-boss for webhook deliveries: its construction, the two queues and their options, in one place.
//
// One job = one delivery attempt of one event to one receiver. The worker settles every job itself
// (records the attempt, deletes the job, and enqueues the next attempt or a dead letter, all in one
// transaction; see record-attempt.ts), so pg-boss's own retry only covers a worker that died or lost
// its database mid-attempt: the job expires and is handed out again.
import { PgBoss } from 'pg-boss';
// Not re-exported by the package index; the version is pinned exactly (STACK.md), and
// test/webhooks/latency.test.ts fails if the channel ever stops matching.
import { notifyChannelSql } from 'pg-boss/dist/plans.js';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';

export const BOSS_SCHEMA = 'pgboss';
export const DELIVERY_QUEUE = 'webhook-delivery';
export const DEAD_LETTER_QUEUE = 'webhook-dead-letter';

export type WebhookConfig = Config['webhooks'];

/** A delivery job's payload: ids and the attempt number only, never a secret or a body. */
export type DeliveryJobData = { eventId: string; receiverId: string; attempt: number };
/**
 * A dead letter's payload: the delivery and how many attempts it had; `reason` is set when it was set
 * aside without exhausting its attempts (receiver_disabled).
 */
export type DeadLetterData = { eventId: string; receiverId: string; attempts: number; reason?: string };

const DAY = 24 * 60 * 60;

/** How long a fetched job may stay active before another worker may take it (a crashed worker). */
export function expireInSeconds(config: Pick<WebhookConfig, 'timeoutMs'>): number {
  return Math.ceil((config.timeoutMs * 1.5) / 1000) + 2;
}

/** Every pg-boss option of the delivery queue (applied on every start, so config changes land). */
export function deliveryQueueOptions(config: Pick<WebhookConfig, 'timeoutMs'>) {
  return {
    expireInSeconds: expireInSeconds(config),
    // Only for crashed or cut-off workers (see above); a failed HTTP attempt is re-enqueued by us.
    retryLimit: 10,
    retryDelay: 1,
    retryBackoff: true,
    retryDelayMax: 300,
    // A job that no worker picks up for two weeks is dropped (a worker outage of that length).
    retentionSeconds: 14 * DAY,
    // Settled jobs are deleted by the worker at once; this only bounds stragglers.
    deleteAfterSeconds: 3600,
    deadLetter: DEAD_LETTER_QUEUE,
    notify: true,
  };
}

/** Dead letters stay until an operator replays them (`deliveries replay-dead`): ten years. */
export const DEAD_LETTER_QUEUE_OPTIONS = { retentionSeconds: 3650 * DAY, deleteAfterSeconds: 7 * DAY, warningQueueSize: 1_000_000 };

/**
 * Starts pg-boss on `url` (installing or migrating its schema) and creates or updates both queues.
 * `supervise: true` (worker processes) runs pg-boss's maintenance: expiring jobs of crashed
 * workers and deleting old rows. A process that only sends jobs (role api, the CLI) passes false.
 */
export async function startBoss(options: { url: string; config: Pick<WebhookConfig, 'timeoutMs'>; logger: Logger; supervise: boolean; poolMax?: number }): Promise<PgBoss> {
  // Supervision passes must come often enough that an expired job is handed out again soon after.
  const passSeconds = Math.min(30, Math.max(1, Math.ceil(expireInSeconds(options.config) / 2)));
  const boss = new PgBoss({
    connectionString: options.url,
    schema: BOSS_SCHEMA,
    application_name: 'lods-pgboss',
    max: options.poolMax ?? 4,
    supervise: options.supervise,
    // Cron (the hourly retention job, retention/prune-job.ts) runs where maintenance runs.
    schedule: options.supervise,
    superviseIntervalSeconds: passSeconds,
    monitorIntervalSeconds: passSeconds,
    maintenanceIntervalSeconds: 300,
  });
  const log = options.logger.child({ component: 'pg-boss' });
  boss.on('error', (error) => log.error({ err: error }, 'pg-boss error'));
  boss.on('warning', (warning) => log.warn({ warning: warning.message, data: warning.data }, 'pg-boss warning'));
  await boss.start();
  try {
    // Workers own the queue options (the expiry follows their timeout); others only create them.
    await ensureQueue(boss, DEAD_LETTER_QUEUE, DEAD_LETTER_QUEUE_OPTIONS, {}, options.supervise);
    await ensureQueue(boss, DELIVERY_QUEUE, deliveryQueueOptions(options.config), { partition: true }, options.supervise);
  } catch (error) {
    await boss.stop({ graceful: false, close: true }).catch(() => {});
    throw error;
  }
  return boss;
}

async function ensureQueue(boss: PgBoss, name: string, options: Record<string, unknown>, createOnly: Record<string, unknown>, update: boolean): Promise<void> {
  if (!(await boss.getQueue(name))) await boss.createQueue(name, { ...options, ...createOnly });
  else if (update) await boss.updateQueue(name, options);
}

/** The LISTEN channel on which pg-boss announces new jobs of notify-enabled queues. */
export async function notifyChannel(boss: PgBoss): Promise<string> {
  const { rows } = await boss.getDb().executeSql(`select ${notifyChannelSql(BOSS_SCHEMA)} as channel`);
  return rows[0].channel as string;
}
