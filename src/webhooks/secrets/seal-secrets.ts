// Moving stored signing secrets under the current key. `prepareSecrets` runs at the service's start
// (and `migrate`) before anything is served: it seals secrets still in plain text (rows from before
// the receiver_management migration, which holds no key) and refuses to go on when a secret is sealed
// with a key the keyring does not hold (a lost or mistyped SECRET_ENCRYPTION_KEY_PREVIOUS), rather
// than fail every delivery of that receiver later. `receivers reencrypt` moves every secret to the
// current key, after which SECRET_ENCRYPTION_KEY_PREVIOUS can be dropped. A previous secret (a
// Standard Webhooks rotation's grace) is sealed like the current one and moves with it.
import type { Pool } from 'pg';
import type { Logger } from '../../kernel/logger.ts';
import { inTransaction } from '../../db/pg-transaction.ts';
import type { SecretKeyring } from './secret-box.ts';

export type ReencryptResult = { resealed: number; underCurrentKey: number; keyId: string };

type Row = {
  id: string;
  secret: string | null;
  secret_ciphertext: Buffer | null;
  secret_key_id: string | null;
  previous_secret_ciphertext: Buffer | null;
  previous_secret_key_id: string | null;
};

const COLUMNS = 'id, secret, secret_ciphertext, secret_key_id, previous_secret_ciphertext, previous_secret_key_id';

/** Seals `rows` (plain or under another key) with the current key, in one transaction. */
async function reseal(pool: Pool, secrets: SecretKeyring, select: string, params: unknown[]): Promise<number> {
  return await inTransaction(pool, async (client) => {
    const { rows } = await client.query<Row>(`${select} for no key update`, params);
    for (const row of rows) {
      const plain =
        row.secret ?? secrets.open({ ciphertext: row.secret_ciphertext!, keyId: row.secret_key_id! }, row.id);
      const sealed = secrets.seal(plain, row.id);
      const previous = row.previous_secret_ciphertext
        ? secrets.seal(
            secrets.open({ ciphertext: row.previous_secret_ciphertext, keyId: row.previous_secret_key_id! }, row.id),
            row.id,
          )
        : null;
      await client.query(
        `update receiver set secret = null, secret_ciphertext = $2, secret_key_id = $3,
                previous_secret_ciphertext = coalesce($4, previous_secret_ciphertext), previous_secret_key_id = coalesce($5, previous_secret_key_id) where id = $1`,
        [row.id, sealed.ciphertext, sealed.keyId, previous?.ciphertext ?? null, previous?.keyId ?? null],
      );
    }
    return rows.length;
  });
}

/** Seals plain secrets and checks that every sealed one opens with the keyring; throws otherwise. */
export async function prepareSecrets(pool: Pool, secrets: SecretKeyring, logger: Logger): Promise<void> {
  const sealed = await reseal(pool, secrets, `select ${COLUMNS} from receiver where secret is not null`, []);
  if (sealed) logger.info({ receivers: sealed, keyId: secrets.currentKeyId }, 'plain receiver secrets sealed');
  const { rows } = await pool.query<{ key_id: string; n: number }>(
    `select key_id, count(*)::int as n
       from (select secret_key_id as key_id from receiver union all select previous_secret_key_id from receiver where previous_secret_key_id is not null) k
      where key_id <> all($1::text[]) group by 1`,
    [secrets.keyIds],
  );
  if (rows.length) {
    const which = rows.map((r) => `${r.n} under key ${r.key_id}`).join(', ');
    throw new Error(
      `receiver secrets are sealed with a key that is neither SECRET_ENCRYPTION_KEY nor SECRET_ENCRYPTION_KEY_PREVIOUS (${which}); set the old key as SECRET_ENCRYPTION_KEY_PREVIOUS`,
    );
  }
}

/** `receivers reencrypt`: every secret not under the current key is sealed again with it. */
export async function reencryptSecrets(pool: Pool, secrets: SecretKeyring): Promise<ReencryptResult> {
  const resealed = await reseal(
    pool,
    secrets,
    `select ${COLUMNS} from receiver where secret is not null or secret_key_id <> $1 or previous_secret_key_id <> $1 order by id`,
    [secrets.currentKeyId],
  );
  const [{ n }] = (
    await pool.query<{ n: number }>('select count(*)::int as n from receiver where secret_key_id = $1', [
      secrets.currentKeyId,
    ])
  ).rows as [{ n: number }];
  return { resealed, underCurrentKey: n, keyId: secrets.currentKeyId };
}
