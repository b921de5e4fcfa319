// The delivery body of an event (docs/contract.md, "Event body"). The record's rendered bytes are spliced in
// as they are, so `data` is byte for byte what GET /v1/learning-opportunities/{id} returned.
// `resource.version` orders the events of one resource (docs/contract.md, "Delivery guarantees").
import type { EventType } from './derive-event.ts';

export function renderEventBody(event: {
  id: string;
  type: EventType;
  occurredAt: Date;
  resourceId: string;
  version: number;
  doc: string | null;
}): string {
  return (
    `{"id":${JSON.stringify(event.id)}` +
    `,"type":${JSON.stringify(event.type)}` +
    `,"occurredAt":${JSON.stringify(event.occurredAt.toISOString())}` +
    `,"resource":{"type":"LEARNING_OPPORTUNITY","id":${JSON.stringify(event.resourceId)},"version":${event.version}}` +
    `,"data":${event.doc ?? 'null'}}`
  );
}

/**
 * The body of a stored event under another id (a restatement: the same change, sent again as a
 * message of its own). Every body starts with its id (renderEventBody, the resync's made events).
 */
export function withEventId(body: string, fromId: string, toId: string): string {
  const prefix = `{"id":${JSON.stringify(fromId)}`;
  if (!body.startsWith(prefix)) throw new Error(`event ${fromId}: its body does not start with its id`);
  return `{"id":${JSON.stringify(toId)}${body.slice(prefix.length)}`;
}
