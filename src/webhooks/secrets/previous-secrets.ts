// The end of a Standard Webhooks rotation's grace: a previous signing secret whose
// previous_secret_expires_at has passed is erased (ciphertext, key id and expiry set to null). The
// worker stops signing with it at that moment already (load-targets.ts reads it only while its grace
// runs); this removes the sealed bytes, from the retention job (hourly) and `prune`.
import type { Pool } from 'pg';

/** Erases every expired previous secret; returns how many receivers had one. */
export async function eraseExpiredPreviousSecrets(pool: Pool): Promise<number> {
  const { rowCount } = await pool.query(
    `update receiver set previous_secret_ciphertext = null, previous_secret_key_id = null, previous_secret_expires_at = null
      where previous_secret_expires_at <= now()`,
  );
  return rowCount ?? 0;
}
