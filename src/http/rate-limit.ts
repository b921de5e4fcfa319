// Per-key rate limits of /v1 and GraphQL (docs/contract.md, "Rate limits"): a sliding 60 s window per key, so that no
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
import { createOutageLog } from '../kernel/outage-log.ts';
import { syncUsage } from './rate-limit-sync.ts';
import { bucketOf, inWindow, leavesAt, untilCountIs, type Usage, WINDOW_MS } from './rate-limit-window.ts';

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

  const syncState = { prunedAt: 0 };
  const sync = () => syncUsage(deps.pool, usage, now(), syncState);

  let syncing: Promise<void> = Promise.resolve();
  const log = createOutageLog(deps.logger, {
    failed: 'rate limit sync failed; retrying at the next sync',
    recovered: 'rate limit sync works again',
  });
  const timer = setInterval(() => {
    syncing = syncing.then(sync).then(() => log.succeeded(), log.failed);
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
      const counted = inWindow(u, at);
      let used = counted.used;
      let firstLeaves = counted.firstLeaves;
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
