// A pooled connection that breaks (the database restarted, a replica stopped, an operator's
// pg_terminate_backend): pg emits 'error' on its client. pg-pool listens only while the client is
// idle (it then drops it); while a caller holds it (pool.connect()), nothing did, and the unhandled
// 'error' ended the process. The statement in flight fails with the same error, and its caller
// answers for it and hands the connection back as broken (deadline-reads.ts `release`).
import type { Pool, PoolClient } from 'pg';

/** Makes a broken connection of `pool` an error of its statement, never of the process. */
export function survivePoolErrors(pool: Pool): void {
  pool.on('error', () => {}); // an idle connection that broke: the pool drops it, the next read opens another
  pool.on('connect', (client) => client.on('error', () => {}));
}

/**
 * Closes a held connection instead of handing it back. pg-pool ends it without an 'error' listener
 * (a held client has none), so an error the server sends while it closes (a database dropped, a
 * server shutting down: "terminating connection due to administrator command") was an uncaught
 * exception, ending the process; here it goes with the connection.
 */
export function discardConnection(client: PoolClient, reason: Error | true = true): void {
  client.on('error', () => {});
  client.release(reason);
}
