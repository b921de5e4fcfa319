// Which event, if any, a change emits: the table of CONTRACT.md section 5, in one place.
import type { Status } from '../catalog/record.ts';

export const EVENT_TYPES = [
  'LEARNING_OPPORTUNITY_PUBLISHED',
  'LEARNING_OPPORTUNITY_UPDATED',
  'LEARNING_OPPORTUNITY_ARCHIVED',
  'LEARNING_OPPORTUNITY_DELETED',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

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
