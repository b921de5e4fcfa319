// Which event, if any, a change emits: the table of docs/contract.md, "Events", in one place.
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '@lods/receiver-kit';

/** The event types are part of the webhook contract, declared once in the receiver kit. */
export const EVENT_TYPES = WEBHOOK_EVENT_TYPES;
export type EventType = WebhookEventType;

/**
 * The record's lifecycle statuses as deriveEventType reads them (catalog/record-schema.ts declares
 * STATUSES; the catalog hands its changes down here, so this room does not import it). The catalog
 * builds its snapshots from its own Status: a status added there fails to compile in
 * catalog/write-plans.ts and catalog-writes.ts until it is added here and the table says what it emits.
 */
export type SnapshotStatus = 'DRAFT' | 'PUBLISHED' | 'ARCHIVED';

/** A record as a public consumer could see it at one moment; null when it does not exist. */
export type Snapshot = { status: SnapshotStatus; doc: string } | null;

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
