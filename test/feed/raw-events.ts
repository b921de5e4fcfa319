// Events written straight into the event table, in transactions a test controls (held open,
// committed out of order): the feed's guarantees are about transactions, whoever writes them.
import { randomUUID } from 'node:crypto';
import { renderEventBody } from '../../src/events/event-body.ts';

/** What runs the insert: a pool (a transaction of its own) or a connection (inside its open transaction). */
type Runs = { query: (text: string, values: unknown[]) => Promise<unknown> };

/** Inserts one DELETED event for a fresh resource id; returns the event id. */
export async function insertRawEvent(client: Runs, resourceId: string = randomUUID()): Promise<string> {
  const id = randomUUID();
  const occurredAt = new Date();
  const body = renderEventBody({
    id,
    type: 'LEARNING_OPPORTUNITY_DELETED',
    occurredAt,
    resourceId,
    version: 1,
    doc: null,
  });
  await client.query('insert into event (id, type, resource_id, occurred_at, body) values ($1, $2, $3, $4, $5)', [
    id,
    'LEARNING_OPPORTUNITY_DELETED',
    resourceId,
    occurredAt,
    body,
  ]);
  return id;
}
