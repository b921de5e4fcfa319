// The change feed orders events by the transaction id (xid8) that wrote them. A database restored into
// another PostgreSQL cluster (pg_dump, then pg_restore on a new server) keeps its events' ids, while
// the new cluster counts from wherever it is, often far below them: events written after the restore
// would sort before every restored one (a walk from the start applies old states after new ones), and
// a consumer's cursor from before the restore would pass over them until the new cluster caught up.
// Found from outside. The remedy is the operator's (docs/operations.md, section 9: advance the
// cluster's transaction ids before starting); this says when it is needed.
import type { Pool, PoolClient } from 'pg';

const UNDEFINED_TABLE = '42P01';

/** The newest event's transaction id and the cluster's next one, when the first is not below the second; else null. */
export async function eventsAheadOfCluster(
  pool: Pick<Pool, 'query'> | PoolClient,
): Promise<{ newest: string; next: string } | null> {
  try {
    const { rows } = await pool.query<{ newest: string; next: string }>(
      `select e.newest::text as newest, pg_snapshot_xmax(pg_current_snapshot())::text as next
         from (select max(xid) as newest from event) e
        where e.newest >= pg_snapshot_xmax(pg_current_snapshot())`,
    );
    return rows[0] ?? null;
  } catch (error) {
    if ((error as { code?: string }).code === UNDEFINED_TABLE) return null; // not migrated yet
    throw error;
  }
}
