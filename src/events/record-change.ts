// Turns a committed-together change into an event: derives its type, stores it with its exact body
// and hands it to the fan-out, all inside the caller's transaction.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { deriveEventType, type EventType, type Snapshot } from './derive-event.ts';
import { Event } from './entities.ts';
import { renderEventBody } from './event-body.ts';

export type Change = { resourceId: string; before: Snapshot; after: Snapshot; at: Date };
export type StoredEvent = { id: string; type: EventType; resourceId: string; occurredAt: Date; body: string };

/** Called with every stored event, inside the transaction that stored it (e.g. to enqueue deliveries). */
export type EventFanOut = (em: EntityManager, event: StoredEvent) => Promise<void>;

/** The hook the catalog calls for every change: stores the event (if any) and fans it out. */
export type ChangeRecorder = (em: EntityManager, change: Change) => Promise<StoredEvent | null>;

export function createChangeRecorder(fanOut: EventFanOut | null): ChangeRecorder {
  return async (em, change) => {
    const type = deriveEventType(change.before, change.after);
    if (!type) return null;
    const id = randomUUID();
    const event: StoredEvent = {
      id,
      type,
      resourceId: change.resourceId,
      occurredAt: change.at,
      body: renderEventBody({ id, type, occurredAt: change.at, resourceId: change.resourceId, doc: type === 'LEARNING_OPPORTUNITY_DELETED' ? null : (change.after?.doc ?? null) }),
    };
    // A plain insert, not the unit of work: a flush would diff every entity the transaction holds,
    // and a bulk write holds thousands (one flush per event made a batch of 500 quadratic).
    await em.insert(Event, event);
    if (fanOut) await fanOut(em, event);
    return event;
  };
}
