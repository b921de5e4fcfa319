// Per-key rate limits of /v1 (CONTRACT.md 9): a fixed one-minute window per key (aligned on the
// clock's minutes, so every process agrees on which window a request falls in), counted in memory
// on the hot path (no round trip per request) and shared between API processes through the table
// rate_limit_usage: every `syncMs` each process adds what it admitted since its last sync and reads
// the sum of all processes back, in one statement.
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
import { AppError } from '../errors.ts';
import type { Logger } from '../logger.ts';

const WINDOW_MS = 60_000;

type Usage = {
  keyId: string;
  window: number;
  /** Admitted here in this window. */
  mine: number;
  /** The part of `mine` already added to rate_limit_usage. */
  shared: number;
  /** All processes' count in this window as of the last sync (includes `shared`). */
  total: number;
  /** The key's requests per minute, as of its latest request. */
  limit: number;
};

export type RateLimiter = ReturnType<typeof createRateLimiter>;

export function createRateLimiter(deps: { pool: Pool; perMinute: number; syncMs: number; logger: Logger; now?: () => number }) {
  const now = deps.now ?? Date.now;
  // By key id.
  const usage = new Map<string, Usage>();
  const windowOf = (ms: number) => Math.floor(ms / WINDOW_MS) * WINDOW_MS;
  const current = (keyId: string, at: number): Usage | undefined => {
    const u = usage.get(keyId);
    return u && u.window === windowOf(at) ? u : undefined;
  };
  const used = (u: Usage | undefined) => (u ? u.total + u.mine - u.shared : 0);
  const limitOf = (principal: Principal) => principal.rateLimit ?? deps.perMinute;
  // The policy header of each limit in use, built once (a key's limit rarely changes).
  const policies = new Map<number, string>();
  const policyOf = (limit: number): string => {
    let policy = policies.get(limit);
    if (policy === undefined) policies.set(limit, (policy = `"default";q=${limit};w=${WINDOW_MS / 1000}`));
    return policy;
  };

  let prunedBefore = 0;

  /** Shares this process's counts and learns the others'. */
  async function sync(): Promise<void> {
    const window = windowOf(now());
    const live = [...usage.entries()].filter(([keyId, u]) => (u.window === window ? true : void usage.delete(keyId)));
    if (live.length === 0) return;
    const deltas = live.map(([, u]) => u.mine - u.shared);
    const { rows } = await deps.pool.query<{ key_id: string; used: string }>({
      name: 'rate-limit-sync',
      text: `insert into rate_limit_usage (key_id, window_start, used)
             select k, to_timestamp($1::bigint / 1000.0), d from unnest($2::uuid[], $3::bigint[]) as t(k, d)
             on conflict (key_id, window_start) do update set used = rate_limit_usage.used + excluded.used
             returning key_id, used`,
      values: [window, live.map(([, u]) => u.keyId), deltas],
    });
    const totals = new Map(rows.map((r) => [r.key_id, Number(r.used)]));
    live.forEach(([, u], i) => {
      u.shared += deltas[i]!;
      u.total = totals.get(u.keyId) ?? u.total;
    });
    // Past windows' rows: only a new window leaves any, so once per window, not every sync.
    if (window > prunedBefore) {
      await deps.pool.query({ name: 'rate-limit-prune', text: 'delete from rate_limit_usage where window_start < to_timestamp($1::bigint / 1000.0)', values: [window - WINDOW_MS] });
      prunedBefore = window;
    }
  }

  let syncing: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    syncing = syncing.then(sync).catch((err: unknown) => deps.logger.warn({ err: (err as Error).message }, 'rate limit sync failed'));
  }, deps.syncMs);
  timer.unref();

  return {
    /** Counts one request of an authenticated key and sets RateLimit-Policy and RateLimit; throws RATE_LIMITED when over. */
    admit(principal: Principal, res: ServerResponse): void {
      const at = now();
      const limit = limitOf(principal);
      let u = current(principal.keyId, at);
      if (!u) usage.set(principal.keyId, (u = { keyId: principal.keyId, window: windowOf(at), mine: 0, shared: 0, total: 0, limit }));
      u.limit = limit;
      const admitted = used(u) < limit;
      if (admitted) u.mine++;
      const resetS = Math.max(1, Math.ceil((u.window + WINDOW_MS - at) / 1000));
      res.setHeader('RateLimit-Policy', policyOf(limit));
      res.setHeader('RateLimit', `"default";r=${Math.max(0, limit - used(u))};t=${resetS}`);
      if (!admitted) {
        throw new AppError('RATE_LIMITED', `This API key may make ${limit} requests per minute; try again in ${resetS} s`, { headers: { 'Retry-After': String(resetS) } });
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
