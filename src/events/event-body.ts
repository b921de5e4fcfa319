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
 * The body of a stored event restated under another id and a newer version of its record (a view
 * change's restatement: the same change, sent again as a message of its own that a receiver comparing
 * versions applies). Every body starts with its id and then its envelope's resource (renderEventBody,
 * the resync's made events), before `data`.
 */
export function restatedBody(
  body: string,
  from: { id: string; resourceId: string; version: number },
  to: { id: string; version: number },
): string {
  const prefix = `{"id":${JSON.stringify(from.id)}`;
  const resource = `,"resource":{"type":"LEARNING_OPPORTUNITY","id":${JSON.stringify(from.resourceId)},"version":`;
  const at = body.indexOf(`${resource}${from.version}}`);
  if (!body.startsWith(prefix) || at < 0)
    throw new Error(`event ${from.id}: its body does not start with its envelope`);
  const rest = body.slice(at + resource.length + String(from.version).length);
  return `{"id":${JSON.stringify(to.id)}${body.slice(prefix.length, at)}${resource}${to.version}${rest}`;
}
