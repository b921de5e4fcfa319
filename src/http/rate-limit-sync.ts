// Sharing the rate limit's counts between API processes (http/rate-limit.ts): every sync interval
// a process adds what it admitted since its last sync to rate_limit_usage (one row per key and
// bucket) and reads back every process's counts of the window, in one statement; every 10 s it
// deletes the rows that left every window.
import type { Pool } from 'pg';
import { type Bucket, BUCKET_MS, bucketOf, inWindow, type Usage, WINDOW_MS } from './rate-limit-window.ts';

// Rows of buckets that have left every window are deleted this often (by every process; cheap).
const PRUNE_EVERY_MS = 10_000;

/** Shares this process's counts (`usage`, by key id) and learns the others'. */
export async function syncUsage(
  pool: Pool,
  usage: Map<string, Usage>,
  at: number,
  state: { prunedAt: number },
): Promise<void> {
  const from = bucketOf(at - WINDOW_MS) - BUCKET_MS;
  const keys: string[] = [];
  const deltaKeys: string[] = [];
  const deltaBuckets: number[] = [];
  const deltas: number[] = [];
  const sent: Bucket[] = [];
  for (const [keyId, u] of usage) {
    inWindow(u, at);
    if (u.buckets.size === 0) {
      usage.delete(keyId);
      continue;
    }
    keys.push(keyId);
    for (const [start, b] of u.buckets) {
      if (b.mine === b.shared) continue;
      deltaKeys.push(keyId);
      deltaBuckets.push(start);
      deltas.push(b.mine - b.shared);
      sent.push(b);
    }
  }
  if (keys.length === 0) return;
  // The select reads the table as it was before this statement's upsert: the upserted rows come
  // from `up`, every other row of the window from the table.
  const { rows } = await pool.query<{ key_id: string; start: string; used: string }>({
    name: 'rate-limit-sync',
    text: `with up as (
             insert into rate_limit_usage (key_id, window_start, used)
             select k, to_timestamp(b::bigint / 1000.0), d from unnest($1::uuid[], $2::bigint[], $3::bigint[]) as t(k, b, d)
             on conflict (key_id, window_start) do update set used = rate_limit_usage.used + excluded.used
             returning key_id, window_start, used)
           select key_id, (extract(epoch from window_start) * 1000)::bigint as start, used from up
           union all
           select r.key_id, (extract(epoch from r.window_start) * 1000)::bigint, r.used from rate_limit_usage r
           where r.key_id = any($4::uuid[]) and r.window_start >= to_timestamp($5::bigint / 1000.0)
             and not exists (select 1 from up where up.key_id = r.key_id and up.window_start = r.window_start)`,
    values: [deltaKeys, deltaBuckets, deltas, keys, from],
  });
  sent.forEach((b, i) => (b.shared += deltas[i]!));
  for (const row of rows) {
    const u = usage.get(row.key_id);
    if (!u) continue;
    const start = Number(row.start);
    const b = u.buckets.get(start);
    if (b) b.total = Number(row.used);
    else u.buckets.set(start, { mine: 0, shared: 0, total: Number(row.used), lastMine: 0 });
  }
  if (at - state.prunedAt >= PRUNE_EVERY_MS) {
    await pool.query({
      name: 'rate-limit-prune',
      text: 'delete from rate_limit_usage where window_start < to_timestamp($1::bigint / 1000.0)',
      values: [from],
    });
    state.prunedAt = at;
  }
}
