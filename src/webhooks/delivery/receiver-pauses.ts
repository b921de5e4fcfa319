// Backpressure in the worker (worker.ts): a receiver that answers 429 or 503 with a valid
// Retry-After (retry-policy.ts) is paused here until then (receiver-queues.ts): its queued jobs go
// back to the queue deferred until then (queue/boss.ts deferJobs), it is left out of fetches, and a
// retry timer wakes the pump when the pause ends. The pause is also kept in the receiver's row (the
// settling statement writes receiver.throttled_until), so that a worker loading one of its jobs later
// (another process, or a job deferred too little) pauses it as well before sending anything
// (load-batch.ts). Requests already on the wire, and jobs another worker had already loaded, still go out.
// An operator ends a pause early by clearing the row's `throttled_until` (docs/webhooks-sql.md): the
// worker's poll rechecks the rows of the receivers it holds paused (recheck below, one statement, only
// while some receiver is paused) and ends the pauses their rows no longer hold. A pause set in the
// last PAUSE_WRITTEN_MS is left alone: its row may not hold it yet (the settling statement writes it).
import type { PgBoss } from 'pg-boss';
import type { Logger } from '../../kernel/logger.ts';
import { deferJobs, handBackJobs } from '../queue/boss.ts';
import type { Item, ReceiverQueues } from './send-slots.ts';

export type ReceiverPauses = {
  /** Hands jobs back to the queue (never rejects); those of a paused receiver not to be handed out again before its pause ends. */
  handBack: (items: Item[]) => Promise<void>;
  /** Receiver `receiverId` asked to be left alone until `until` (Date.now() ms): paused, its queued jobs handed back deferred. */
  pause: (receiverId: string, until: number) => void;
  /** Ends the pauses whose receiver rows no longer hold them (an operator cleared `throttled_until`); never rejects. */
  recheck: () => Promise<void>;
};

/** How old a pause must be before its row is trusted to hold it (see above). */
const PAUSE_WRITTEN_MS = 5000;
const HELD_SQL = `select id::text as id from receiver where id = any($1::uuid[]) and throttled_until > now()`;

const NOTHING = Promise.resolve();

/**
 * `timers`: the worker's retry timers (retry-timers.ts), which wake its pump when a pause ends;
 * `handedBack`: called once jobs are back in the queue (the worker's pump fetches again, pump.ts).
 */
export function createReceiverPauses(
  boss: PgBoss,
  queues: ReceiverQueues,
  logger: Logger,
  timers: { wakeAt: (at: number) => void },
  handedBack: () => void = () => {},
): ReceiverPauses {
  const handBack = (items: Item[]): Promise<void> => {
    // Asked after every delivery, mostly with nothing: no statement promises to build and wait for.
    if (items.length === 0) return NOTHING;
    const plain: string[] = [];
    const deferred = new Map<number, string[]>(); // until -> job ids
    for (const i of items) {
      const until = queues.pausedUntil(i.job.data.receiverId);
      if (until === 0) plain.push(i.job.id);
      else deferred.set(until, [...(deferred.get(until) ?? []), i.job.id]);
    }
    const now = Date.now();
    return Promise.all([
      handBackJobs(boss, plain),
      ...[...deferred].map(([until, ids]) => deferJobs(boss, ids, until - now)),
    ]).then(
      () => handedBack(),
      (error: unknown) =>
        logger.warn({ err: error, jobs: items.length }, 'handing jobs back failed; they return when they expire'),
    );
  };
  let rechecking = false;
  return {
    handBack,
    async recheck() {
      const paused = queues.pausedSince(PAUSE_WRITTEN_MS);
      // One look at a time: a slow database never piles up a statement per poll.
      if (paused.length === 0 || rechecking) return;
      rechecking = true;
      try {
        const { rows } = await boss.getDb().executeSql(HELD_SQL, [paused]);
        const held = new Set((rows as { id: string }[]).map((r) => r.id));
        const ended = paused.filter((id) => !held.has(id) && queues.resume(id));
        if (ended.length === 0) return;
        logger.info({ receivers: ended }, 'pauses ended early: their receivers no longer ask to be left alone');
        timers.wakeAt(Date.now());
      } catch (error) {
        logger.warn({ err: error }, 'rechecking paused receivers failed; their pauses end at their time');
      } finally {
        rechecking = false;
      }
    },
    pause(receiverId, until) {
      const taken = queues.pause(receiverId, until);
      timers.wakeAt(until);
      if (taken.length) void handBack(taken);
    },
  };
}
