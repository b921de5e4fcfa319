// The rows a delivery is sent from: an event's and a receiver's columns as read for sending, by the
// worker's loads (delivery/load-targets.ts) and by the settling statement for the lane successors
// it claims (settle-jobs.ts); delivery/load-targets.ts turns them into what is signed and sent.
import type { SignatureScheme } from '@lods/receiver-kit';

/** A receiver row as read for sending (RECEIVER_TO_SEND_COLUMNS); bytea as a Buffer (pg) or '\\x' hex (JSON). */
export type ReceiverRow = {
  id: string;
  url: string;
  secret: string | null;
  secret_ciphertext: Buffer | string | null;
  secret_key_id: string | null;
  previous_ciphertext: Buffer | string | null;
  previous_key_id: string | null;
  /** The receiver kit's name of it, as the kit signs with it (receivers/signature-scheme.ts holds the same two). */
  scheme: SignatureScheme;
  enabled: boolean;
  latest_state: boolean;
  /** How long (ms, from the database's clock) the receiver asked to be left alone for yet (429/503 with Retry-After); null when not. */
  throttled_ms: number | null;
  /** Its rate cap (deliveries per second, receivers/rate-cap.ts); null: none. */
  max_per_second: number | null;
};
/** An event row as read for sending (EVENT_TO_SEND_COLUMNS); version a string (pg's bigint) or a number (JSON). */
export type EventRow = { id: string; type: string; version: string | number; body: string };

/** The columns of an event to send, of the event aliased `e` (the settling statement returns the same four as `claimEvent*`). */
export const EVENT_TO_SEND_COLUMNS = 'e.id, e.type, e.version, e.body';
/** The columns of a receiver to send to, of the receiver aliased `r` (a previous secret only while its grace runs). */
export const RECEIVER_TO_SEND_COLUMNS = `r.id, r.url, r.secret, r.secret_ciphertext, r.secret_key_id, r.enabled,
  replace(r.signature_scheme, '_', '-') as scheme, r.delivery_mode = 'latest_state' as latest_state,
  case when r.previous_secret_expires_at > now() then r.previous_secret_ciphertext end as previous_ciphertext,
  case when r.previous_secret_expires_at > now() then r.previous_secret_key_id end as previous_key_id,
  case when r.throttled_until > now() then ceil(extract(epoch from r.throttled_until - now()) * 1000)::int end as throttled_ms,
  r.max_per_second`;
