// The webhook gauges of /metrics, from pg-boss's cached queue counts (no scan of the job table).
import type { PgBoss } from 'pg-boss';
import { deadLetters, queueDepth } from '../metrics.ts';
import { DEAD_LETTER_QUEUE, DELIVERY_QUEUE } from './queue.ts';

export async function refreshWebhookGauges(boss: PgBoss): Promise<void> {
  const queues = await boss.getQueues([DELIVERY_QUEUE, DEAD_LETTER_QUEUE]);
  const delivery = queues.find((q) => q.name === DELIVERY_QUEUE);
  const dead = queues.find((q) => q.name === DEAD_LETTER_QUEUE);
  queueDepth.set((delivery?.queuedCount ?? 0) + (delivery?.activeCount ?? 0));
  deadLetters.set(dead?.queuedCount ?? 0);
}
