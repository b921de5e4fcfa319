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
// service's pg pool (db.pool). pg-boss is reached only through queue.ts. Any number of workers
// (processes) may run against one database.
//
// How it works: up to WORKER_CONCURRENCY requests are in flight, at most
// WEBHOOK_CONCURRENCY_PER_RECEIVER of them to one receiver, with a short per-receiver queue of
// fetched jobs behind them (receiver-queues.ts): one slow or dead receiver never takes more than its
// share, and a fast one is fed without a database round trip per delivery. Jobs are fetched in
// batches (with their events and receivers: two queries per batch, loaded while the next fetch
// runs), each slot is refilled from its receiver's queue as soon as its request ends (a request
// that hangs until the timeout holds only its own slot), and finished attempts are committed in groups (record-attempt.ts, one
// statement per group). When to fetch is the pump's business
// (pump.ts, a small state machine): it wakes on pg-boss's NOTIFY for new jobs, on its own timers for
// retries it scheduled, when slots free up, and on a poll every WEBHOOK_POLL_INTERVAL_MS as a floor;
// while as many jobs are queued here as can be sent at once, a fetch waits a little for more room.
// A job handed out again after its worker was lost gets a `worker_lost` attempt row first. A
// receiver whose signing secret does not open here (load-targets.ts) is not sent to: each of its
// deliveries gets a `secret_unavailable` attempt (retried, then dead-lettered, as any failure), with
// one warning per receiver (again only after its secret opened in between), not one per delivery.
//
// Metrics: lods_webhook_delivery_attempts_total{outcome} (secret_unavailable included), lods_webhook_delivery_duration_seconds
// (queue depth and dead letters are read at scrape time by http/metrics-route.ts). Logs carry eventId,
// receiverId and attempt, never a secret, a signature or a URL.
import type { Pool } from 'pg';
import type { PgBoss } from 'pg-boss';
import type { Logger } from '../logger.ts';
import { deliveryAttempts, deliveryDuration } from '../metrics.ts';
import { dropDelivery } from './drop-delivery.ts';
import { type EventToSend, loadTargets, type ReceiverToSend } from './load-targets.ts';
import { createPump } from './pump.ts';
import { type DeliveryJob, fetchDeliveries, handBackJobs, listenForDeliveries, type WebhookConfig } from './queue.ts';
import { createReceiverQueues } from './receiver-queues.ts';
import { createAttemptRecorder, recordLostAttempts } from './record-attempt.ts';
import type { NextStep } from './retry-policy.ts';
import { createRetryTimers } from './retry-timers.ts';
import type { SecretKeyring } from './secret-box.ts';
import { createWebhookSender, type SendResult } from './send-webhook.ts';
// The delivery headers (SPEC.md 6) are the receiver kit's: the webhook contract is written once, and
// the service signs with the code its consumers verify with.
import { deliveryHeaders } from '../../packages/receiver-kit/src/sign.ts';

export type DeliveryWorkerOptions = {
  boss: PgBoss;
  pool: Pool;
  config: WebhookConfig;
  logger: Logger;
  /** Opens the receivers' sealed signing secrets (webhooks/secret-keys.ts). */
  secrets: SecretKeyring;
};

export type DeliveryWorker = {
  /** Stops fetching and waits up to `timeoutMs` (default WEBHOOK_TIMEOUT_MS + 5 s) for deliveries in flight. */
  stop: (options?: { timeoutMs?: number }) => Promise<void>;
};

/** The longest a fetch round waits for room while the worker has plenty queued (see holdOffMs). */
const FETCH_HOLD_OFF_MS = 50;

type Item = { job: DeliveryJob; event: EventToSend | undefined; receiver: ReceiverToSend | undefined };

/** The attempt recorded when a receiver's secret does not open: nothing was sent. */
const SECRET_UNAVAILABLE: SendResult = { outcome: 'secret_unavailable', statusCode: null, error: 'secret_unavailable', responseExcerpt: null, durationMs: 0 };

export async function startDeliveryWorker(options: DeliveryWorkerOptions): Promise<DeliveryWorker> {
  const { boss, pool, config } = options;
  const logger = options.logger.child({ component: 'webhook-worker' });
  const capacity = config.workerConcurrency;
  // Fetched and not yet sent, and sent and not yet recorded: bounded, so that a slow database or a
  // slow receiver holds back fetching instead of piling claims up in memory. At the defaults, one
  // receiver's cap of jobs in progress (WEBHOOK_GROUP_FACTOR x per-receiver limit, 256) is half of
  // maxHeld (512): a receiver with a deep backlog is fetched for in batches of up to
  // WEBHOOK_FETCH_BATCH (each fetch has a fixed price, so fewer and larger fetches cost the
  // database less per delivery), and it still fills at most half of what the worker holds.
  const maxHeld = capacity * 8;
  const maxRecording = capacity * 4;
  const sender = createWebhookSender({ timeoutMs: config.timeoutMs, allowPrivateTargets: config.allowPrivateTargets });
  // A queued job must never outwait its expiry (1.5 x timeout + 2 s): at most the budget, plus one
  // timeout of the request ahead of it before the receiver's queue is handed back.
  const queues = createReceiverQueues<Item>({
    limit: config.concurrencyPerReceiver,
    groupFactor: config.groupFactor,
    budgetMs: Math.min(config.prefetchBudgetMs, config.timeoutMs / 2),
    receiverOf: (i) => i.job.data.receiverId,
  });
  const recorder = createAttemptRecorder({
    pool,
    config,
    logger,
    onCommitted: (settled) => {
      const now = Date.now();
      for (const s of settled) if (s.next.kind === 'retry') retryTimers.wakeAt(now + s.next.delayMs);
    },
  });
  // While as many jobs are queued here as the worker can send at once, a fetch round waits (up to
  // FETCH_HOLD_OFF_MS, or until the queues run lower) for more room: each fetch costs the database
  // a fixed price (pg-boss's statement is planned anew, counts the receivers' active jobs and scans
  // the ready jobs from the head of the queue), so one fetch of many jobs costs far less per delivery
  // than many fetches of a few, which is what refilling after every finished delivery gave.
  const pump = createPump(fetchRound, { holdOffMs: () => (queues.queued() + loading >= capacity ? FETCH_HOLD_OFF_MS : 0) });
  const retryTimers = createRetryTimers(pump.wake);
  const stopped = () => pump.state() === 'stopped';
  // Counts, not flags: deliveries between send and settlement, and jobs whose targets are loading.
  let sending = 0;
  let recording = 0;
  let loading = 0;
  // Attempts being recorded, per receiver: pg-boss's cap is per receiver, so it is widened by the
  // most any one receiver has being recorded, never by the worker's total.
  const recordingOf = new Map<string, number>();
  const countRecording = (receiverId: string, delta: 1 | -1) => {
    recording += delta;
    const n = (recordingOf.get(receiverId) ?? 0) + delta;
    if (n > 0) recordingOf.set(receiverId, n);
    else recordingOf.delete(receiverId);
  };

  // Receivers whose secret did not open at their last load: warned about once, until it opens again.
  const unopenable = new Set<string>();
  function reportSecrets(receivers: Iterable<ReceiverToSend>): void {
    for (const r of receivers) {
      if (r.secretUnavailable === null || !r.enabled) {
        unopenable.delete(r.id);
      } else if (!unopenable.has(r.id)) {
        unopenable.add(r.id);
        logger.warn(
          { receiverId: r.id, reason: r.secretUnavailable },
          "receiver's signing secret cannot be opened: its deliveries fail as secret_unavailable (retried, then dead-lettered) until SECRET_ENCRYPTION_KEY/_PREVIOUS open it or its secret is rotated",
        );
      }
    }
  }

  const handBack = (items: Item[]) =>
    handBackJobs(boss, items.map((i) => i.job.id)).catch((error: unknown) => logger.warn({ err: error, jobs: items.length }, 'handing jobs back failed; they return when they expire'));

  // Batches whose events and receivers are loading, oldest first. Loading is not part of a pump
  // round: a round ends when its last fetch returns, so that a job committed meanwhile is fetched
  // at once instead of after the loads of the round before.
  const loads: Promise<boolean>[] = [];

  /** One pump round: fetches until the queues are full or the queue has nothing more to hand out. */
  async function fetchRound(): Promise<void> {
    try {
      while (!stopped() && queues.held() + loading < maxHeld && recording < maxRecording) {
        // At most two batches loading (each load is a round trip); if the older one could queue
        // nothing (every job handed back: its receivers have no room), more fetching would only spin.
        if (loads.length >= 2) {
          if (!(await loads[0]!)) break;
          continue;
        }
        const batchSize = Math.min(config.fetchBatch, maxHeld - queues.held() - loading);
        const jobs = await fetchDeliveries(boss, {
          batchSize,
          // Attempts being recorded are still active jobs in pg-boss's count, but they hold nothing
          // of their receiver's any more: not counting them keeps a fast receiver fed while its
          // settlements are in flight (they took half its cap on a loaded machine).
          groupConcurrency: queues.groupConcurrency + Math.max(0, ...recordingOf.values()),
          ignoreGroups: queues.full(),
        });
        if (jobs.length === 0) break;
        const load = queueBatch(jobs);
        loads.push(load);
        void load.finally(() => loads.splice(loads.indexOf(load), 1));
        // A short batch: nothing more is ready, or its receivers reached their cap of jobs in
        // progress, whose ends wake the pump again. No fetch just to find the queue empty.
        if (jobs.length < batchSize) break;
      }
    } catch (error) {
      logger.warn({ err: error }, 'fetching delivery jobs failed; retrying at the next poll');
    }
  }

  /** Loads a fetched batch's events and receivers and queues it; false when nothing could be queued. */
  async function queueBatch(jobs: DeliveryJob[]): Promise<boolean> {
    loading += jobs.length;
    try {
      const [targets, lost] = await Promise.all([loadTargets(pool, jobs.map((j) => j.data), options.secrets), recordLostAttempts(pool, jobs)]);
      if (lost) logger.warn({ jobs: lost }, 'deliveries handed out again after their worker was lost; recorded as worker_lost');
      reportSecrets(targets.receivers.values());
      const items = jobs.map((job) => ({ job, event: targets.events.get(job.data.eventId), receiver: targets.receivers.get(job.data.receiverId) }));
      loading -= jobs.length;
      const excess = queues.accept(items);
      dispatch();
      await handBack(excess);
      return excess.length < jobs.length;
    } catch (error) {
      loading -= jobs.length;
      logger.warn({ err: error, jobs: jobs.length }, 'loading deliveries failed; handing the jobs back');
      await handBack(jobs.map((job) => ({ job, event: undefined, receiver: undefined })));
      return false;
    }
  }

  function dispatch(): void {
    while (!stopped() && sending < capacity) {
      const item = queues.next();
      if (!item) return;
      sending += 1;
      void deliver(item);
    }
  }

  async function deliver({ job, event, receiver }: Item): Promise<void> {
    const { eventId, receiverId, attempt } = job.data;
    // Not a child logger: creating one per delivery costs more than the signing.
    const ids = { eventId, receiverId, attempt };
    let sent = false;
    try {
      if (!event || !receiver || !receiver.enabled) {
        await dropDelivery({ pool, job, reason: !event ? 'event_missing' : !receiver ? 'receiver_removed' : 'receiver_disabled', logger: logger.child(ids) });
        return;
      }
      const startedAt = new Date();
      const cannotSign = receiver.secretUnavailable !== null;
      let result = SECRET_UNAVAILABLE;
      if (!cannotSign) {
        const headers = deliveryHeaders({ eventId, eventType: event.type, resourceVersion: event.version, body: event.body, secret: receiver.secret, timestamp: startedAt.getTime() });
        result = await sender.send(receiver.url, headers, event.body);
        deliveryDuration.observe(result.durationMs / 1000);
      }
      sent = true;
      sending -= 1;
      void handBack(queues.done(receiverId, cannotSign ? null : result.durationMs, result.outcome === 'timeout' || result.outcome === 'connection_error'));
      dispatch();
      countRecording(receiverId, 1);
      let next: NextStep | undefined;
      try {
        next = await recorder.record({ job, data: job.data, startedAt, result });
      } finally {
        countRecording(receiverId, -1);
        // The last failed attempt is counted as "dead", so that the outcomes still sum to the attempts.
        deliveryAttempts.inc({ outcome: next?.kind === 'dead' ? 'dead' : result.outcome });
      }
      const fields = { ...ids, outcome: result.outcome, statusCode: result.statusCode, error: result.error, durationMs: result.durationMs };
      // Its receiver's one warning (reportSecrets) stands for these.
      if (cannotSign) logger.debug({ ...fields, next: next.kind }, 'delivery not sent: its receiver\'s secret cannot be opened');
      else if (next.kind === 'dead') logger.warn(fields, next.reason === 'receiver_disabled' ? 'delivery dead-lettered: its receiver was disabled' : 'delivery dead-lettered after its last attempt');
      else if (next.kind === 'retry') logger.info({ ...fields, retryInMs: next.delayMs }, 'delivery attempt failed; retry scheduled');
      else logger.debug(fields, 'delivery attempt finished');
    } catch (error) {
      logger.error({ ...ids, err: error }, 'delivery failed unexpectedly; the job will be retried after it expires');
    } finally {
      if (!sent) {
        sending -= 1;
        queues.done(receiverId, null, false);
        dispatch();
      }
      pump.wake();
    }
  }

  const listener = await listenForDeliveries(boss, pump.wake);
  if (!listener) logger.warn('LISTEN/NOTIFY unavailable; deliveries start at the next poll');
  const poll = setInterval(pump.wake, config.pollIntervalMs);
  pump.wake();
  logger.info({ capacity, perReceiver: config.concurrencyPerReceiver, maxAttempts: config.maxAttempts }, 'webhook delivery worker started');

  return {
    async stop(stopOptions = {}) {
      if (stopped()) return;
      clearInterval(poll);
      retryTimers.clear();
      await pump.stop();
      await Promise.allSettled(loads);
      await listener?.close().catch(() => {});
      // Jobs queued here go back to the queue at once, for another worker (or the next start).
      await handBack(queues.takeAll());
      const deadline = Date.now() + (stopOptions.timeoutMs ?? config.timeoutMs + 5000);
      while (sending + recording > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      if (sending + recording > 0) logger.warn({ inFlight: sending + recording }, 'stopped with deliveries still in flight; they will be retried after their jobs expire');
      await recorder.drain();
      sender.close();
      logger.info('webhook delivery worker stopped');
    },
  };
}
