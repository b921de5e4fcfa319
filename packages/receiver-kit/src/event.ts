// The delivery body (docs/contract.md, "Event body") as a consumer sees it, and the check that a parsed body
// has that shape. Self-contained (no service imports) so that consumers can copy the kit as is.

export const WEBHOOK_EVENT_TYPES = [
  'LEARNING_OPPORTUNITY_PUBLISHED',
  'LEARNING_OPPORTUNITY_UPDATED',
  'LEARNING_OPPORTUNITY_ARCHIVED',
  'LEARNING_OPPORTUNITY_DELETED',
  /**
   * Only to a receiver with a view (and in the feed of a view, GET /v1/events?view=): an update took
   * the record out of the view. `data` null; `resource` (id, version) that of the record after the
   * update (or, restated after a change of the receiver's view, a newer version of its own). Remove
   * the record from a copy of the view, as on DELETED.
   */
  'LEARNING_OPPORTUNITY_LEFT_VIEW',
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
type EventBase = {
  id: string;
  occurredAt: string;
  resource: { type: 'LEARNING_OPPORTUNITY'; id: string; version: number };
};
export type SnapshotEvent = EventBase & {
  type: Exclude<WebhookEventType, 'LEARNING_OPPORTUNITY_DELETED' | 'LEARNING_OPPORTUNITY_LEFT_VIEW'>;
  data: LearningOpportunitySnapshot;
};
export type DeletedEvent = EventBase & { type: 'LEARNING_OPPORTUNITY_DELETED'; data: null };
/** The record left the receiver's view (an update took it out): remove it from the copy of the view. */
export type LeftViewEvent = EventBase & { type: 'LEARNING_OPPORTUNITY_LEFT_VIEW'; data: null };
export type WebhookEvent = SnapshotEvent | DeletedEvent | LeftViewEvent;

/** The types whose `data` is null: the record is gone (DELETED) or out of the receiver's view (LEFT_VIEW). */
const DATA_NULL_TYPES: readonly string[] = ['LEARNING_OPPORTUNITY_DELETED', 'LEARNING_OPPORTUNITY_LEFT_VIEW'];

/**
 * A test delivery an operator sent to check the endpoint ("Send test event", `receivers test ID`):
 * signed like every delivery, never about a record, never in the change feed. Not a WebhookEvent:
 * there is nothing to apply; acknowledge it.
 */
export const WEBHOOK_TEST_EVENT_TYPE = 'WEBHOOK_TEST';
export type TestEvent = {
  id: string;
  type: typeof WEBHOOK_TEST_EVENT_TYPE;
  occurredAt: string;
  resource: { type: 'WEBHOOK_RECEIVER'; id: string };
  data: null;
};
/**
 * An authentic delivery that is not a catalog event: the test event, or a type newer than this kit
 * (types may be added within v1). A receiver acknowledges it (2xx) and applies nothing.
 */
export type OtherEvent =
  TestEvent | { id: string; type: string; occurredAt: string; resource?: unknown; data?: unknown };

/** The delivery headers (lower case, as node and fetch present them). */
export const HEADERS = {
  eventId: 'x-service-event-id',
  eventType: 'x-service-event-type',
  timestamp: 'x-service-timestamp',
  signature: 'x-service-signature',
  /** The event's `resource.version`, as a decimal string. */
  resourceVersion: 'x-service-resource-version',
} as const;

/** The Standard Webhooks headers (standardwebhooks.com, spec v1) a STANDARD_WEBHOOKS receiver gets instead of the x-service-* id, timestamp and signature. */
export const STANDARD_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isUuid = (v: unknown): v is string => typeof v === 'string' && UUID_RE.test(v);

/**
 * What an authentic delivery body is: a catalog event (checked by eventShapeProblem), or another
 * event (id, type and occurredAt well-formed, any other type name; a WEBHOOK_TEST with its own
 * shape), or a problem.
 */
export function deliveryKind(
  value: unknown,
): { kind: 'catalog' } | { kind: 'other' } | { kind: 'invalid'; problem: string } {
  if (
    isObject(value) &&
    typeof value.type === 'string' &&
    !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(value.type)
  ) {
    if (!isUuid(value.id)) return { kind: 'invalid', problem: 'id must be a UUID' };
    if (!/^[A-Z][A-Z0-9_]*$/.test(value.type)) return { kind: 'invalid', problem: 'type must be an event type name' };
    if (typeof value.occurredAt !== 'string' || !TIMESTAMP_RE.test(value.occurredAt))
      return { kind: 'invalid', problem: 'occurredAt must be an ISO 8601 UTC timestamp' };
    if (value.type === WEBHOOK_TEST_EVENT_TYPE) {
      const resource = value.resource;
      if (!isObject(resource) || resource.type !== 'WEBHOOK_RECEIVER' || !isUuid(resource.id))
        return {
          kind: 'invalid',
          problem: 'resource must be { type: "WEBHOOK_RECEIVER", id: <UUID> } for WEBHOOK_TEST',
        };
      if (value.data !== null) return { kind: 'invalid', problem: 'data must be null for WEBHOOK_TEST' };
    }
    return { kind: 'other' };
  }
  const problem = eventShapeProblem(value);
  return problem ? { kind: 'invalid', problem } : { kind: 'catalog' };
}

/** Returns what is wrong with `value` as a v1 event, or null when it is one. Unknown extra fields are allowed. */
export function eventShapeProblem(value: unknown): string | null {
  if (!isObject(value)) return 'body is not a JSON object';
  if (!isUuid(value.id)) return 'id must be a UUID';
  if (typeof value.type !== 'string' || !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(value.type))
    return `type must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}`;
  if (typeof value.occurredAt !== 'string' || !TIMESTAMP_RE.test(value.occurredAt))
    return 'occurredAt must be an ISO 8601 UTC timestamp';
  const resource = value.resource;
  if (!isObject(resource) || resource.type !== 'LEARNING_OPPORTUNITY' || !isUuid(resource.id))
    return 'resource must be { type: "LEARNING_OPPORTUNITY", id: <UUID>, version: <positive integer> }';
  if (!Number.isSafeInteger(resource.version) || (resource.version as number) < 1)
    return 'resource.version must be a positive integer';
  if (DATA_NULL_TYPES.includes(value.type)) {
    if (value.data !== null) return `data must be null for ${value.type}`;
  } else {
    const data = value.data;
    if (!isObject(data)) return `data must be the record snapshot for ${value.type}`;
    if (data.id !== resource.id) return 'data.id must equal resource.id';
    if (typeof data.updatedAt !== 'string') return 'data.updatedAt must be a timestamp';
  }
  return null;
}
