// The pg options that bound a statement: `statement_timeout` on the server (a runaway query is
// cancelled and frees its connection) and, a little later, `query_timeout` in the client, for a
// server that stopped answering altogether (frozen, or cut off without the connection being reset):
// the caller then gets an error (503 for an API request) instead of waiting forever. That margin is
// long for a read (statement timeout + 5 s, 35 s by default): the API's reads carry their own,
// shorter client-side timeout (withReadTimeout, DB_READ_TIMEOUT_MS), so a read on a frozen server
// fails within seconds; writes keep the statement timeout.
import type { QueryConfig, QueryResultRow } from 'pg';
import type { Queryable } from './queryable.ts';

/** A statement's server-side timeout (ms; 0 or undefined: none) as pg pool options. */
export function statementTimeouts(ms: number | undefined): { statement_timeout?: number; query_timeout?: number } {
  if (!ms) return {};
  // The margin lets the server's own cancel arrive first whenever the server is alive.
  return { statement_timeout: ms, query_timeout: ms + Math.min(5000, ms) };
}

/**
 * `pool` whose every statement the client gives up after `ms` (0: the pool's own timeouts), never
 * later than the pool's own client-side timeout: the error ('Query read timeout') counts as the
 * database being unavailable (503), and the pool drops the connection it was on.
 */
export function withReadTimeout(pool: Queryable, ms: number): Queryable {
  // A pg Pool keeps its options; a query's own query_timeout replaces the pool's, so take the shorter.
  const own = (pool as { options?: { query_timeout?: number } }).options?.query_timeout;
  if (!ms || (own && own <= ms)) return pool;
  return {
    query<R extends QueryResultRow = QueryResultRow>(config: QueryConfig) {
      // pg reads `query_timeout` from the query's own config too; its types list it on the client only.
      const bounded: QueryConfig & { query_timeout: number } = { ...config, query_timeout: ms };
      return pool.query<R>(bounded);
    },
  };
}
