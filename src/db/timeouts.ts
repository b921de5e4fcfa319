// The pg options that bound a statement: `statement_timeout` on the server (a runaway query is
// cancelled and frees its connection) and, a little later, `query_timeout` in the client, for a
// server that stopped answering altogether (frozen, or cut off without the connection being reset):
// the caller then gets an error (503 for an API request) instead of waiting forever. That margin is
// long for a read (statement timeout + 5 s, 35 s by default): the API's reads carry their own,
// shorter deadline (deadline-reads.ts, DB_READ_TIMEOUT_MS), at which their statement is cancelled;
// writes keep the statement timeout.

/** A statement's server-side timeout (ms; 0 or undefined: none) as pg pool options. */
export function statementTimeouts(ms: number | undefined): { statement_timeout?: number; query_timeout?: number } {
  if (!ms) return {};
  // The margin lets the server's own cancel arrive first whenever the server is alive.
  return { statement_timeout: ms, query_timeout: ms + Math.min(5000, ms) };
}
