// The feed serves events below the cluster's horizon (the oldest transaction still open anywhere in
// it): a transaction open in another database of the suite's cluster (a parallel test file) holds
// events just committed back for a moment.
import type { Pool } from 'pg';

/** Waits (at most 15 s) until every event committed so far in this database is readable by the feed. */
export async function feedSettled(pool: Pool): Promise<void> {
  for (const until = Date.now() + 15_000; Date.now() < until;) {
    const { rows } = await pool.query<{ readable: boolean }>(
      `select coalesce((select max(xid) from event), '0'::xid8) < pg_snapshot_xmin(pg_current_snapshot()) as readable`,
    );
    if (rows[0]!.readable) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
