// The webhook delivery worker: `startDeliveryWorker({ boss, pool: db.pool, config: config.webhooks,
// logger, secrets })` on a started pg-boss (startBoss), then `worker.stop()` (stop fetching, wait for
// the deliveries in flight, bounded, commit their attempts) before `boss.stop({ graceful: true })`.
// `config` is Config['webhooks'] (tests pass their own object with small timings). `pool` is the
// service's pg pool (db.pool). pg-boss is reached only through webhooks/queue/. Any number of workers
// (processes) may run against one database.
//
// How it works: up to WORKER_CONCURRENCY requests are in flight, at most WEBHOOK_CONCURRENCY_PER_RECEIVER
// of them to one receiver, with a short per-receiver queue of fetched jobs behind them
// (receiver-queues.ts): one slow or dead receiver never takes more than its share, and a fast one is
// fed without a database round trip per delivery. Jobs are fetched in batches, loaded and queued by
// load-batch.ts (while the next fetch runs; also the lanes' next deliveries that settlements claim),
// sent from the slots (send-slots.ts: refilled as soon as a request ends) and settled in groups
// (record-attempt.ts). When to fetch is the pump's business (pump.ts): it wakes on NOTIFY, retry
// timers, freed slots (unless the queue was found empty) and a poll every WEBHOOK_POLL_INTERVAL_MS;
// while as many jobs are queued here as can be sent at once, a fetch waits a little for more room.
// Stuck lanes: lane-sweeper.ts. A 429/503 with Retry-After pauses its receiver (receiver-pauses.ts).
// DeliveryLoop has named modes and asserted transitions (worker-modes.ts); what it holds in flight: in-flight.ts.
//
// Metrics: lods_webhook_delivery_attempts_total{outcome} (secret_unavailable included), lods_webhook_delivery_duration_seconds
// (queue depth and dead letters are read at scrape time by http/metrics-route.ts). Logs carry eventId,
// receiverId and attempt, never a secret, a signature or a URL.
import type { Pool } from 'pg';
import type { PgBoss } from 'pg-boss';
import type { Logger } from '../../kernel/logger.ts';
import { createOutageLog, type OutageLog } from '../../kernel/outage-log.ts';
import { fetchDeliveries, listenForDeliveries, type WebhookConfig } from '../queue/boss.ts';
import type { SecretKeyring } from '../secrets/secret-box.ts';
import { InFlight } from './in-flight.ts';
import { LANE_SWEEP_MS, startLaneSweeper } from './lane-sweeper.ts';
import { BatchLoader } from './load-batch.ts';
import { createPump, type Pump } from './pump.ts';
import { createReceiverPauses, type ReceiverPauses } from './receiver-pauses.ts';
import { createReceiverQueues } from './receiver-queues.ts';
import { createRetryTimers } from './retry-timers.ts';
import type { ThrottleLimits } from './retry-policy.ts';
import { nextMode, type WorkerMode } from './worker-modes.ts';
import { type Item, type ReceiverQueues, SendSlots } from './send-slots.ts';

export type DeliveryWorkerOptions = {
  boss: PgBoss;
  pool: Pool;
  config: WebhookConfig;
  logger: Logger;
  /** Opens the receivers' sealed signing secrets (webhooks/secrets/secret-keys.ts). */
  secrets: SecretKeyring;
  /** How often lanes whose head job vanished are looked for, and how long they must be untouched (default LANE_SWEEP_MS). */
  laneSweepMs?: number;
  /** How much throttling (429/503 with Retry-After) a delivery may meet before it counts as failures (default THROTTLE_LIMITS, retry-policy.ts). */
  throttleLimits?: ThrottleLimits;
};

export type DeliveryWorker = {
  /** Stops fetching and waits up to `timeoutMs` (default WEBHOOK_TIMEOUT_MS + 5 s) for deliveries in flight. */
  stop: (options?: { timeoutMs?: number }) => Promise<void>;
};

/** The longest a fetch round waits for room while the worker has plenty queued (see holdOffMs). */
const FETCH_HOLD_OFF_MS = 50;
const FETCH_LOG = { failed: 'fetching delivery jobs failed; retrying at next poll', recovered: 'fetching works again' };

export async function startDeliveryWorker(options: DeliveryWorkerOptions): Promise<DeliveryWorker> {
  const loop = new DeliveryLoop(options);
  await loop.start();
  return { stop: (stopOptions) => loop.stop(stopOptions) };
}

/** One delivery worker: fetches claims, sends them under the concurrency caps, records the attempts. */
export class DeliveryLoop {
  #mode: WorkerMode = 'starting';
  readonly #options: DeliveryWorkerOptions;
  readonly #config: WebhookConfig;
  readonly #logger: Logger;
  readonly #fetchLog: OutageLog;
  readonly #capacity: number;
  // Fetched and not yet sent, sent and not yet recorded: bounded, so a slow database or receiver holds fetching back.
  // At the defaults one receiver's cap in progress (group factor x per-receiver limit, 256) is half of maxHeld (512).
  readonly #maxHeld: number;
  readonly #maxRecording: number;
  readonly #inFlight = new InFlight();
  readonly #queues: ReceiverQueues;
  readonly #slots: SendSlots;
  readonly #pump: Pump;
  readonly #retryTimers: ReturnType<typeof createRetryTimers>;
  readonly #pauses: ReceiverPauses;
  readonly #loader: BatchLoader;
  #listener: { close: () => Promise<void> } | null = null;
  #poll: NodeJS.Timeout | undefined;
  #sweeper: { stop: () => void } | null = null;

  constructor(options: DeliveryWorkerOptions) {
    const { config } = options;
    this.#options = options;
    this.#config = config;
    this.#logger = options.logger.child({ component: 'webhook-worker' });
    this.#fetchLog = createOutageLog(this.#logger, FETCH_LOG);
    this.#capacity = config.workerConcurrency;
    this.#maxHeld = this.#capacity * 8;
    this.#maxRecording = this.#capacity * 4;
    // A queued job never outwaits its expiry (1.5 x timeout + 2 s): the budget plus one request's timeout.
    this.#queues = createReceiverQueues<Item>({
      limit: config.concurrencyPerReceiver,
      groupFactor: config.groupFactor,
      budgetMs: Math.min(config.prefetchBudgetMs, config.timeoutMs / 2),
      receiverOf: (i) => i.job.data.receiverId,
    });
    // While as many jobs are queued as the worker can send at once, a fetch round waits (up to FETCH_HOLD_OFF_MS,
    // or until the queues run lower) for more room: each fetch has a fixed price (pg-boss's statement is planned
    // anew, counts the receivers' active jobs, scans from the queue's head), so large fetches cost less per delivery
    // than refilling after every finished delivery.
    this.#pump = createPump(() => this.#fetchRound(), {
      holdOffMs: () => (this.#queues.queued() + this.#inFlight.loading >= this.#capacity ? FETCH_HOLD_OFF_MS : 0),
    });
    this.#retryTimers = createRetryTimers(this.#pump.wake);
    const refilled = () => this.#pump.queueEmpty(false); // jobs handed back are ready again
    this.#pauses = createReceiverPauses(options.boss, this.#queues, this.#logger, this.#retryTimers, refilled);
    this.#slots = new SendSlots({
      pool: options.pool,
      config,
      logger: this.#logger,
      queues: this.#queues,
      inFlight: this.#inFlight,
      closing: () => this.#closing(),
      handBack: this.#pauses.handBack,
      wake: this.#pump.wake,
      freed: this.#pump.freed,
      retryAt: (at) => this.#retryTimers.wakeAt(at),
      claimed: (claims) => this.#loader.claimed(claims),
      pause: this.#pauses.pause,
      throttleLimits: options.throttleLimits,
    });
    this.#loader = new BatchLoader({
      pool: options.pool,
      secrets: options.secrets,
      logger: this.#logger,
      inFlight: this.#inFlight,
      queues: this.#queues,
      dispatch: () => this.#slots.dispatch(),
      handBack: this.#pauses.handBack,
      closing: () => this.#closing(),
      pause: this.#pauses.pause,
    });
  }

  get mode(): WorkerMode {
    return this.#mode;
  }

  /** Listens for new jobs, starts the poll and the first fetch: starting -> running. */
  async start(): Promise<void> {
    this.#listener = await listenForDeliveries(this.#options.boss, this.#pump.wake);
    if (!this.#listener) this.#logger.warn('LISTEN/NOTIFY unavailable; deliveries start at the next poll');
    this.#poll = setInterval(() => {
      this.#pump.wake();
      void this.#pauses.recheck();
    }, this.#config.pollIntervalMs);
    this.#sweeper = startLaneSweeper({
      pool: this.#options.pool,
      logger: this.#logger,
      everyMs: this.#options.laneSweepMs ?? LANE_SWEEP_MS,
      moved: this.#pump.wake,
    });
    this.#enter('running');
    this.#pump.wake();
    this.#logger.info(
      {
        capacity: this.#capacity,
        perReceiver: this.#config.concurrencyPerReceiver,
        maxAttempts: this.#config.maxAttempts,
      },
      'webhook delivery worker started',
    );
  }

  /** Stops fetching and waits up to `timeoutMs` (default WEBHOOK_TIMEOUT_MS + 5 s) for deliveries in flight: running -> stopping -> stopped. */
  async stop(stopOptions: { timeoutMs?: number } = {}): Promise<void> {
    if (this.#closing()) return;
    this.#enter('stopping');
    clearInterval(this.#poll);
    this.#sweeper?.stop();
    this.#retryTimers.clear();
    await this.#pump.stop();
    await this.#loader.settled();
    await this.#listener?.close().catch(() => {});
    // Jobs queued here go back to the queue at once, for another worker (or the next start).
    await this.#pauses.handBack(this.#queues.takeAll());
    const deadline = Date.now() + (stopOptions.timeoutMs ?? this.#config.timeoutMs + 5000);
    while (this.#inFlight.unsettled() > 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 10));
    if (this.#inFlight.unsettled() > 0)
      this.#logger.warn(
        { inFlight: this.#inFlight.unsettled() },
        'stopped with deliveries still in flight; they will be retried after their jobs expire',
      );
    await this.#slots.close();
    this.#enter('stopped');
    this.#logger.info('webhook delivery worker stopped');
  }

  #enter(mode: WorkerMode): void {
    this.#mode = nextMode(this.#mode, mode);
  }

  /** No more fetching or sending: stop() has begun. */
  #closing(): boolean {
    return this.#mode === 'stopping' || this.#mode === 'stopped';
  }

  /** Room for more fetched jobs: the queues and the loads under maxHeld, the recordings under maxRecording. */
  #hasRoom(): boolean {
    return (
      this.#queues.held() + this.#inFlight.loading < this.#maxHeld && this.#inFlight.recording < this.#maxRecording
    );
  }

  /** One pump round: fetches until the queues are full or the queue has nothing more to hand out. */
  async #fetchRound(): Promise<void> {
    try {
      while (!this.#closing() && this.#hasRoom()) {
        // At most two batches loading (each load is a round trip); if the older one could queue
        // nothing (every job handed back: its receivers have no room), more fetching would only spin.
        if (this.#loader.fetchedLoading >= 2) {
          if (!(await this.#loader.oldest())) break;
          continue;
        }
        const batchSize = Math.min(
          this.#config.fetchBatch,
          this.#maxHeld - this.#queues.held() - this.#inFlight.loading,
        );
        const [ignoreGroups, loading] = [this.#queues.full(), this.#inFlight.loading];
        const jobs = await fetchDeliveries(this.#options.boss, {
          batchSize,
          // Attempts being recorded are active jobs in pg-boss's count but hold nothing of their receiver's: not
          // counting them keeps a fast receiver fed while they settle (they took half its cap on a loaded machine).
          groupConcurrency: this.#queues.groupConcurrency + this.#inFlight.mostRecordingOfOneReceiver(),
          ignoreGroups,
        });
        this.#pump.queueEmpty(jobs.length === 0 && ignoreGroups.length === 0 && loading === 0);
        if (jobs.length === 0) break;
        this.#loader.fetched(jobs);
        // A short batch: nothing more is ready, or its receivers reached their cap of jobs in
        // progress, whose ends wake the pump again. No fetch just to find the queue empty.
        if (jobs.length < batchSize) break;
      }
      this.#fetchLog.succeeded();
    } catch (error) {
      this.#fetchLog.failed(error);
    }
  }
}
