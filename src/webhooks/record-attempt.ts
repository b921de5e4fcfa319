// Settles finished attempts: in one transaction, the attempt rows are inserted, the jobs are deleted,
// and each failed delivery gets its next attempt (a new job with startAfter) or its dead letter. So an
// attempt is never recorded without its follow-up, nor followed up twice.
//
// Settlements are group-committed: while one transaction runs, the next ones queue up and go
// together in the following one, which keeps the statement count per delivery low under load and
// adds no delay when idle.
import type { Pool } from 'pg';
import type { PgBoss } from 'pg-boss';
import type { Logger } from '../logger.ts';
import { recordReceiverHealth } from './auto-disable.ts';
import { enqueueDeadLetters, enqueueDeliveries, type Delivery } from './enqueue.ts';
import { inTransaction } from './pg-transaction.ts';
import { DELIVERY_QUEUE, type DeadLetterData, type DeliveryJobData, type WebhookConfig } from './queue.ts';
import { nextStep, type NextStep } from './retry-policy.ts';
import type { SendResult } from './send-webhook.ts';

export type Settlement = {
  job: { id: string; retryCount: number };
  data: DeliveryJobData;
  startedAt: Date;
  result: SendResult;
};

export type Settled = Settlement & { next: NextStep };

export type AttemptRecorder = {
  /** Resolves once the attempt and its follow-up are committed (with the step taken). */
  record: (settlement: Settlement) => Promise<NextStep>;
  /** Waits for every queued settlement. */
  drain: () => Promise<void>;
};

const MAX_BATCH = 500;

// A receiver removed meanwhile (with its history) gets no attempt row.
const INSERT_ATTEMPTS_SQL = `
  insert into delivery_attempt (event_id, receiver_id, attempt, started_at, duration_ms, status_code, error, response_excerpt, outcome, dead_lettered)
  select * from unnest($1::uuid[], $2::uuid[], $3::int[], $4::timestamptz[], $5::int[], $6::int[], $7::text[], $8::text[], $9::text[], $10::boolean[])
      as u (event_id, receiver_id, attempt, started_at, duration_ms, status_code, error, response_excerpt, outcome, dead_lettered)
   where exists (select 1 from receiver r where r.id = u.receiver_id)
  returning receiver_id`;
const FOREIGN_KEY_VIOLATION = '23503';

export function createAttemptRecorder(deps: {
  boss: PgBoss;
  pool: Pool;
  config: Pick<WebhookConfig, 'maxAttempts' | 'backoffBaseMs' | 'backoffMaxMs' | 'disableAfterHours'>;
  logger: Logger;
  /** Called after each commit with the batch (e.g. to wake the worker when a retry comes due). */
  onCommitted?: (settled: Settled[]) => void;
}): AttemptRecorder {
  type Waiting = { settlement: Settlement; resolve: (step: NextStep) => void; reject: (error: unknown) => void };
  let queue: Waiting[] = [];
  let running: Promise<void> | null = null;

  function commit(batch: Waiting[]): Promise<Settled[]> {
    return inTransaction(deps.pool, async (client, db) => {
      // Fenced to the attempt we fetched: a job that expired and was handed to another worker meanwhile
      // is not ours any more, so its follow-up is left to that worker (the attempt is still recorded).
      const deleted = await deps.boss.deleteJob(
        DELIVERY_QUEUE,
        batch.map((w) => w.settlement.job),
        { db },
      );
      const held = new Set<string>((deleted as { settled?: string[] }).settled ?? []);
      const settled: Settled[] = batch.map(({ settlement: s }) => ({
        ...s,
        next: held.has(s.job.id) ? nextStep(s.result.outcome === 'success', s.data.attempt, deps.config) : { kind: 'done' },
      }));
      const inserted = await client.query<{ receiver_id: string }>(INSERT_ATTEMPTS_SQL, [
        settled.map((s) => s.data.eventId),
        settled.map((s) => s.data.receiverId),
        settled.map((s) => s.data.attempt),
        settled.map((s) => s.startedAt),
        settled.map((s) => s.result.durationMs),
        settled.map((s) => s.result.statusCode),
        settled.map((s) => s.result.error),
        settled.map((s) => s.result.responseExcerpt),
        settled.map((s) => s.result.outcome),
        settled.map((s) => s.next.kind === 'dead'),
      ]);
      const receiverExists = new Set(inserted.rows.map((r) => r.receiver_id));
      const retries: Delivery[] = [];
      const dead: DeadLetterData[] = [];
      for (const s of settled) {
        if (!receiverExists.has(s.data.receiverId)) s.next = { kind: 'done' }; // removed: nothing follows
        if (s.next.kind === 'retry') retries.push({ eventId: s.data.eventId, receiverId: s.data.receiverId, attempt: s.data.attempt + 1, delayMs: s.next.delayMs });
        if (s.next.kind === 'dead') dead.push({ eventId: s.data.eventId, receiverId: s.data.receiverId, attempts: s.data.attempt });
      }
      await enqueueDeliveries(deps.boss, db, retries);
      await enqueueDeadLetters(deps.boss, db, dead);
      await recordReceiverHealth({ boss: deps.boss, client, db, disableAfterHours: deps.config.disableAfterHours, logger: deps.logger }, settled);
      return settled;
    });
  }

  async function run(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.slice(0, MAX_BATCH);
      queue = queue.slice(batch.length);
      try {
        // A receiver removed between the check and the insert: the next try leaves it out.
        const settled = await commit(batch).catch((error: { code?: string }) => (error.code === FOREIGN_KEY_VIOLATION ? commit(batch) : Promise.reject(error)));
        batch.forEach((w, i) => w.resolve(settled[i]!.next));
        deps.onCommitted?.(settled);
      } catch (error) {
        // The jobs stay active and are handed out again once they expire: at-least-once.
        deps.logger.error({ err: error, jobs: batch.length }, 'recording delivery attempts failed');
        for (const w of batch) w.reject(error);
      }
    }
  }

  function kick(): void {
    if (running) return;
    running = run().finally(() => {
      running = null;
      if (queue.length > 0) kick();
    });
  }

  return {
    record(settlement) {
      return new Promise<NextStep>((resolve, reject) => {
        queue.push({ settlement, resolve, reject });
        kick();
      });
    },
    async drain() {
      while (running) await running;
    },
  };
}
