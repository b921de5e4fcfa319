// The webhook delivery worker.
//
//   import { startBoss } from '../queue/boss.ts';
//   import { startDeliveryWorker } from './worker.ts';
//
//   const boss = await startBoss({ url: db.url, config: config.webhooks, logger, supervise: true });
//   const worker = await startDeliveryWorker({ boss, pool: db.pool, config: config.webhooks, logger });
//   ...
//   await worker.stop();   // stop fetching, wait for deliveries in flight (bounded), commit their attempts
//   await boss.stop({ graceful: true });
//
// `config` is Config['webhooks'] (tests pass their own object with small timings). `pool` is the
// service's pg pool (db.pool). pg-boss is reached only through webhooks/queue/. Any number of workers
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
// The worker is a class (DeliveryLoop) with named modes and asserted transitions:
//   starting -> running (listening, polling) -> stopping (no fetch, no new send) -> stopped.
// Its steps are methods: fetchRound (one pump round) and queueBatch (load a batch's targets and queue
// it); the send side (dispatch to free slots, deliver, record) is send-slots.ts. What it holds in
// flight is counted in one place (in-flight.ts).
//
// Metrics: lods_webhook_delivery_attempts_total{outcome} (secret_unavailable included), lods_webhook_delivery_duration_seconds
// (queue depth and dead letters are read at scrape time by http/metrics-route.ts). Logs carry eventId,
// receiverId and attempt, never a secret, a signature or a URL.
import type { Pool } from 'pg';
import type { PgBoss } from 'pg-boss';
import type { Logger } from '../../kernel/logger.ts';
import {
  type DeliveryJob,
  fetchDeliveries,
  handBackJobs,
  listenForDeliveries,
  type WebhookConfig,
} from '../queue/boss.ts';
import { sweepLanes } from '../queue/lanes.ts';
import type { SecretKeyring } from '../secrets/secret-box.ts';
import { InFlight } from './in-flight.ts';
import { loadTargets, type ReceiverToSend } from './load-targets.ts';
import { createPump, type Pump } from './pump.ts';
import { createReceiverQueues } from './receiver-queues.ts';
import { recordLostAttempts } from './record-attempt.ts';
import { createRetryTimers } from './retry-timers.ts';
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
};

export type DeliveryWorker = {
  /** Stops fetching and waits up to `timeoutMs` (default WEBHOOK_TIMEOUT_MS + 5 s) for deliveries in flight. */
  stop: (options?: { timeoutMs?: number }) => Promise<void>;
};

/** The longest a fetch round waits for room while the worker has plenty queued (see holdOffMs). */
const FETCH_HOLD_OFF_MS = 50;

/**
 * Every this often, a worker moves on lanes whose head job vanished unsettled and that nothing has
 * touched for as long (queue/lanes.ts sweepLanes): pg-boss dead-lettered a job whose workers kept
 * dying, or dropped one past its retention. Rare, and only delays that record's later deliveries.
 */
export const LANE_SWEEP_MS = 30_000;

/** The worker's modes, in order; each transition is asserted (DeliveryLoop.#enter). */
export type WorkerMode = 'starting' | 'running' | 'stopping' | 'stopped';
const NEXT_MODE: Record<WorkerMode, WorkerMode | null> = {
  starting: 'running',
  running: 'stopping',
  stopping: 'stopped',
  stopped: null,
};

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
  readonly #capacity: number;
  // Fetched and not yet sent, and sent and not yet recorded: bounded, so that a slow database or a
  // slow receiver holds back fetching instead of piling claims up in memory. At the defaults, one
  // receiver's cap of jobs in progress (WEBHOOK_GROUP_FACTOR x per-receiver limit, 256) is half of
  // maxHeld (512): a receiver with a deep backlog is fetched for in batches of up to
  // WEBHOOK_FETCH_BATCH (each fetch has a fixed price, so fewer and larger fetches cost the
  // database less per delivery), and it still fills at most half of what the worker holds.
  readonly #maxHeld: number;
  readonly #maxRecording: number;
  readonly #inFlight = new InFlight();
  readonly #queues: ReceiverQueues;
  readonly #slots: SendSlots;
  readonly #pump: Pump;
  readonly #retryTimers: ReturnType<typeof createRetryTimers>;
  // Batches whose events and receivers are loading, oldest first. Loading is not part of a pump
  // round: a round ends when its last fetch returns, so that a job committed meanwhile is fetched
  // at once instead of after the loads of the round before.
  readonly #loads: Promise<boolean>[] = [];
  /** Loads of deliveries that settlements claimed (see takeClaimed). */
  readonly #claimLoads = new Set<Promise<boolean>>();
  /** Receivers whose secret did not open at their last load: warned about once, until it opens again. */
  readonly #unopenable = new Set<string>();
  #listener: { close: () => Promise<void> } | null = null;
  #poll: NodeJS.Timeout | undefined;
  #sweep: NodeJS.Timeout | undefined;

  constructor(options: DeliveryWorkerOptions) {
    const { config } = options;
    this.#options = options;
    this.#config = config;
    this.#logger = options.logger.child({ component: 'webhook-worker' });
    this.#capacity = config.workerConcurrency;
    this.#maxHeld = this.#capacity * 8;
    this.#maxRecording = this.#capacity * 4;
    // A queued job must never outwait its expiry (1.5 x timeout + 2 s): at most the budget, plus one
    // timeout of the request ahead of it before the receiver's queue is handed back.
    this.#queues = createReceiverQueues<Item>({
      limit: config.concurrencyPerReceiver,
      groupFactor: config.groupFactor,
      budgetMs: Math.min(config.prefetchBudgetMs, config.timeoutMs / 2),
      receiverOf: (i) => i.job.data.receiverId,
    });
    // While as many jobs are queued here as the worker can send at once, a fetch round waits (up to
    // FETCH_HOLD_OFF_MS, or until the queues run lower) for more room: each fetch costs the database
    // a fixed price (pg-boss's statement is planned anew, counts the receivers' active jobs and scans
    // the ready jobs from the head of the queue), so one fetch of many jobs costs far less per delivery
    // than many fetches of a few, which is what refilling after every finished delivery gave.
    this.#pump = createPump(() => this.#fetchRound(), {
      holdOffMs: () => (this.#queues.queued() + this.#inFlight.loading >= this.#capacity ? FETCH_HOLD_OFF_MS : 0),
    });
    this.#retryTimers = createRetryTimers(this.#pump.wake);
    this.#slots = new SendSlots({
      pool: options.pool,
      config,
      logger: this.#logger,
      queues: this.#queues,
      inFlight: this.#inFlight,
      closing: () => this.#closing(),
      handBack: (items) => this.#handBack(items),
      wake: this.#pump.wake,
      retryAt: (at) => this.#retryTimers.wakeAt(at),
      claimed: (jobs) => this.#takeClaimed(jobs),
    });
  }

  get mode(): WorkerMode {
    return this.#mode;
  }

  /** Listens for new jobs, starts the poll and the first fetch: starting -> running. */
  async start(): Promise<void> {
    this.#listener = await listenForDeliveries(this.#options.boss, this.#pump.wake);
    if (!this.#listener) this.#logger.warn('LISTEN/NOTIFY unavailable; deliveries start at the next poll');
    this.#poll = setInterval(this.#pump.wake, this.#config.pollIntervalMs);
    const sweepMs = this.#options.laneSweepMs ?? LANE_SWEEP_MS;
    this.#sweep = setInterval(() => void this.#sweepLanes(sweepMs), sweepMs);
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
    clearInterval(this.#sweep);
    this.#retryTimers.clear();
    await this.#pump.stop();
    await Promise.allSettled([...this.#loads, ...this.#claimLoads]);
    await this.#listener?.close().catch(() => {});
    // Jobs queued here go back to the queue at once, for another worker (or the next start).
    await this.#handBack(this.#queues.takeAll());
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
    if (NEXT_MODE[this.#mode] !== mode) throw new Error(`delivery worker: no transition from ${this.#mode} to ${mode}`);
    this.#mode = mode;
  }

  /** No more fetching or sending: stop() has begun. */
  #closing(): boolean {
    return this.#mode === 'stopping' || this.#mode === 'stopped';
  }

  /** Deliveries a settlement moved up and claimed for this worker: queued like a fetched batch (handed back when stopping). */
  #takeClaimed(jobs: DeliveryJob[]): void {
    if (this.#closing()) {
      void this.#handBack(jobs.map((job) => ({ job, event: undefined, receiver: undefined })));
      return;
    }
    // Not among the loads that hold fetch rounds back (these were not fetched), but awaited by stop().
    const load = this.#queueBatch(jobs, { claimed: true });
    this.#claimLoads.add(load);
    void load.finally(() => this.#claimLoads.delete(load));
  }

  async #sweepLanes(untouchedForMs: number): Promise<void> {
    try {
      const moved = await sweepLanes(this.#options.pool, untouchedForMs);
      if (moved) {
        this.#logger.warn(
          { lanes: moved },
          'delivery lanes whose open job vanished unsettled (dead-lettered by pg-boss, or dropped) moved on to their next delivery',
        );
        this.#pump.wake();
      }
    } catch (error) {
      this.#logger.warn({ err: error }, 'sweeping delivery lanes failed; retrying at the next sweep');
    }
  }

  #handBack(items: Item[]): Promise<void> {
    return handBackJobs(
      this.#options.boss,
      items.map((i) => i.job.id),
    ).catch((error: unknown) =>
      this.#logger.warn({ err: error, jobs: items.length }, 'handing jobs back failed; they return when they expire'),
    );
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
        if (this.#loads.length >= 2) {
          if (!(await this.#loads[0]!)) break;
          continue;
        }
        const batchSize = Math.min(
          this.#config.fetchBatch,
          this.#maxHeld - this.#queues.held() - this.#inFlight.loading,
        );
        const jobs = await fetchDeliveries(this.#options.boss, {
          batchSize,
          // Attempts being recorded are still active jobs in pg-boss's count, but they hold nothing
          // of their receiver's any more: not counting them keeps a fast receiver fed while its
          // settlements are in flight (they took half its cap on a loaded machine).
          groupConcurrency: this.#queues.groupConcurrency + this.#inFlight.mostRecordingOfOneReceiver(),
          ignoreGroups: this.#queues.full(),
        });
        if (jobs.length === 0) break;
        const load = this.#queueBatch(jobs);
        this.#loads.push(load);
        void load.finally(() => this.#loads.splice(this.#loads.indexOf(load), 1));
        // A short batch: nothing more is ready, or its receivers reached their cap of jobs in
        // progress, whose ends wake the pump again. No fetch just to find the queue empty.
        if (jobs.length < batchSize) break;
      }
    } catch (error) {
      this.#logger.warn({ err: error }, 'fetching delivery jobs failed; retrying at the next poll');
    }
  }

  /** Warns once per receiver whose secret did not open at its load, until it opens again. */
  #reportSecrets(receivers: Iterable<ReceiverToSend>): void {
    for (const r of receivers) {
      if (r.secretUnavailable === null || !r.enabled) {
        this.#unopenable.delete(r.id);
      } else if (!this.#unopenable.has(r.id)) {
        this.#unopenable.add(r.id);
        this.#logger.warn(
          { receiverId: r.id, reason: r.secretUnavailable },
          "receiver's signing secret cannot be opened: its deliveries fail as secret_unavailable (retried, then dead-lettered) until SECRET_ENCRYPTION_KEY/_PREVIOUS open it or its secret is rotated",
        );
      }
    }
  }

  /** Loads a fetched batch's events and receivers and queues it; false when nothing could be queued. */
  async #queueBatch(jobs: DeliveryJob[], { claimed = false }: { claimed?: boolean } = {}): Promise<boolean> {
    const { pool, secrets } = this.#options;
    this.#inFlight.startLoading(jobs.length);
    try {
      const [targets, lost] = await Promise.all([
        loadTargets(
          pool,
          jobs.map((j) => j.data),
          secrets,
        ),
        recordLostAttempts(pool, jobs),
      ]);
      if (lost)
        this.#logger.warn(
          { jobs: lost },
          'deliveries handed out again after their worker was lost; recorded as worker_lost',
        );
      this.#reportSecrets(targets.receivers.values());
      const items = jobs.map((job) => ({
        job,
        event: targets.events.get(job.data.eventId),
        receiver: targets.receivers.get(job.data.receiverId),
      }));
      this.#inFlight.loaded(jobs.length);
      // Claimed ones take the places of the deliveries whose settlements claimed them: never handed
      // back for want of room (that cost a hand-back, a fetch and a load each: 1,456 of 1,500 claims
      // in a loaded run).
      const excess = this.#queues.accept(items, { always: claimed });
      this.#slots.dispatch();
      await this.#handBack(excess);
      return excess.length < jobs.length;
    } catch (error) {
      this.#inFlight.loaded(jobs.length);
      this.#logger.warn({ err: error, jobs: jobs.length }, 'loading deliveries failed; handing the jobs back');
      await this.#handBack(jobs.map((job) => ({ job, event: undefined, receiver: undefined })));
      return false;
    }
  }
}
