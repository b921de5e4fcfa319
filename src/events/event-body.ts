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
 * The body of a stored event restated as a message of its own (a view change's restatement: the same
 * change under a fresh id and a newer version of its record, which a receiver comparing versions
 * applies), rendered by renderEventBody with the stored body's `data` as it is. Every stored body is
 * that renderer's envelope (or the resync's made events', the same), so its first `,"data":` is the
 * envelope's.
 */
export function restatedBody(
  stored: { id: string; type: EventType; occurredAt: Date; resourceId: string; body: string },
  to: { id: string; version: number },
): string {
  const at = stored.body.indexOf(',"data":');
  if (!stored.body.startsWith(`{"id":${JSON.stringify(stored.id)}`) || at < 0 || !stored.body.endsWith('}'))
    throw new Error(`event ${stored.id}: its body is not an event envelope`);
  return renderEventBody({ ...stored, ...to, doc: stored.body.slice(at + ',"data":'.length, -1) });
}
