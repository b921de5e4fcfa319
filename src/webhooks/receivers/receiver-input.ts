// The receiver settings as callers give them (CLI words or GraphQL enums), checked and normalised:
// event types, a SERVICE_V1 secret, the delivery mode. Pure: receivers.ts and the CLI use them.
import { badInput } from '../../kernel/errors.ts';
import { EVENT_TYPES, type EventType } from '../../events/derive-event.ts';
import { DELIVERY_MODES, type DeliveryMode } from './receiver-reads.ts';

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
