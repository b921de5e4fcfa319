// The send side of the delivery worker (worker.ts): up to WORKER_CONCURRENCY slots, each filled from
// the receivers' queues (receiver-queues.ts) as soon as one frees up; a delivery is signed, sent
// (send-webhook.ts), and its attempt recorded in a group (record-attempt.ts), or dropped unsent when
// its event or receiver is gone or its receiver disabled (drop-delivery.ts). Counts live in
// in-flight.ts; the worker decides when to fetch and when to stop. A 429 or 503 with Retry-After
// pauses its receiver at once (before the slot is refilled), and is recorded as `throttled` while its
// delivery is within the throttle limits, else as the failure it is (retry-policy.ts).
import type { Pool } from 'pg';
import type { Logger } from '../../kernel/logger.ts';
import { deliveryAttempts, deliveryDuration } from '../../kernel/metrics.ts';
import type { DeliveryJob, WebhookConfig } from '../queue/boss.ts';
import type { Claims } from '../queue/settled-claims.ts';
import { headSuperseded } from '../queue/lane-reads.ts';
import { dropDelivery } from './drop-delivery.ts';
import type { InFlight } from './in-flight.ts';
import { RateGate } from './rate-gate.ts';
import type { EventToSend, ReceiverToSend } from './load-targets.ts';
import type { createReceiverQueues } from './receiver-queues.ts';
import { type AttemptRecorder, createAttemptRecorder } from './record-attempt.ts';
import { type NextStep, type ThrottleLimits, withinThrottleLimits } from './retry-policy.ts';
import { createWebhookSender, type SendResult, type WebhookSender } from './send-webhook.ts';
// The delivery headers (docs/contract.md, "Delivery headers") are the receiver kit's: the webhook contract is written once, and
// the service signs with the code its consumers verify with.
import { deliveryHeaders, WEBHOOK_TEST_EVENT_TYPE } from '@lods/receiver-kit';

/** A fetched job with what sending it needs (undefined: its event or receiver is gone). */
export type Item = {
  job: DeliveryJob;
  event: EventToSend | undefined;
  receiver: ReceiverToSend | undefined;
  /** A later delivery of its record waits behind it in its lane (known for the deliveries settlements claim). */
  followed?: boolean;
};
export type ReceiverQueues = ReturnType<typeof createReceiverQueues<Item>>;

/** The attempt recorded when a receiver's secret does not open: nothing was sent. */
const SECRET_UNAVAILABLE: SendResult = {
  outcome: 'secret_unavailable',
  statusCode: null,
  error: 'secret_unavailable',
  responseExcerpt: null,
  durationMs: 0,
};

/** The attempt recorded for a LATEST_STATE delivery that a newer event of its record superseded before it was sent. */
const SUPERSEDED: SendResult = {
  outcome: 'superseded',
  statusCode: null,
  error: null,
  responseExcerpt: null,
  durationMs: 0,
};

export type SendSlotsDeps = {
  pool: Pool;
  config: WebhookConfig;
  logger: Logger;
  queues: ReceiverQueues;
  inFlight: InFlight;
  /** True once the worker is stopping: no new send starts. */
  closing: () => boolean;
  /** Hands claims back to the queue (never rejects). */
  handBack: (items: Item[]) => Promise<void>;
  /** Wakes the worker's pump: jobs may have come into the queue (a delivery dropped: its lane's next one is a new job). */
  wake: () => void;
  /** A slot freed up: wakes the worker's pump unless the queue had nothing for it when last asked (worker.ts). */
  freed: () => void;
  /** A retry was committed, due at `at` (ms since the epoch). */
  retryAt: (at: number) => void;
  /** Deliveries that settling moved up in their lanes, already claimed for this worker (queue/lanes.ts). */
  claimed: (claims: Claims) => void;
  /** Receiver `receiverId` asked to be left alone until `until` (Date.now() ms): pause it (worker.ts). */
  pause: (receiverId: string, until: number) => void;
  /** How much throttling a delivery may meet before it counts as failures (default THROTTLE_LIMITS). */
  throttleLimits?: ThrottleLimits;
};

export class SendSlots {
  readonly #deps: SendSlotsDeps;
  readonly #sender: WebhookSender;
  readonly #recorder: AttemptRecorder;
  readonly #gate: RateGate;

  constructor(deps: SendSlotsDeps) {
    const { config } = deps;
    this.#deps = deps;
    this.#sender = createWebhookSender({
      timeoutMs: config.timeoutMs,
      allowPrivateTargets: config.allowPrivateTargets,
    });
    this.#recorder = createAttemptRecorder({
      pool: deps.pool,
      config,
      logger: deps.logger,
      onCommitted: (settled) => {
        const now = Date.now();
        for (const s of settled) if (s.next.kind === 'retry') deps.retryAt(now + s.next.delayMs);
      },
      onClaimed: deps.claimed,
    });
    this.#gate = new RateGate({ ...deps, dispatch: () => this.dispatch() });
  }

  /** Commits the attempts still being recorded and closes the sender's sockets. */
  async close(): Promise<void> {
    this.#gate.clear();
    await this.#recorder.drain();
    this.#sender.close();
  }

  /** Starts a delivery for every free slot, from the receivers' queues (a rate-capped receiver's only with a send token). */
  dispatch(): void {
    const { queues } = this.#deps;
    while (!this.#deps.closing() && this.#deps.inFlight.sending < this.#deps.config.workerConcurrency) {
      const item = queues.next(queues.capped() > 0 ? this.#gate.ready : undefined);
      if (!item) return;
      this.#deps.inFlight.startSending();
      void this.#deliver(item);
    }
  }

  /** Sends one delivery (or drops it: event or receiver gone, receiver disabled) and records the attempt. */
  async #deliver({ job, event, receiver, followed }: Item): Promise<void> {
    const { eventId, receiverId, attempt } = job.data;
    // Not a child logger: creating one per delivery costs more than the signing.
    const ids = { eventId, receiverId, attempt };
    let sent = false;
    try {
      if (!event || !receiver || !receiver.enabled) {
        const reason = !event ? 'event_missing' : !receiver ? 'receiver_removed' : 'receiver_disabled';
        await dropDelivery({ pool: this.#deps.pool, job, reason, logger: this.#deps.logger.child(ids) });
        this.#deps.wake(); // its settlement (unclaimed) made its lane's next delivery a job
        return;
      }
      const startedAt = new Date();
      // LATEST_STATE (docs/contract.md, "Delivery guarantees"): a newer event of the record waiting behind this delivery
      // supersedes it, also when it was fetched or claimed before that event was written and has
      // waited here since; checked at the last moment, it is recorded as superseded and not sent.
      const superseded = receiver.latestState && (await headSuperseded(this.#deps.pool, job.id));
      // A receiver whose secret does not open here (load-targets.ts) is not sent to: the attempt is
      // recorded as secret_unavailable (retried, then dead-lettered, as any failure).
      const cannotSign = !superseded && receiver.secretUnavailable !== null;
      let result = superseded ? SUPERSEDED : SECRET_UNAVAILABLE;
      if (!superseded && !cannotSign) {
        const headers = deliveryHeaders({
          eventId,
          eventType: event.type,
          // A test event is about no record: its body has no resource.version, so neither do its headers
          // (the column's default 1 would contradict the body).
          resourceVersion: event.type === WEBHOOK_TEST_EVENT_TYPE ? null : event.version,
          body: event.body,
          secret: receiver.secret,
          previousSecret: receiver.previousSecret,
          scheme: receiver.scheme,
          timestamp: startedAt.getTime(),
        });
        result = await this.#sender.send(receiver.url, headers, event.body);
        deliveryDuration.observe(result.durationMs / 1000);
        // Before its slot is refilled: nothing more goes to it from here until then.
        if (result.retryAfterMs !== undefined) this.#deps.pause(receiverId, Date.now() + result.retryAfterMs);
        result = withinThrottleLimits(result, job.data, this.#deps.throttleLimits);
      }
      sent = true;
      this.#deps.inFlight.sent();
      void this.#deps.handBack(
        this.#deps.queues.done(
          receiverId,
          cannotSign || superseded ? null : result.durationMs,
          result.outcome === 'timeout' || result.outcome === 'connection_error',
        ),
      );
      this.dispatch();
      // Its record's next delivery becomes a job in this settlement: settled at once when the
      // receiver has nothing else queued or being sent (its slots would idle meanwhile). Not while
      // other deliveries to it are under way: a hot record settling at once took a statement per
      // delivery, and the CPU those took from the other records' deliveries raised their latency
      // (record-attempt.ts; bench/README.md, "Ordering").
      const urgent = followed === true && this.#deps.queues.idle(receiverId);
      const next = await this.#record(job, startedAt, result, urgent);
      this.#logOutcome(ids, result, next, cannotSign);
    } catch (error) {
      this.#deps.logger.error(
        { ...ids, err: error },
        'delivery failed unexpectedly; the job will be retried after it expires',
      );
    } finally {
      if (!sent) {
        this.#deps.inFlight.sent();
        this.#deps.queues.done(receiverId, null, false);
        this.dispatch();
      }
      this.#deps.freed();
    }
  }

  /** Records a sent attempt (grouped with others by the recorder) and counts its outcome. */
  async #record(job: DeliveryJob, startedAt: Date, result: SendResult, urgent: boolean): Promise<NextStep> {
    const { receiverId } = job.data;
    this.#deps.inFlight.startRecording(receiverId);
    let next: NextStep | undefined;
    try {
      next = await this.#recorder.record({ job, data: job.data, startedAt, result, urgent });
      return next;
    } finally {
      this.#deps.inFlight.recorded(receiverId);
      // The last failed attempt is counted as "dead", so that the outcomes still sum to the attempts.
      deliveryAttempts.inc({ outcome: next?.kind === 'dead' ? 'dead' : result.outcome });
    }
  }

  #logOutcome(
    ids: { eventId: string; receiverId: string; attempt: number },
    result: SendResult,
    next: NextStep,
    cannotSign: boolean,
  ): void {
    const fields = {
      ...ids,
      outcome: result.outcome,
      statusCode: result.statusCode,
      error: result.error,
      durationMs: result.durationMs,
    };
    if (result.outcome === 'superseded')
      this.#deps.logger.debug(fields, 'delivery not sent: a newer event of its record supersedes it (LATEST_STATE)');
    // Its receiver's one warning (the worker's reportSecrets) stands for these.
    else if (cannotSign)
      this.#deps.logger.debug(
        { ...fields, next: next.kind },
        "delivery not sent: its receiver's secret cannot be opened",
      );
    else if (next.kind === 'dead')
      this.#deps.logger.warn(
        fields,
        next.reason === 'receiver_disabled'
          ? 'delivery dead-lettered: its receiver was disabled'
          : 'delivery dead-lettered after its last attempt',
      );
    else if (next.kind === 'retry' && result.outcome === 'throttled')
      this.#deps.logger.info(
        { ...fields, retryInMs: next.delayMs, throttled: next.throttled },
        'receiver asked to wait (Retry-After); delivery and receiver paused, not counted as a failure',
      );
    else if (next.kind === 'retry')
      this.#deps.logger.info({ ...fields, retryInMs: next.delayMs }, 'delivery attempt failed; retry scheduled');
    else this.#deps.logger.debug(fields, 'delivery attempt finished');
  }
}
