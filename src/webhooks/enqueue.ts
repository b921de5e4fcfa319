// Inserting delivery jobs and dead letters, always through a caller-supplied `db` so that they commit
// with the caller's transaction (a mutation, an attempt's settlement, a redelivery or a replay).
import type { Db, PgBoss } from 'pg-boss';
import { restoreJobs } from 'pg-boss/dist/plans.js';
import { BOSS_SCHEMA, DEAD_LETTER_QUEUE, DELIVERY_QUEUE, type DeadLetterData, type DeliveryJobData } from './queue.ts';

export type Delivery = DeliveryJobData & { delayMs?: number };

/** One job per delivery, grouped by receiver (per-receiver concurrency), in one statement. */
export async function enqueueDeliveries(boss: PgBoss, db: Db, deliveries: readonly Delivery[]): Promise<void> {
  if (deliveries.length === 0) return;
  await boss.insert(
    DELIVERY_QUEUE,
    deliveries.map((d) => ({
      data: { eventId: d.eventId, receiverId: d.receiverId, attempt: d.attempt } satisfies DeliveryJobData,
      group: { id: d.receiverId },
      // Seconds relative to the database clock (a bare number is an interval in seconds).
      ...(d.delayMs ? { startAfter: (d.delayMs / 1000).toFixed(3) } : {}),
    })),
    { db },
  );
}

export async function enqueueDeadLetters(boss: PgBoss, db: Db, letters: readonly DeadLetterData[]): Promise<void> {
  if (letters.length === 0) return;
  await boss.insert(
    DEAD_LETTER_QUEUE,
    letters.map((l) => ({ data: { eventId: l.eventId, receiverId: l.receiverId, attempts: l.attempts, ...(l.reason ? { reason: l.reason } : {}) } satisfies DeadLetterData })),
    { db },
  );
}

/** Enabled receivers subscribed to an event type (an empty subscription means every type). */
export const SUBSCRIBED_RECEIVERS_SQL = `select id from receiver where enabled and (cardinality(event_types) = 0 or $1 = any(event_types)) order by created_at, id`;

/**
 * Puts fetched jobs back as they were before the fetch (created, and not counted as a retry), for
 * jobs the worker claimed but will not send now. pg-boss's own statement (what its work() does with
 * a local group limit's excess); it is not on the public API, hence the deep import.
 */
export async function handBackJobs(boss: PgBoss, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await boss.getDb().executeSql(restoreJobs(BOSS_SCHEMA, 'job'), [DELIVERY_QUEUE, ids]);
}
