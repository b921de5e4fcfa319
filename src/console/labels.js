// What the console shows for the API's enum values: one readable label each, for every page (the
// values themselves stay in option values and queries). The lists are the schema's enums, in its
// order (schema/webhooks.graphql, receivers.graphql, console.graphql); test/console checks they
// name every value. A value not listed (a newer service) is shown as it is.

/** EventType: the catalog's events, then the test event. */
export const EVENT_TYPES = {
  LEARNING_OPPORTUNITY_PUBLISHED: 'Published',
  LEARNING_OPPORTUNITY_UPDATED: 'Updated',
  LEARNING_OPPORTUNITY_ARCHIVED: 'Archived',
  LEARNING_OPPORTUNITY_DELETED: 'Deleted',
  LEARNING_OPPORTUNITY_LEFT_VIEW: 'Left view',
  WEBHOOK_TEST: 'Test event',
};

/** The event types a receiver may subscribe to (every EventType but the test event). */
export const SUBSCRIBABLE_TYPES = Object.keys(EVENT_TYPES).filter((t) => t !== 'WEBHOOK_TEST');

/** DeliveryOutcome. */
export const OUTCOMES = {
  SUCCESS: 'Success',
  HTTP_ERROR: 'HTTP error',
  TIMEOUT: 'Timeout',
  CONNECTION_ERROR: 'Connection error',
  REDIRECT: 'Redirect',
  THROTTLED: 'Throttled',
  WORKER_LOST: 'Worker lost',
  SECRET_UNAVAILABLE: 'Secret unavailable',
  SUPERSEDED: 'Superseded',
};

/** What each outcome means, as a hover title (the schema's descriptions, shortened). */
export const OUTCOME_HINTS = {
  SUCCESS: 'The receiver answered 2xx.',
  HTTP_ERROR: 'The receiver answered a status outside 2xx and 3xx.',
  TIMEOUT: 'No answer in time.',
  CONNECTION_ERROR: 'No connection (refused, reset, DNS, TLS, or a refused private address).',
  REDIRECT: 'The receiver answered 3xx; redirects are not followed.',
  THROTTLED: 'The receiver answered 429 or 503 with Retry-After: it asked to wait (not a failure).',
  WORKER_LOST: 'The worker died or lost its database during the attempt.',
  SECRET_UNAVAILABLE: "Nothing was sent: the receiver's signing secret does not open with the worker's keys.",
  SUPERSEDED: 'Nothing was sent: a newer event of the same record superseded this delivery.',
};

/** WebhookDeliveryMode. */
export const DELIVERY_MODES = {
  ALL_EVENTS: 'All events',
  LATEST_STATE: 'Latest state',
};

export const DELIVERY_MODE_HINTS = {
  ALL_EVENTS: 'Every event, in order per record.',
  LATEST_STATE: 'Only the newest waiting event of a record; older waiting ones are skipped as superseded.',
};

/** WebhookSignatureScheme. */
export const SIGNATURE_SCHEMES = {
  SERVICE_V1: 'Service v1',
  STANDARD_WEBHOOKS: 'Standard Webhooks',
};

export const SIGNATURE_SCHEME_HINTS = {
  SERVICE_V1: 'x-service-signature: an HMAC-SHA256 of "<timestamp>.<body>".',
  STANDARD_WEBHOOKS: 'webhook-signature (standardwebhooks.com); a whsec_ secret.',
};

/** WebhookReceiverDisabledReason, as the end of "Disabled: …". */
export const DISABLED_REASONS = {
  MANUAL: 'by an operator',
  FAILING: 'every attempt failed for too long',
  GONE: 'the receiver answered 410 Gone',
};

/** Why a dead letter was set aside (WebhookDeadLetter.lastError), when it is one of the service's words. */
export const SET_ASIDE_REASONS = {
  receiver_disabled: 'Set aside: receiver disabled',
  worker_lost: 'Worker lost',
};

const lookup = (labels) => (value) => (value === null || value === undefined ? '—' : (labels[value] ?? value));

export const eventTypeLabel = lookup(EVENT_TYPES);
export const outcomeLabel = lookup(OUTCOMES);
export const deliveryModeLabel = lookup(DELIVERY_MODES);
export const signatureSchemeLabel = lookup(SIGNATURE_SCHEMES);
export const setAsideLabel = lookup(SET_ASIDE_REASONS);

/** "Enabled", or "Disabled: <why>". */
export const statusLabel = (r) =>
  r.enabled ? 'Enabled' : `Disabled: ${DISABLED_REASONS[r.disabledReason ?? 'MANUAL'] ?? r.disabledReason}`;

/** A receiver's subscription: "Every type", or its types' labels. */
export const eventTypesLabel = (types) => (types.length === 0 ? 'Every type' : types.map(eventTypeLabel).join(', '));
