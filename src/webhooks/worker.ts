// The webhook delivery worker.
//
//   import { startBoss } from './queue.ts';
//   import { startDeliveryWorker } from './worker.ts';
//
//   const boss = await startBoss({ url: db.url, config: config.webhooks, logger, supervise: true });
//   const worker = await startDeliveryWorker({ boss, pool: db.pool, config: config.webhooks, logger });
//   ...
//   await worker.stop();   // stop fetching, wait for deliveries in flight (bounded), commit their attempts
//   await boss.stop({ graceful: true });
//
// `config` is Config['webhooks'] (tests pass their own object with small timings). `pool` is the
// service's pg pool (db.pool). Any number of workers (processes) may run against one database.
//
// How it works: a pump keeps up to WORKER_CONCURRENCY deliveries being sent. It fetches jobs in
// batches (pg-boss fetch with groupConcurrency = WEBHOOK_CONCURRENCY_PER_RECEIVER, the group being
// the receiver id, so one slow or dead receiver holds at most that many jobs across all workers)
// and refills as soon as slots free up, rather than waiting for a whole batch: a delivery that hangs
// until the timeout holds only its own slot. Finished attempts are committed in groups
// (record-attempt.ts). The pump wakes on pg-boss's NOTIFY for new jobs, on its own timers for
// retries it scheduled, and polls every `pollIntervalMs` as a floor (retries scheduled elsewhere).
//
// Metrics: lods_webhook_delivery_attempts_total{outcome}, lods_webhook_delivery_duration_seconds,
// and (every 15 s) lods_webhook_queue_depth / lods_webhook_dead_letters. Logs carry eventId,
// receiverId and attempt, never a secret, a signature or a URL.
import type { Pool } from 'pg';
import type { Job, PgBoss } from 'pg-boss';
import type { Logger } from '../logger.ts';
import { deliveryAttempts, deliveryDuration } from '../metrics.ts';
import { refreshWebhookGauges } from './gauges.ts';
import { loadTargets, type Targets } from './load-targets.ts';
import { DELIVERY_QUEUE, type DeliveryJobData, notifyChannel, type WebhookConfig } from './queue.ts';
import { createAttemptRecorder, type Settled } from './record-attempt.ts';
import { type NextStep } from './retry-policy.ts';
import { createRetryTimers } from './retry-timers.ts';
import { createWebhookSender } from './send-webhook.ts';
import { deliveryHeaders } from './sign.ts';
import { dropDelivery } from './drop-delivery.ts';

export type DeliveryWorkerOptions = {
  boss: PgBoss;
  pool: Pool;
  config: WebhookConfig;
  logger: Logger;
  /** Poll floor when no notification arrives (default 1000 ms). */
  pollIntervalMs?: number;
  /** Jobs per fetch (default 100, at most WORKER_CONCURRENCY). */
  fetchBatchSize?: number;
};

export type DeliveryWorker = {
  /** Stops fetching and waits up to `timeoutMs` (default WEBHOOK_TIMEOUT_MS + 5 s) for deliveries in flight. */
  stop: (options?: { timeoutMs?: number }) => Promise<void>;
  /** Deliveries in flight right now. */
  inFlight: () => number;
};

type DeliveryJob = Job<DeliveryJobData>;

export async function startDeliveryWorker(options: DeliveryWorkerOptions): Promise<DeliveryWorker> {
  const { boss, pool, config } = options;
  const logger = options.logger.child({ component: 'webhook-worker' });
  const capacity = config.workerConcurrency;
  const batchSize = Math.max(1, Math.min(capacity, options.fetchBatchSize ?? 100));
  const sender = createWebhookSender({ timeoutMs: config.timeoutMs, allowPrivateTargets: config.allowPrivateTargets });
  let stopping = false;
  // A slot is held while a delivery is loaded and sent; the commit of its attempt happens after the
  // slot is freed (group commit), bounded separately so that a slow database pushes back.
  let sending = 0;
  let recording = 0;
  const maxRecording = capacity * 4;
  const hasRoom = () => !stopping && sending < capacity && recording < maxRecording;
  let fetching = false;
  let wokenWhileFetching = false;

  const retryTimers = createRetryTimers(() => void fill());
  // Deliveries settle in batches (group commit): refill once for the whole batch, on the next turn.
  let fillScheduled = false;
  const scheduleFill = () => {
    if (fillScheduled || stopping) return;
    fillScheduled = true;
    setImmediate(() => {
      fillScheduled = false;
      void fill();
    });
  };
  const recorder = createAttemptRecorder({
    boss,
    pool,
    config,
    logger,
    onCommitted: (settled: Settled[]) => {
      const now = Date.now();
      for (const s of settled) if (s.next.kind === 'retry') retryTimers.wakeAt(now + s.next.delayMs);
    },
  });

  /** Fetches until every slot is taken or the queue has nothing more to hand out. */
  async function fill(): Promise<void> {
    if (stopping) return;
    if (fetching) {
      wokenWhileFetching = true;
      return;
    }
    fetching = true;
    try {
      do {
        wokenWhileFetching = false;
        while (hasRoom()) {
          const jobs = await boss.fetch<DeliveryJobData>(DELIVERY_QUEUE, {
            batchSize: Math.min(batchSize, capacity - sending),
            groupConcurrency: config.concurrencyPerReceiver,
          });
          if (jobs.length === 0) break;
          sending += jobs.length;
          void deliverBatch(jobs);
        }
      } while (wokenWhileFetching && hasRoom());
    } catch (error) {
      logger.warn({ err: error }, 'fetching delivery jobs failed; retrying at the next poll');
    } finally {
      fetching = false;
    }
  }

  async function deliverBatch(jobs: DeliveryJob[]): Promise<void> {
    let targets: Targets;
    try {
      targets = await loadTargets(pool, jobs.map((j) => j.data));
    } catch (error) {
      // The jobs stay active and are handed out again once they expire.
      logger.error({ err: error, jobs: jobs.length }, 'loading deliveries failed');
      sending -= jobs.length;
      return;
    }
    await Promise.all(jobs.map((job) => deliverOne(job, targets)));
  }

  async function deliverOne(job: DeliveryJob, targets: Targets): Promise<void> {
    const { eventId, receiverId, attempt } = job.data;
    // Not a child logger: creating one per delivery costs more than the signing.
    const ids = { eventId, receiverId, attempt };
    let sent = false;
    try {
      const event = targets.events.get(eventId);
      const receiver = targets.receivers.get(receiverId);
      if (!event || !receiver || !receiver.enabled) {
        await dropDelivery({ boss, pool, job, reason: !event ? 'event_missing' : !receiver ? 'receiver_removed' : 'receiver_disabled', logger: logger.child(ids) });
        return;
      }
      const startedAt = new Date();
      const headers = deliveryHeaders({ eventId, eventType: event.type, body: event.body, secret: receiver.secret, timestamp: startedAt.getTime() });
      const result = await sender.send(receiver.url, headers, event.body);
      deliveryDuration.observe(result.durationMs / 1000);
      sent = true;
      sending -= 1;
      recording += 1;
      scheduleFill();
      let next: NextStep | undefined;
      try {
        next = await recorder.record({ job, data: job.data, startedAt, result });
      } finally {
        // The last failed attempt is counted as "dead", so that the outcomes still sum to the attempts.
        deliveryAttempts.inc({ outcome: next?.kind === 'dead' ? 'dead' : result.outcome });
      }
      const fields = { ...ids, outcome: result.outcome, statusCode: result.statusCode, error: result.error, durationMs: result.durationMs };
      if (next.kind === 'dead') logger.warn(fields, 'delivery dead-lettered after its last attempt');
      else if (next.kind === 'retry') logger.info({ ...fields, retryInMs: next.delayMs }, 'delivery attempt failed; retry scheduled');
      else logger.debug(fields, 'delivery attempt finished');
    } catch (error) {
      logger.error({ ...ids, err: error }, 'delivery failed unexpectedly; the job will be retried after it expires');
    } finally {
      if (sent) recording -= 1;
      else sending -= 1;
      scheduleFill();
    }
  }

  // Wake on new jobs: pg-boss NOTIFYs the queue name on this channel when a job is inserted ready to
  // run (queue option notify: true). A reconnect may have missed some, so it fetches then too.
  const channel = await notifyChannel(boss);
  const listener = await boss.getDb().listen?.(
    channel,
    (payload) => {
      if (payload === DELIVERY_QUEUE) void fill();
    },
    () => void fill(),
  );
  if (!listener) logger.warn('LISTEN/NOTIFY unavailable; deliveries start at the next poll');
  const poll = setInterval(() => void fill(), options.pollIntervalMs ?? 1000);
  const gauges = setInterval(() => void refreshWebhookGauges(boss).catch(() => {}), 15_000);
  gauges.unref();
  void fill();
  logger.info({ capacity, perReceiver: config.concurrencyPerReceiver, maxAttempts: config.maxAttempts }, 'webhook delivery worker started');

  return {
    inFlight: () => sending + recording,
    async stop(stopOptions = {}) {
      if (stopping) return;
      stopping = true;
      clearInterval(poll);
      clearInterval(gauges);
      retryTimers.clear();
      await listener?.close().catch(() => {});
      const deadline = Date.now() + (stopOptions.timeoutMs ?? config.timeoutMs + 5000);
      while (sending + recording > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      if (sending + recording > 0) logger.warn({ inFlight: sending + recording }, 'stopped with deliveries still in flight; they will be retried after their jobs expire');
      await recorder.drain();
      sender.close();
      logger.info('webhook delivery worker stopped');
    },
  };
}
