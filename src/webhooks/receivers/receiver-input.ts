// The receiver settings as callers give them (CLI words or GraphQL enums), checked and normalised:
// event types, a SERVICE_V1 secret, the delivery mode. Pure: receivers.ts and the CLI use them.
import { badInput } from '../../kernel/errors.ts';
import { EVENT_TYPES, type EventType } from '../../events/derive-event.ts';
import { canonicalView, parseView } from '../../views/view.ts';
import { DELIVERY_MODES, type DeliveryMode } from './receiver-reads.ts';

/**
 * The settings `receivers add` and `update` take (receivers.ts), as callers give them: omitted (or
 * null) keeps a setting on update, but null removes the rate cap (`maxPerSecond`, 1 to 10,000
 * deliveries per second: rate-cap.ts) and the view (`view`: the receiver then gets every record).
 */
export type ReceiverSettings = {
  url?: string | null;
  types?: readonly string[] | null;
  scheme?: string | null;
  mode?: string | null;
  maxPerSecond?: number | string | null;
  /** A view (the list's query-string syntax: views/view.ts); null removes it (every record). */
  view?: string | null;
};

const SECRET_MIN = 16;
const SECRET_MAX = 512;

export function parseEventTypes(values: readonly string[]): EventType[] {
  const unknown = values.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length)
    throw badInput([
      { name: 'type', reason: `unknown event type ${unknown.join(', ')}; known: ${EVENT_TYPES.join(', ')}` },
    ]);
  return [...new Set(values)] as EventType[];
}

export function parseSecret(secret: string): string {
  if (secret.length < SECRET_MIN || secret.length > SECRET_MAX || !/^[\x21-\x7e]+$/.test(secret)) {
    throw badInput([
      { name: 'secret', reason: `must be ${SECRET_MIN} to ${SECRET_MAX} printable ASCII characters without spaces` },
    ]);
  }
  return secret;
}

/** ALL_EVENTS / LATEST_STATE (GraphQL) or all-events / latest-state (CLI). */
export function parseDeliveryMode(value: string): DeliveryMode {
  const mode = value.toUpperCase().replaceAll('-', '_');
  if (!(DELIVERY_MODES as readonly string[]).includes(mode))
    throw badInput([{ name: 'mode', reason: 'must be all-events or latest-state' }]);
  return mode as DeliveryMode;
}

/**
 * A resync's `since`: an ISO 8601 date-time with its time zone (Z or an offset), or a date (midnight
 * UTC), as a Date; null or omitted: none.
 */
export function parseSince(value: unknown): Date | null {
  if (value === undefined || value === null) return null;
  const text = typeof value === 'string' ? value.trim() : '';
  const date = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/i.test(text)
    ? new Date(text)
    : null;
  if (!date || Number.isNaN(date.getTime()))
    throw badInput([
      {
        name: 'since',
        reason:
          'must be an ISO 8601 date-time with its time zone (2026-12-01T09:00:00Z, 2026-12-01T10:00:00+01:00) or a date (2026-12-01, midnight UTC)',
      },
    ]);
  return date;
}

/** A receiver's view as callers give it (`format=IN_PERSON&country=DE`), as its canonical text; a bad one is a 400 naming `view`. */
export function parseReceiverView(value: string): string {
  return canonicalView(parseView(value, { as: 'view' }));
}
