// Settles finished attempts: the attempt row, the job's deletion, each failed delivery's follow-up
// (its next attempt, or its dead letter) and the receiver's health are written by one statement
// (queue/settle-jobs.ts settleJobs), so an attempt is never recorded without its follow-up, nor followed up twice.
//
// Settlements are group-committed: while one statement runs, the next ones queue up and go together
// in the following one, and a small group waits a few ms for more (GATHER_MS), which keeps the
// statements per delivery low under load. One bad settlement cannot hold the others back: when a group fails, each of its
// settlements is tried alone, and only the ones that fail alone stay unsettled (their jobs are
// handed out again when they expire: at-least-once).
import type { Pool } from 'pg';
import type { Logger } from '../../kernel/logger.ts';
import { reportAutomaticDisables } from '../receivers/auto-disable.ts';
import { type DeliveryJobData, type WebhookConfig } from '../queue/boss.ts';
import { type JobSettlement, settleJobs, type SettleOutcome } from '../queue/settle-jobs.ts';
import type { Claims } from '../queue/settled-claims.ts';
import { nextStep, type NextStep } from './retry-policy.ts';
import { retryConflicts } from '../../db/pg-transaction.ts';
import { heldConnection, type Settler } from './settle-connection.ts';
import type { SendResult } from './send-webhook.ts';

export type Settlement = {
  job: { id: string; retryCount: number };
  data: DeliveryJobData;
  startedAt: Date;
  result: SendResult;
  /**
   * Settled at once, without waiting GATHER_MS for a larger group: the next delivery of its record
   * waits behind it in its lane and its receiver has nothing else to do meanwhile (see SendSlots).
   */
  urgent?: boolean;
};

export type Settled = Settlement & { next: NextStep };

export type AttemptRecorder = {
  /** Resolves once the attempt and its follow-up are committed (with the step taken). */
  record: (settlement: Settlement) => Promise<NextStep>;
  /** Waits for every queued settlement. */
  drain: () => Promise<void>;
};

const MAX_BATCH = 500;
/** Settlements that start a statement at once; a smaller group waits up to GATHER_MS for more. */
const GROUP_TARGET = 32;
const GATHER_MS = 5;

type Deps = {
  pool: Pool;
  config: Pick<WebhookConfig, 'maxAttempts' | 'backoffBaseMs' | 'backoffMaxMs' | 'disableAfterHours'>;
  logger: Logger;
  /** Called after each commit with what was settled (e.g. to wake the worker when a retry comes due). */
  onCommitted?: (settled: Settled[]) => void;
  /**
   * Given, the settling statement claims the deliveries that lanes move up (queue/lanes.ts) for
   * this worker, and hands them here with their events and receivers to be sent (or handed back):
   * no fetch nor load round trip per record.
   */
  onClaimed?: (claims: Claims) => void;
  /** How long the settling connection is kept without a settlement (settle-connection.ts; default 1 s). */
  holdSettlerMs?: number;
};

type Waiting = {
  settlement: Settlement;
  at: number;
  resolve: (step: NextStep) => void;
  reject: (error: unknown) => void;
};

/** Settles `batch` in one statement and releases its waiters; the step taken is `done` for a claim lost or a receiver removed meanwhile. */
async function settle(deps: Deps & { settler: Settler }, batch: readonly Waiting[]): Promise<void> {
  const planned = batch.map(({ settlement: s }): Settled => ({
    ...s,
    // A superseded delivery is finished: its lane moves on to the newer event.
    next: s.result.outcome === 'superseded' ? { kind: 'done' } : nextStep(s.result, s.data, deps.config),
  }));
  const result = await settleJobs(deps.settler, planned.map(toJobSettlement), {
    disableAfterHours: deps.config.disableAfterHours,
    claim: deps.onClaimed !== undefined,
  });
  if (result.claimed.jobs.length) deps.onClaimed?.(result.claimed);
  const disabled = new Set(result.disabled.map((d) => d.id));
  const settled = planned.map((s, i): Settled => {
    if (!taken(result.outcomes[i]!)) return { ...s, next: { kind: 'done' } };
    // This very statement disabled the receiver (a 410, or failing too long), or it was disabled
    // meanwhile: the retry it would have enqueued became a dead letter instead.
    if (s.next.kind === 'retry' && (disabled.has(s.data.receiverId) || !result.outcomes[i]!.receiverEnabled))
      return { ...s, next: { kind: 'dead', reason: 'receiver_disabled' } };
    return s;
  });
  batch.forEach((w, i) => w.resolve(settled[i]!.next));
  deps.onCommitted?.(settled);
  reportAutomaticDisables({ disableAfterHours: deps.config.disableAfterHours, logger: deps.logger }, result);
}

/** A group that failed, settlement by settlement: only the ones that fail alone stay unsettled. */
async function settleOneByOne(deps: Deps & { settler: Settler }, batch: readonly Waiting[]): Promise<void> {
  for (const w of batch) {
    try {
      await retryConflicts(() => settle(deps, [w]));
    } catch (error) {
      const { eventId, receiverId, attempt } = w.settlement.data;
      deps.logger.error(
        { err: error, eventId, receiverId, attempt },
        'recording a delivery attempt failed; the job will be handed out again when it expires',
      );
      w.reject(error);
    }
  }
}

export function createAttemptRecorder(given: Deps): AttemptRecorder {
  const deps = { ...given, settler: heldConnection(given.pool, given.holdSettlerMs) };
  let queue: Waiting[] = [];
  // The settling statement in flight, if any (it takes whatever has queued up when it starts).
  // One at a time: a group is one round trip (no lock waits since receiver health is written about
  // once a second), and while it runs the next group gathers. A second statement in flight halved
  // the groups and doubled the statements per delivery, for more database and worker CPU per
  // delivery (measured on the 2-core benchmark machine: 0.27-0.41 round trips per delivery with
  // two, 0.09-0.14 with one).
  let running: Promise<void> | null = null;
  // A group smaller than GROUP_TARGET waits until its oldest settlement is GATHER_MS old (this
  // timer): each statement costs PostgreSQL a fixed price besides its rows (about 0.9 ms of CPU on
  // the 2-core benchmark machine: the statement's many parts, the commit), so a few ms more before
  // an attempt is recorded buy larger groups. The delivery itself is not delayed: it has been sent;
  // but the next delivery of its record is, when it waits in the lane (ordered delivery: it becomes
  // a job only in this statement). So an `urgent` settlement (such a lane, and nothing else queued
  // or sent to its receiver) starts the statement at once: a hot record alone moved one delivery per
  // send + 5 ms + statement + load before.
  let gathering: NodeJS.Timeout | null = null;

  async function run(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.slice(0, MAX_BATCH);
      queue = queue.slice(batch.length);
      try {
        // A group that loses a deadlock (an operator's disable on the same rows) is settled again, whole.
        await retryConflicts(() => settle(deps, batch));
      } catch (groupError) {
        if (batch.length > 1)
          deps.logger.warn(
            { err: groupError, jobs: batch.length },
            'settling a group of attempts failed; settling them one by one',
          );
        await settleOneByOne(deps, batch);
      }
    }
  }

  function kick(): void {
    if (running || queue.length === 0) return;
    const gather = queue.length < GROUP_TARGET && !queue.some((w) => w.settlement.urgent);
    const wait = gather ? queue[0]!.at + GATHER_MS - performance.now() : 0;
    if (wait > 0) {
      gathering ??= setTimeout(() => {
        gathering = null;
        kick();
      }, wait);
      return;
    }
    start();
  }

  /** Runs the settling statements now, whatever is gathering. */
  function start(): void {
    if (gathering) clearTimeout(gathering);
    gathering = null;
    running = run().finally(() => {
      running = null;
      kick();
    });
  }

  return {
    record(settlement) {
      return new Promise<NextStep>((resolve, reject) => {
        queue.push({ settlement, at: performance.now(), resolve, reject });
        kick();
      });
    },
    async drain() {
      if (!running && queue.length > 0) start(); // what is gathering goes now
      while (running) await running;
      deps.settler.release();
    },
  };
}

const taken = (o: SettleOutcome) => o.held && o.receiverExists;

function toJobSettlement(s: Settled): JobSettlement {
  const { result } = s;
  return {
    job: s.job,
    data: s.data,
    attempt: {
      startedAt: s.startedAt,
      durationMs: result.durationMs,
      statusCode: result.statusCode,
      error: result.error,
      excerpt: result.responseExcerpt,
      outcome: result.outcome,
    },
    next: s.next,
    receiverPauseMs: result.retryAfterMs ?? null,
  };
}
