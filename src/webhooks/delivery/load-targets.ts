// What a batch of fetched jobs needs to be sent: the stored event bodies and the receivers, read in
// two plain queries per batch (no ORM on the hot path); for the deliveries a settlement claims, the
// settling statement reads the same columns itself (targetsFromRows: no load round trip). Secrets
// are opened here, in memory only, for signing (secret-box.ts); a plain `secret` is a row written
// by an older version during an upgrade, sealed at the next start (seal-secrets.ts). A secret that
// does not open (sealed under a key this process does not hold, or damaged) fails only its own
// receiver: it is reported in `secretUnavailable` (a message without secret material) and the
// worker records its deliveries as `secret_unavailable` attempts; every other receiver of the batch
// is sent as usual. A previous secret (a Standard Webhooks rotation's grace) is read only while its
// grace runs, and opened the same way.
import type { Pool } from 'pg';
import type { DeliveryJobData } from '../queue/boss.ts';
import type { SignatureScheme } from '../receivers/signature-scheme.ts';
import {
  EVENT_TO_SEND_COLUMNS,
  type EventRow,
  RECEIVER_TO_SEND_COLUMNS,
  type ReceiverRow,
} from '../queue/send-rows.ts';
import { type SecretKeyring, SecretKeyError } from '../secrets/secret-box.ts';

export type EventToSend = { id: string; type: string; version: number; body: Buffer };
export type ReceiverToSend = {
  id: string;
  url: string;
  secret: string | null;
  /** Also signs, until its grace ends (STANDARD_WEBHOOKS only). */
  previousSecret: string | null;
  scheme: SignatureScheme;
  enabled: boolean;
  /** LATEST_STATE: a delivery is checked for a newer waiting event of its record just before it is sent. */
  latestState: boolean;
  secretUnavailable: string | null;
  /** The receiver asked to be left alone (a 429/503 with Retry-After) for this many ms yet; null when not. */
  throttledForMs: number | null;
  /** Its rate cap, deliveries per second (receivers/rate-cap.ts); null: none, and no cost (rate-gate.ts). */
  maxPerSecond: number | null;
};
export type Targets = { events: Map<string, EventToSend>; receivers: Map<string, ReceiverToSend> };

export async function loadTargets(
  pool: Pool,
  jobs: readonly DeliveryJobData[],
  secrets: SecretKeyring,
): Promise<Targets> {
  const eventIds = [...new Set(jobs.map((j) => j.eventId))];
  const receiverIds = [...new Set(jobs.map((j) => j.receiverId))];
  const [events, receivers] = await Promise.all([
    pool.query<EventRow>({
      name: 'webhook-load-events',
      text: `select ${EVENT_TO_SEND_COLUMNS} from event e where e.id = any($1::uuid[])`,
      values: [eventIds],
    }),
    pool.query<ReceiverRow>({
      name: 'webhook-load-receivers',
      text: `select ${RECEIVER_TO_SEND_COLUMNS} from receiver r where r.id = any($1::uuid[])`,
      values: [receiverIds],
    }),
  ]);
  return targetsFromRows(events.rows, receivers.rows, secrets);
}

const bytes = (value: Buffer | string | null): Buffer | null =>
  value === null || Buffer.isBuffer(value) ? value : Buffer.from(value.slice(2), 'hex');

/** Targets from rows read here or by the settling statement (its claims, queue/settle-jobs.ts), secrets opened. */
export function targetsFromRows(
  eventRows: readonly EventRow[],
  receiverRows: readonly ReceiverRow[],
  secrets: SecretKeyring,
): Targets {
  const open = (r: ReceiverRow): Pick<ReceiverToSend, 'secret' | 'previousSecret' | 'secretUnavailable'> => {
    const [ciphertext, previousCiphertext] = [bytes(r.secret_ciphertext), bytes(r.previous_ciphertext)];
    try {
      const previousSecret =
        previousCiphertext && r.previous_key_id
          ? secrets.open({ ciphertext: previousCiphertext, keyId: r.previous_key_id }, r.id)
          : null;
      if (!ciphertext || !r.secret_key_id) return { secret: r.secret, previousSecret, secretUnavailable: null };
      return {
        secret: secrets.open({ ciphertext, keyId: r.secret_key_id }, r.id),
        previousSecret,
        secretUnavailable: null,
      };
    } catch (error) {
      if (!(error instanceof SecretKeyError)) throw error;
      return { secret: null, previousSecret: null, secretUnavailable: error.message };
    }
  };
  return {
    // Encoded once: these exact bytes are signed and sent.
    events: new Map(
      eventRows.map((e) => [
        e.id,
        { id: e.id, type: e.type, version: Number(e.version), body: Buffer.from(e.body, 'utf8') },
      ]),
    ),
    receivers: new Map(
      receiverRows.map((r) => [
        r.id,
        {
          id: r.id,
          url: r.url,
          enabled: r.enabled,
          scheme: r.scheme,
          latestState: r.latest_state,
          throttledForMs: r.throttled_ms ?? null,
          maxPerSecond: r.max_per_second ?? null,
          ...open(r),
        },
      ]),
    ),
  };
}
