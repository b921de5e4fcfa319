// What a batch of fetched jobs needs to be sent: the stored event bodies and the receivers, read in
// two plain queries per batch (no ORM on the hot path). Secrets are opened here, in memory only, for
// signing (secret-box.ts); a plain `secret` is a row written by an older version during an upgrade,
// sealed at the next start (seal-secrets.ts). A secret that does not open (sealed under a key this
// process does not hold, or damaged) fails only its own receiver: it is reported in
// `secretUnavailable` (a message without secret material) and the worker records its deliveries as
// `secret_unavailable` attempts; every other receiver of the batch is sent as usual. A previous secret
// (a Standard Webhooks rotation's grace) is read only while its grace runs, and opened the same way.
import type { Pool } from 'pg';
import type { DeliveryJobData } from '../queue/boss.ts';
import type { SignatureScheme } from '../receivers/signature-scheme.ts';
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
};
export type Targets = { events: Map<string, EventToSend>; receivers: Map<string, ReceiverToSend> };

type ReceiverRow = {
  id: string;
  url: string;
  secret: string | null;
  secret_ciphertext: Buffer | null;
  secret_key_id: string | null;
  previous_ciphertext: Buffer | null;
  previous_key_id: string | null;
  scheme: SignatureScheme;
  enabled: boolean;
  latest_state: boolean;
};

export async function loadTargets(
  pool: Pool,
  jobs: readonly DeliveryJobData[],
  secrets: SecretKeyring,
): Promise<Targets> {
  const eventIds = [...new Set(jobs.map((j) => j.eventId))];
  const receiverIds = [...new Set(jobs.map((j) => j.receiverId))];
  const [events, receivers] = await Promise.all([
    pool.query<{ id: string; type: string; version: string; body: string }>({
      name: 'webhook-load-events',
      text: 'select id, type, version, body from event where id = any($1::uuid[])',
      values: [eventIds],
    }),
    pool.query<ReceiverRow>({
      name: 'webhook-load-receivers',
      text: `select id, url, secret, secret_ciphertext, secret_key_id, enabled, replace(signature_scheme, '_', '-') as scheme,
                    delivery_mode = 'latest_state' as latest_state,
                    case when previous_secret_expires_at > now() then previous_secret_ciphertext end as previous_ciphertext,
                    case when previous_secret_expires_at > now() then previous_secret_key_id end as previous_key_id
               from receiver where id = any($1::uuid[])`,
      values: [receiverIds],
    }),
  ]);
  const open = (r: ReceiverRow): Pick<ReceiverToSend, 'secret' | 'previousSecret' | 'secretUnavailable'> => {
    try {
      const previousSecret =
        r.previous_ciphertext && r.previous_key_id
          ? secrets.open({ ciphertext: r.previous_ciphertext, keyId: r.previous_key_id }, r.id)
          : null;
      if (!r.secret_ciphertext || !r.secret_key_id)
        return { secret: r.secret, previousSecret, secretUnavailable: null };
      return {
        secret: secrets.open({ ciphertext: r.secret_ciphertext, keyId: r.secret_key_id }, r.id),
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
      events.rows.map((e) => [
        e.id,
        { id: e.id, type: e.type, version: Number(e.version), body: Buffer.from(e.body, 'utf8') },
      ]),
    ),
    receivers: new Map(
      receivers.rows.map((r) => [
        r.id,
        { id: r.id, url: r.url, enabled: r.enabled, scheme: r.scheme, latestState: r.latest_state, ...open(r) },
      ]),
    ),
  };
}
