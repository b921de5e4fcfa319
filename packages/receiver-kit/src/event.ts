// The delivery body of SPEC.md section 6 as a consumer sees it, and the check that a parsed body
// has that shape. Self-contained (no service imports) so that consumers can copy the kit as is.

export const WEBHOOK_EVENT_TYPES = [
  'LEARNING_OPPORTUNITY_PUBLISHED',
  'LEARNING_OPPORTUNITY_UPDATED',
  'LEARNING_OPPORTUNITY_ARCHIVED',
  'LEARNING_OPPORTUNITY_DELETED',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The public record (same shape as GET /v1/learning-opportunities/{id}); fields beyond these are kept as they come. */
export type LearningOpportunitySnapshot = { id: string; updatedAt: string; [field: string]: unknown };

/**
 * `resource.version`: a positive integer, strictly greater than the version of every earlier event of
 * the same resource id (a re-created id goes on from where it stopped). Apply an event only when its
 * version is newer than the one you hold (version-store.ts). Bodies stored before versions existed
 * were given theirs by the service's migration, so every event has one.
 */
type EventBase = { id: string; occurredAt: string; resource: { type: 'LEARNING_OPPORTUNITY'; id: string; version: number } };
export type SnapshotEvent = EventBase & { type: Exclude<WebhookEventType, 'LEARNING_OPPORTUNITY_DELETED'>; data: LearningOpportunitySnapshot };
export type DeletedEvent = EventBase & { type: 'LEARNING_OPPORTUNITY_DELETED'; data: null };
export type WebhookEvent = SnapshotEvent | DeletedEvent;

/** The delivery headers (lower case, as node and fetch present them). */
export const HEADERS = {
  eventId: 'x-service-event-id',
  eventType: 'x-service-event-type',
  timestamp: 'x-service-timestamp',
  signature: 'x-service-signature',
  /** The event's `resource.version`, as a decimal string. */
  resourceVersion: 'x-service-resource-version',
} as const;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isUuid = (v: unknown): v is string => typeof v === 'string' && UUID_RE.test(v);

/** Returns what is wrong with `value` as a v1 event, or null when it is one. Unknown extra fields are allowed. */
export function eventShapeProblem(value: unknown): string | null {
  if (!isObject(value)) return 'body is not a JSON object';
  if (!isUuid(value.id)) return 'id must be a UUID';
  if (typeof value.type !== 'string' || !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(value.type)) return `type must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}`;
  if (typeof value.occurredAt !== 'string' || !TIMESTAMP_RE.test(value.occurredAt)) return 'occurredAt must be an ISO 8601 UTC timestamp';
  const resource = value.resource;
  if (!isObject(resource) || resource.type !== 'LEARNING_OPPORTUNITY' || !isUuid(resource.id)) return 'resource must be { type: "LEARNING_OPPORTUNITY", id: <UUID>, version: <positive integer> }';
  if (!Number.isSafeInteger(resource.version) || (resource.version as number) < 1) return 'resource.version must be a positive integer';
  if (value.type === 'LEARNING_OPPORTUNITY_DELETED') {
    if (value.data !== null) return 'data must be null for LEARNING_OPPORTUNITY_DELETED';
  } else {
    const data = value.data;
    if (!isObject(data)) return `data must be the record snapshot for ${value.type}`;
    if (data.id !== resource.id) return 'data.id must equal resource.id';
    if (typeof data.updatedAt !== 'string') return 'data.updatedAt must be a timestamp';
  }
  return null;
}
