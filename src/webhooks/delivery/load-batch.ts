// The delivery worker's loading step (worker.ts): a batch of claimed jobs gets its events and
// receivers (load-targets.ts) and goes into the receivers' queues (receiver-queues.ts), then the
// send slots are filled. Two kinds of batch:
// - fetched (the pump's fetch rounds): a job handed out again after its worker was lost gets a
//   `worker_lost` attempt row first, and jobs without a lane (enqueued the pre-lanes way during an
//   upgrade) are put into their lanes first (queue/lane-adoption.ts); what finds no room is handed back,
//   after waiting for its receiver's first answers when it has not answered here yet (#park);
// - claimed by a settlement (the next delivery of a lane, queue/lanes.ts): its event and receiver come
//   with it from the settling statement (no load round trip), and it takes the place of the delivery
//   settled, never handed back for want of room.
// A receiver whose signing secret does not open here is warned about once, until it opens again.
// A receiver whose row says it asked to be left alone (receiver.throttled_until, a 429/503 with
// Retry-After seen by any worker) is paused here before its jobs are queued: they go back deferred.
// Every load notes the receivers' rate caps in the queues (rate-gate.ts), before their jobs are queued.
import type { Pool } from 'pg';
import type { Logger } from '../../kernel/logger.ts';
import type { DeliveryJob } from '../queue/boss.ts';
import { adoptLanelessJobs } from '../queue/lane-adoption.ts';
import type { SecretKeyring } from '../secrets/secret-box.ts';
import type { InFlight } from './in-flight.ts';
import type { Claims } from '../queue/settled-claims.ts';
import { loadTargets, type ReceiverToSend, type Targets, targetsFromRows } from './load-targets.ts';
import { recordLostAttempts } from '../queue/lost-attempts.ts';
import type { Item, ReceiverQueues } from './send-slots.ts';

export type BatchLoaderDeps = {
  pool: Pool;
  secrets: SecretKeyring;
  logger: Logger;
  inFlight: InFlight;
  queues: ReceiverQueues;
  /** Fills free send slots. */
  dispatch: () => void;
  /** Hands claims back to the queue (never rejects). */
  handBack: (items: Item[]) => Promise<void>;
  /** True once the worker is stopping. */
  closing: () => boolean;
  /** Pauses a receiver that asked to be left alone until `until` (Date.now() ms; worker.ts). */
  pause: (receiverId: string, until: number) => void;
};

/**
 * The longest jobs that found no room wait, when their receiver has not answered here yet, for its
 * first answers before being handed back. An unknown receiver's queue is small (receiver-queues.ts),
 * so the first fetch after a start finds room for 8 of 200 jobs; a receiver's first answers size its
 * queue from its response times, and the parked jobs are offered again every PARK_POLL_MS until none
 * waits for an unknown receiver. A hand-back costs a statement now and a fetch and a load again (192
 * of the 2,000 deliveries of each drain in bench:delivery were handed back). 500 ms of parking stays
 * inside the 2 s by which a job's expiry exceeds its longest wait in a queue (worker.ts).
 */
export const FIRST_ANSWERS_WAIT_MS = 500;
const PARK_POLL_MS = 5;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class BatchLoader {
  readonly #deps: BatchLoaderDeps;
  // Fetched batches whose events and receivers are loading, oldest first. Loading is not part of a
  // pump round: a round ends when its last fetch returns, so that a job committed meanwhile is fetched
  // at once instead of after the loads of the round before.
  readonly #fetched: Promise<boolean>[] = [];
  /**
   * Work under way that does not hold fetch rounds back: loads of claims whose events the settling
   * statement could not see, and jobs parked for their receivers' first answers (#park).
   */
  readonly #aside = new Set<Promise<unknown>>();
  /** Receivers whose secret did not open at their last load: warned about once, until it opens again. */
  readonly #unopenable = new Set<string>();

  constructor(deps: BatchLoaderDeps) {
    this.#deps = deps;
  }

  /** Fetched batches still loading. */
  get fetchedLoading(): number {
    return this.#fetched.length;
  }

  /** Waits for the oldest fetched batch's load: false when it could queue nothing. */
  oldest(): Promise<boolean> {
    return this.#fetched[0] ?? Promise.resolve(true);
  }

  /** Loads and queues a fetched batch (see above). */
  fetched(jobs: DeliveryJob[]): void {
    const load = this.#load(jobs);
    this.#fetched.push(load);
    void load.finally(() => this.#fetched.splice(this.#fetched.indexOf(load), 1));
  }

  /**
   * Deliveries a settlement moved up and claimed for this worker, with their events and receivers:
   * queued at once in the places of the deliveries settled (handed back when stopping). A claim
   * whose event the statement could not see is loaded instead: an event committed while the
   * statement waited for its lane's lock is in the lane (the lock re-reads the row) but not in the
   * statement's snapshot; sent as "event missing" it would have been dropped.
   */
  claimed({ jobs, events, receivers, followed }: Claims): void {
    if (this.#deps.closing()) {
      void this.#deps.handBack(jobs.map((job) => ({ job, event: undefined, receiver: undefined })));
      return;
    }
    let targets: Targets;
    try {
      targets = targetsFromRows(events, receivers, this.#deps.secrets);
    } catch (error) {
      this.#deps.logger.warn({ err: error, jobs: jobs.length }, 'reading claimed deliveries failed; loading them');
      targets = { events: new Map(), receivers: new Map() };
    }
    this.#reportSecrets(targets.receivers.values());
    this.#pauseThrottled(targets.receivers.values());
    this.#noteCaps(targets.receivers.values());
    const ready: Item[] = [];
    const unseen: DeliveryJob[] = [];
    for (const job of jobs) {
      const [event, receiver] = [targets.events.get(job.data.eventId), targets.receivers.get(job.data.receiverId)];
      if (event && receiver) ready.push({ job, event, receiver, followed: followed.has(job.id) });
      else unseen.push(job);
    }
    // Never handed back for want of room: that cost a hand-back, a fetch and a load each (1,456 of
    // 1,500 claims in a loaded run). Only a paused receiver's (the settling statement claims none of
    // those it knows to be paused) go back, deferred.
    const paused = this.#deps.queues.accept(ready, { always: true });
    if (paused.length) void this.#deps.handBack(paused);
    this.#deps.dispatch();
    if (unseen.length === 0) return;
    const load = this.#load(unseen, followed);
    this.#setAside(load);
  }

  /** Resolves when every load under way has ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#fetched, ...this.#aside]);
  }

  /** Tracks `work` until it ends (see #aside). */
  #setAside(work: Promise<unknown>): void {
    this.#aside.add(work);
    void work.finally(() => this.#aside.delete(work));
  }

  /** Loads a batch's events and receivers and queues it (`followed`: claims, see claimed()); false when nothing could be queued. */
  async #load(jobs: DeliveryJob[], followed?: ReadonlySet<string>): Promise<boolean> {
    const { pool, secrets, inFlight, queues, logger } = this.#deps;
    inFlight.startLoading(jobs.length);
    try {
      const [targets, [lost, adopted]] = await Promise.all([
        loadTargets(
          pool,
          jobs.map((j) => j.data),
          secrets,
        ),
        // One after the other: both write the fetched jobs' rows (adoption deletes laneless ones),
        // and a lost job that adoption moves is still recorded. No statement when none was lost.
        (async () => {
          const lost = await recordLostAttempts(pool, jobs);
          return [lost, followed ? null : await adoptLanelessJobs(pool, jobs)] as const;
        })(),
      ]);
      if (lost)
        logger.warn({ jobs: lost }, 'deliveries handed out again after their worker was lost; recorded as worker_lost');
      if (adopted?.laneless)
        logger.info(
          { jobs: adopted.laneless, waiting: adopted.moved.size },
          'deliveries queued without a lane (by a version before lanes, or the SQL replay of docs/webhooks-sql.md) put into their lanes',
        );
      this.#reportSecrets(targets.receivers.values());
      this.#pauseThrottled(targets.receivers.values());
      this.#noteCaps(targets.receivers.values());
      const items = jobs
        .filter((job) => !adopted?.moved.has(job.id))
        .map((job) => ({
          job,
          event: targets.events.get(job.data.eventId),
          receiver: targets.receivers.get(job.data.receiverId),
          followed: followed?.has(job.id),
        }));
      inFlight.loaded(jobs.length);
      // Claims take the places of the deliveries whose settlements claimed them (see claimed()).
      const excess = queues.accept(items, { always: followed !== undefined });
      this.#deps.dispatch();
      // A paused receiver's jobs go back at once (deferred: worker.ts), never parked.
      const paused = excess.filter((i) => queues.pausedUntil(i.job.data.receiverId) > 0);
      const rest = paused.length ? excess.filter((i) => !paused.includes(i)) : excess;
      if (rest.some((i) => !queues.measured(i.job.data.receiverId)) && !this.#deps.closing()) {
        if (paused.length) await this.#deps.handBack(paused);
        this.#setAside(this.#park(rest));
        return true;
      }
      await this.#deps.handBack(excess);
      return excess.length < jobs.length;
    } catch (error) {
      inFlight.loaded(jobs.length);
      logger.warn({ err: error, jobs: jobs.length }, 'loading deliveries failed; handing the jobs back');
      await this.#deps.handBack(jobs.map((job) => ({ job, event: undefined, receiver: undefined })));
      return false;
    }
  }

  /** Offers `excess` again until no job of it waits for a receiver that has not answered yet, or FIRST_ANSWERS_WAIT_MS; hands back the rest. */
  async #park(excess: Item[]): Promise<void> {
    const { queues, closing, dispatch, handBack } = this.#deps;
    const deadline = performance.now() + FIRST_ANSWERS_WAIT_MS;
    let rest = excess;
    while (!closing() && performance.now() < deadline && rest.some((i) => !queues.measured(i.job.data.receiverId))) {
      await sleep(PARK_POLL_MS);
      if (closing()) break;
      rest = queues.accept(rest);
      dispatch();
    }
    await handBack(rest);
  }

  /** Pauses the receivers whose rows say they asked to be left alone (a 429/503 with Retry-After). */
  #pauseThrottled(receivers: Iterable<ReceiverToSend>): void {
    const now = Date.now();
    for (const r of receivers) if (r.throttledForMs !== null) this.#deps.pause(r.id, now + r.throttledForMs);
  }

  /** The receivers' rate caps as loaded (rate-gate.ts): nothing to do while no receiver here has one. */
  #noteCaps(receivers: Iterable<ReceiverToSend>): void {
    const { queues } = this.#deps;
    for (const r of receivers) if (r.maxPerSecond !== null || queues.capped() > 0) queues.setCap(r.id, r.maxPerSecond);
  }

  /** Warns once per receiver whose secret did not open at its load, until it opens again. */
  #reportSecrets(receivers: Iterable<ReceiverToSend>): void {
    for (const r of receivers) {
      if (r.secretUnavailable === null || !r.enabled) {
        this.#unopenable.delete(r.id);
      } else if (!this.#unopenable.has(r.id)) {
        this.#unopenable.add(r.id);
        this.#deps.logger.warn(
          { receiverId: r.id, reason: r.secretUnavailable },
          "receiver's signing secret cannot be opened: its deliveries fail as secret_unavailable (retried, then dead-lettered) until SECRET_ENCRYPTION_KEY/_PREVIOUS open it or its secret is rotated",
        );
      }
    }
  }
}
