// Per-key rate limits of /v1 and GraphQL (CONTRACT.md 9): a sliding 60 s window per key, so that no
// 60 s interval admits more than the key's limit (a fixed clock-minute window admitted twice the
// limit around :00 and gave every key its quota back at the same instant). Admissions are counted
// in one-second buckets: a bucket counts until 60 s after the latest request admitted in it here
// (60 s after the bucket's end for requests other processes admitted in it, whose instants this
// process does not know), so a request is never forgotten sooner than 60 s after it was admitted.
// Counted in memory on the hot path (no round trip per request) and shared between API processes
// through the table rate_limit_usage (one row per key and bucket): every `syncMs` each process adds
// what it admitted since its last sync and reads back every process's counts of the window, in one
// statement.
// Guarantee: exact within one process. With N processes, a process learns of the others' requests
// up to one sync late, so a key can exceed its limit by what the other processes admit within one
// sync interval (at the defaults and steady traffic, 100 requests per process, under 2% of 6,000;
// a burst that hits every process within the same second can reach N times the remaining quota).
// Why not a library: rate-limiter-flexible's shared stores (Postgres, Redis) cost a round trip per
// request, and express-rate-limit is express middleware (these routes are not on express); the
// in-memory window itself is a few lines.
import type { ServerResponse } from 'node:http';
import type { Pool } from 'pg';
import type { Principal } from '../auth/api-keys.ts';
import { AppError } from '../kernel/errors.ts';
import type { Logger } from '../kernel/logger.ts';

const WINDOW_MS = 60_000;
const BUCKET_MS = 1000;
// Rows of buckets that have left every window are deleted this often (by every process; cheap).
const PRUNE_EVERY_MS = 10_000;

type Bucket = {
  /** Admitted here in this bucket. */
  mine: number;
  /** The part of `mine` already added to rate_limit_usage. */
  shared: number;
  /** All processes' count in this bucket as of the last sync (includes `shared`). */
  total: number;
  /** When this process last admitted a request in this bucket (0: never). */
  lastMine: number;
};

type Usage = {
  keyId: string;
  /** By bucket start (ms). */
  buckets: Map<number, Bucket>;
};

const bucketOf = (ms: number) => Math.floor(ms / BUCKET_MS) * BUCKET_MS;
const countOf = (b: Bucket) => b.total + b.mine - b.shared;
/** Until when the bucket's requests count: 60 s after the last one (the bucket's end when another process admitted some). */
const leavesAt = (start: number, b: Bucket) => (b.total > b.shared ? start + BUCKET_MS : b.lastMine) + WINDOW_MS;

export type RateLimiter = ReturnType<typeof createRateLimiter>;

export function createRateLimiter(deps: {
  pool: Pool;
  perMinute: number;
  syncMs: number;
  logger: Logger;
  now?: () => number;
}) {
  const now = deps.now ?? Date.now;
  // By key id.
  const usage = new Map<string, Usage>();
  const limitOf = (principal: Principal) => principal.rateLimit ?? deps.perMinute;
  // The policy header of each limit in use, built once (a key's limit rarely changes).
  const policies = new Map<number, string>();
  const policyOf = (limit: number): string => {
    let policy = policies.get(limit);
    if (policy === undefined) policies.set(limit, (policy = `"default";q=${limit};w=${WINDOW_MS / 1000}`));
    return policy;
  };

  // Set by inWindow: when the first of the buckets it counted leaves the window.
  let firstLeaves = 0;
  /** Drops the buckets that left the window at `at`; returns the count of the others. */
  function inWindow(u: Usage, at: number): number {
    let used = 0;
    firstLeaves = Infinity;
    for (const [start, b] of u.buckets) {
      const leaves = leavesAt(start, b);
      // A bucket with unshared requests stays until shared: the others must learn of them.
      if (leaves <= at) {
        if (b.mine === b.shared) u.buckets.delete(start);
        continue;
      }
      used += countOf(b);
      if (leaves < firstLeaves) firstLeaves = leaves;
    }
    return used;
  }

  /** Milliseconds from `at` until the count falls to `target` (or below); sorts, so only for refusals. */
  function untilCountIs(u: Usage, at: number, used: number, target: number): number {
    const live = [...u.buckets]
      .filter(([start, b]) => leavesAt(start, b) > at)
      .map(([start, b]) => ({ leaves: leavesAt(start, b), count: countOf(b) }));
    live.sort((a, b) => a.leaves - b.leaves);
    let left = used;
    for (const { leaves, count } of live) {
      left -= count;
      if (left <= target) return leaves - at;
    }
    return WINDOW_MS;
  }

  let prunedAt = 0;

  /** Shares this process's counts and learns the others'. */
  async function sync(): Promise<void> {
    const at = now();
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
    const { rows } = await deps.pool.query<{ key_id: string; start: string; used: string }>({
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
    if (at - prunedAt >= PRUNE_EVERY_MS) {
      await deps.pool.query({
        name: 'rate-limit-prune',
        text: 'delete from rate_limit_usage where window_start < to_timestamp($1::bigint / 1000.0)',
        values: [from],
      });
      prunedAt = at;
    }
  }

  let syncing: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    syncing = syncing
      .then(sync)
      .catch((err: unknown) => deps.logger.warn({ err: (err as Error).message }, 'rate limit sync failed'));
  }, deps.syncMs);
  timer.unref();

  return {
    /**
     * Counts one request of an authenticated key and sets RateLimit-Policy and RateLimit (r: what
     * is left; t: seconds until the window next gives a request back); throws RATE_LIMITED when over.
     */
    admit(principal: Principal, res: ServerResponse): void {
      const at = now();
      const limit = limitOf(principal);
      let u = usage.get(principal.keyId);
      if (!u) usage.set(principal.keyId, (u = { keyId: principal.keyId, buckets: new Map() }));
      let used = inWindow(u, at);
      const admitted = used < limit;
      if (admitted) {
        const start = bucketOf(at);
        let b = u.buckets.get(start);
        if (!b) u.buckets.set(start, (b = { mine: 0, shared: 0, total: 0, lastMine: 0 }));
        b.mine++;
        b.lastMine = at;
        used++;
        firstLeaves = Math.min(firstLeaves, leavesAt(start, b));
      }
      // Admitted: until the oldest counted request leaves. Refused: until one more may come in.
      const untilMs = admitted ? firstLeaves - at : untilCountIs(u, at, used, limit - 1);
      const resetS = Math.max(1, Math.ceil(untilMs / 1000));
      res.setHeader('RateLimit-Policy', policyOf(limit));
      res.setHeader('RateLimit', `"default";r=${Math.max(0, limit - used)};t=${resetS}`);
      if (!admitted) {
        throw new AppError(
          'RATE_LIMITED',
          `This API key may make ${limit} requests per minute; try again in ${resetS} s`,
          { headers: { 'Retry-After': String(resetS) } },
        );
      }
    },

    /** Shares what is left to share, then stops syncing. */
    async stop(): Promise<void> {
      clearInterval(timer);
      await syncing;
      await sync().catch(() => {});
    },
  };
}
