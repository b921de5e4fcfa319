// The event a view's feed holds where a record left the view (views/view.ts, viewEventKind):
// LEARNING_OPPORTUNITY_LEFT_VIEW, rendered by the events' one renderer (events/event-body.ts) with
// the envelope of the event it stands for (occurredAt, resource, version) and data null, under an id
// of its own derived from that event's id and the view.
import { createHash } from 'node:crypto';
import type { EventType } from '../events/derive-event.ts';
import { renderEventBody } from '../events/event-body.ts';
import { canonicalView, type View } from './view.ts';

/** The type of the event a view's feed holds where a record left the view (data null). */
export const LEFT_VIEW_EVENT_TYPE = 'LEARNING_OPPORTUNITY_LEFT_VIEW' satisfies EventType;

// The namespace of LEFT_VIEW event ids (UUID v5, RFC 9562): a fixed random UUID of this service.
const LEFT_VIEW_NAMESPACE = Buffer.from('5b0e7c6e8f4a4d1fa3c2b8d9e6f1a047', 'hex');

/**
 * The id of the LEFT_VIEW event that stands for event `eventId` in the feed of `view`: a UUID v5 of
 * the event id and the view's canonical text, so the same event leaving the same view always has the
 * same id (receivers de-duplicate on it) and never the id of a stored event.
 */
export function leftViewEventId(eventId: string, view: View): string {
  const hash = createHash('sha1')
    .update(LEFT_VIEW_NAMESPACE)
    .update(`${eventId} ${canonicalView(view)}`)
    .digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The LEFT_VIEW body of an event, by the events' one renderer (events/event-body.ts): same envelope, data null. */
export function renderLeftViewEvent(
  event: { id: string; occurredAt: Date; resourceId: string; version: number },
  view: View,
): string {
  return renderEventBody({
    id: leftViewEventId(event.id, view),
    type: LEFT_VIEW_EVENT_TYPE,
    occurredAt: event.occurredAt,
    resourceId: event.resourceId,
    version: event.version,
    doc: null,
  });
}
