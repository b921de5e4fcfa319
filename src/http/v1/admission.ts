// The one admission step of /v1, run by the dispatcher (dispatcher.ts) for every endpoint that
// takes a key, before the endpoint looks at its input: the key from the process's key cache
// (auth/key-cache.ts: no round trip of its own once seen) holding the route's scope (401/403), then
// the key's rate limit (429; every answer carries the RateLimit headers), with the process's one
// limiter, shared with GraphQL's gate, then the pace of the bytes answered to the key (429 past it). The other edges of /v1 admission: CORS (cors.ts, first in
// the dispatcher) and 100-continue (http/expect-continue.ts, which asks routes.ts for the scopes).
// A route that takes its key in the URL as well (routes.ts `queryKey`: the calendar) is handed its
// query string: a `key` parameter there is the key, and must hold that route's own scope.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal, Scope } from '../../auth/api-keys.ts';
import { authenticate, authenticateQueryKey, QUERY_KEY_PARAMETER } from '../../auth/bearer.ts';
import type { KeyCache } from '../../auth/key-cache.ts';
import type { RateLimiter } from '../rate-limit.ts';
import type { ResponsePacing } from '../response-pacing.ts';

/** What admission needs: the key cache, the per-key limiter (null: limits off) and the pace of answered bytes (http/response-pacing.ts). */
export type Admission = { keys: KeyCache; limiter: RateLimiter | null; responsePace?: ResponsePacing | null };

/** The key a route takes in its URL: the request's query string, and the scope such a key must hold. */
export type QueryKey = { query: string; scope: Scope };

/**
 * Authenticates the request (401/403) and counts it against the key's rate limit (429). `scope`:
 * the key must hold it (several: one of them); `queryKey`: the route takes a `?key=` too.
 */
export async function admit(
  deps: Admission,
  req: IncomingMessage,
  res: ServerResponse,
  scope: Scope | readonly Scope[],
  queryKey: QueryKey | null = null,
): Promise<Principal> {
  // URLSearchParams, not the endpoint's strict parser: a malformed escape elsewhere in the query is
  // the endpoint's 400, shown only once the key is admitted.
  const inUrl = queryKey === null ? [] : new URLSearchParams(queryKey.query).getAll(QUERY_KEY_PARAMETER);
  const principal = inUrl.length
    ? await authenticateQueryKey(inUrl, req.headersDistinct.authorization, queryKey!.scope, deps.keys)
    : await authenticate(req.headersDistinct.authorization, scope, deps.keys, queryKey?.scope ?? null);
  deps.limiter?.admit(principal, res);
  await deps.responsePace?.serve(principal.keyId, req, res);
  return principal;
}

/**
 * The key check alone, not counted again: a long poll counts once against the limit, and its
 * re-reads at every wake-up re-check the key only (a key revoked while it waits gets 401).
 */
export async function recheckKey(deps: Admission, req: IncomingMessage, scope: Scope): Promise<void> {
  await authenticate(req.headersDistinct.authorization, scope, deps.keys);
}
