// Which event, if any, a change emits: the table of docs/contract.md, "Events", in one place.
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '@lods/receiver-kit';
import type { Status } from '../catalog/record.ts';

/** The event types are part of the webhook contract, declared once in the receiver kit. */
export const EVENT_TYPES = WEBHOOK_EVENT_TYPES;
export type EventType = WebhookEventType;

/** A record as a public consumer could see it at one moment; null when it does not exist. */
export type Snapshot = { status: Status; doc: string } | null;

export function deriveEventType(before: Snapshot, after: Snapshot): EventType | null {
  const wasPublic = before?.status === 'PUBLISHED';
  if (after === null) {
    // A deleted draft was never observable; an archived record was, as an ARCHIVED event.
    return before && before.status !== 'DRAFT' ? 'LEARNING_OPPORTUNITY_DELETED' : null;
  }
  if (after.status === 'PUBLISHED') {
    if (!wasPublic) return 'LEARNING_OPPORTUNITY_PUBLISHED';
    return before.doc === after.doc ? null : 'LEARNING_OPPORTUNITY_UPDATED';
  }
  if (after.status === 'ARCHIVED' && wasPublic) return 'LEARNING_OPPORTUNITY_ARCHIVED';
  return null;
}
