// The one admission step of /v1, run by the dispatcher (dispatcher.ts) for every endpoint that
// takes a key, before the endpoint looks at its input: the key from the process's key cache
// (auth/key-cache.ts: no round trip of its own once seen) holding the route's scope (401/403), then
// the key's rate limit (429; every answer carries the RateLimit headers), with the process's one
// limiter, shared with GraphQL's gate. The other edges of /v1 admission: CORS (cors.ts, first in
// the dispatcher) and 100-continue (http/expect-continue.ts, which asks routes.ts for the scopes).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal, Scope } from '../../auth/api-keys.ts';
import { authenticate } from '../../auth/bearer.ts';
import type { KeyCache } from '../../auth/key-cache.ts';
import type { RateLimiter } from '../rate-limit.ts';

/** What admission needs: the key cache and the per-key limiter (null: limits off). */
export type Admission = { keys: KeyCache; limiter: RateLimiter | null };

/** Authenticates the request (401/403) and counts it against the key's rate limit (429). */
export async function admit(
  deps: Admission,
  req: IncomingMessage,
  res: ServerResponse,
  scope: Scope,
): Promise<Principal> {
  const principal = await authenticate(req.headersDistinct.authorization, scope, deps.keys);
  deps.limiter?.admit(principal, res);
  return principal;
}

/**
 * The key check alone, not counted again: a long poll counts once against the limit, and its
 * re-reads at every wake-up re-check the key only (a key revoked while it waits gets 401).
 */
export async function recheckKey(deps: Admission, req: IncomingMessage, scope: Scope): Promise<void> {
  await authenticate(req.headersDistinct.authorization, scope, deps.keys);
}
