// Turns a committed-together change into an event: derives its type, stores it with its exact body
// and hands it to the fan-out, all inside the caller's transaction.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { sqlOf } from '../db/transaction-sql.ts';
import { deriveEventType, type EventType, type Snapshot } from './derive-event.ts';
import { renderEventBody } from './event-body.ts';

export type Change = { resourceId: string; before: Snapshot; after: Snapshot; at: Date };
export type StoredEvent = { id: string; type: EventType; resourceId: string; occurredAt: Date; body: string };

/** Called with the events stored by a transaction, in order, inside it (e.g. to enqueue deliveries). */
export type EventFanOut = (em: EntityManager, events: readonly StoredEvent[]) => Promise<void>;

/**
 * The hook the catalog calls with the changes of one transaction (one or a batch): stores their
 * events (a change may have none) and fans them out together. Returns the stored events, in order.
 */
export type ChangeRecorder = (em: EntityManager, changes: readonly Change[]) => Promise<StoredEvent[]>;

const INSERT_EVENTS = `insert into event (id, type, resource_id, occurred_at, body)
  select id, type, resource_id, occurred_at, body from unnest($1::uuid[], $2::text[], $3::uuid[], $4::timestamptz[], $5::text[]) with ordinality as e(id, type, resource_id, occurred_at, body, o) order by o`;

function eventOf(change: Change): StoredEvent | null {
  const type = deriveEventType(change.before, change.after);
  if (!type) return null;
  const id = randomUUID();
  return {
    id,
    type,
    resourceId: change.resourceId,
    occurredAt: change.at,
    body: renderEventBody({ id, type, occurredAt: change.at, resourceId: change.resourceId, doc: type === 'LEARNING_OPPORTUNITY_DELETED' ? null : (change.after?.doc ?? null) }),
  };
}

export function createChangeRecorder(fanOut: EventFanOut | null): ChangeRecorder {
  return async (em, changes) => {
    const events = changes.map(eventOf).filter((e) => e !== null);
    if (events.length === 0) return [];
    // One multi-row insert with bound parameters, on the caller's transaction (the bodies hold the
    // records' docs, megabytes per batch).
    await sqlOf(em)(INSERT_EVENTS, [events.map((e) => e.id), events.map((e) => e.type), events.map((e) => e.resourceId), events.map((e) => e.occurredAt), events.map((e) => e.body)]);
    await fanOut?.(em, events);
    return events;
  };
}
