// The age of the feed's horizon, for /metrics: how long the oldest transaction that holds a
// transaction id (a writer) has been running. The feed serves nothing past that transaction until it
// ends, so this is the worst extra latency a feed reader sees right now. Read at scrape time.
import type { Pool } from 'pg';
import { boundedQuery } from '../db/bounded-query.ts';

// Sessions of other roles show no backend_xid to an unprivileged user: grant pg_read_all_stats to
// the service's role for an exact figure (the gauge then never under-reports).
const HORIZON_AGE_SQL = `
  select coalesce(extract(epoch from clock_timestamp() - min(xact_start)), 0)::float8 as age
    from pg_stat_activity where backend_xid is not null`;

export async function readHorizonAgeSeconds(pool: Pool, timeoutMs: number): Promise<number> {
  const [row] = await boundedQuery<{ age: number }>(pool, HORIZON_AGE_SQL, timeoutMs);
  return row?.age ?? 0;
}
