// Rotating a receiver's signing secret (`receivers rotate-secret`, GraphQL
// rotateWebhookReceiverSecret, the console's "Rotate secret"): receivers.ts exports it with the
// other operations.
import { badInput, notFound } from '../../kernel/errors.ts';
import { inTransaction } from '../../db/pg-transaction.ts';
import { parseSecret } from './receiver-input.ts';
import type { Pool } from 'pg';
import { readReceiver, type ReceiverInfo } from './receiver-reads.ts';
import type { SecretKeyring } from '../secrets/secret-box.ts';
import {
  generateStandardSecret,
  NO_GRACE_FOR_SERVICE_V1,
  parseGraceHours,
  parseStandardSecret,
} from './signature-scheme.ts';

/**
 * Seals a new signing secret; the next attempt of every delivery is signed with it. SERVICE_V1: the
 * secret is required and replaces the old one at once (no grace: its deliveries carry one
 * signature). STANDARD_WEBHOOKS: generated when none is given (shown once); for `graceHours`
 * (default 24, 0 = none) the old secret, still sealed, signs every delivery too (`v1,<new> v1,<old>`);
 * the worker stops using it when the grace ends and the retention job erases it. A rotation during a
 * grace drops the older secret.
 */
export async function rotateReceiverSecret(
  deps: { pool: Pool; secrets: SecretKeyring },
  id: string,
  input: { secret?: string | null; graceHours?: number | null },
): Promise<ReceiverInfo & { secret?: string }> {
  const generated = await inTransaction(deps.pool, async (client) => {
    const { rows } = await client.query<{ signature_scheme: string }>(
      'select signature_scheme from receiver where id = $1 for no key update',
      [id],
    );
    if (!rows[0]) throw notFound(`Receiver ${id}`);
    const given = input.secret ?? null;
    let secret: string;
    let graceHours = 0;
    let made: string | null = null;
    if (rows[0].signature_scheme === 'service_v1') {
      if (input.graceHours !== undefined && input.graceHours !== null)
        throw badInput([{ name: 'graceHours', reason: NO_GRACE_FOR_SERVICE_V1 }]);
      if (given === null)
        throw badInput([
          {
            name: 'secret',
            reason:
              'a SERVICE_V1 receiver needs the new secret given (a STANDARD_WEBHOOKS receiver gets a generated one)',
          },
        ]);
      secret = parseSecret(given);
    } else {
      graceHours = parseGraceHours(input.graceHours);
      secret = given === null ? (made = generateStandardSecret()) : parseStandardSecret(given);
    }
    const sealed = deps.secrets.seal(secret, id);
    // The old sealed secret moves over as it is (same key, same receiver): no need to open it.
    await client.query(
      `update receiver set secret_ciphertext = $2, secret_key_id = $3, secret = null,
              previous_secret_ciphertext = case when $4::int > 0 and secret_ciphertext is not null then secret_ciphertext end,
              previous_secret_key_id = case when $4::int > 0 and secret_ciphertext is not null then secret_key_id end,
              previous_secret_expires_at = case when $4::int > 0 and secret_ciphertext is not null then now() + $4::int * interval '1 hour' end
        where id = $1`,
      [id, sealed.ciphertext, sealed.keyId, graceHours],
    );
    return made;
  });
  const rotated = await readReceiver(deps.pool, id);
  return generated ? { ...rotated, secret: generated } : rotated;
}
