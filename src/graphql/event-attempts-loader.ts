// WebhookEvent.attempts through one statement per page of events instead of one per event.
// graphql-js resolves the field once per event of a list, all in the same tick; the loader holds
// those asks until the tick is over and reads them together (listAttemptsOfEvents). Asks with other
// arguments (receiverId, limit, offset) go to a batch of their own.
import type { Pool } from 'pg';
import { type AttemptView, type EventAttemptsPage, listAttemptsOfEvents } from '../webhooks/delivery/attempt-reads.ts';

export type EventAttemptsLoader = (eventId: string, page: EventAttemptsPage) => Promise<AttemptView[]>;

type Batch = { eventIds: Set<string>; attempts: Promise<Map<string, AttemptView[]>> };

// After the promise jobs already queued, so that a resolver that awaited a settled promise before
// asking still joins the batch (DataLoader schedules the same way).
const afterThisTick = () => new Promise<void>((resolve) => queueMicrotask(() => process.nextTick(resolve)));

/** One per GraphQL request (its context): a batch never mixes requests, and nothing outlives one. */
export function createEventAttemptsLoader(pool: Pool): EventAttemptsLoader {
  const pending = new Map<string, Batch>();
  return async (eventId, page) => {
    const key = JSON.stringify([page.receiverId ?? null, page.limit, page.offset]);
    let batch = pending.get(key);
    if (!batch) {
      const eventIds = new Set<string>();
      const attempts = afterThisTick().then(() => {
        pending.delete(key); // later asks start a new batch
        return listAttemptsOfEvents(pool, [...eventIds], page);
      });
      batch = { eventIds, attempts };
      pending.set(key, batch);
    }
    batch.eventIds.add(eventId);
    return (await batch.attempts).get(eventId)!;
  };
}
