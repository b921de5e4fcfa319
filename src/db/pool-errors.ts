// A pooled connection that breaks (the database restarted, a replica stopped, an operator's
// pg_terminate_backend): pg emits 'error' on its client. pg-pool listens only while the client is
// idle (it then drops it); while a caller holds it (pool.connect()), nothing did, and the unhandled
// 'error' ended the process. The statement in flight fails with the same error, and its caller
// answers for it and hands the connection back as broken (deadline-reads.ts `release`).
import type { Pool, PoolClient } from 'pg';
import { AppError } from '../kernel/errors.ts';

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

/**
 * pg-pool's connect timeout on a pool whose every connection is held: the database is fine, this
 * process is busy. Said so (503, Retry-After 1) instead of "the database is unreachable", which sent
 * people looking for an outage that was not there. Null for any other failure (and for a source that
 * is not a pg Pool: the read replicas' has pools of its own).
 */
export function poolBusy(source: unknown, error: unknown): AppError | null {
  const pool = source as Partial<Pool>;
  const timedOut = /timeout exceeded when trying to connect/i.test(String((error as Error | undefined)?.message));
  if (!timedOut || typeof pool.totalCount !== 'number' || pool.totalCount < (pool.options?.max ?? Infinity))
    return null;
  return new AppError('SERVICE_UNAVAILABLE', 'Every database connection of this process is in use; try again shortly', {
    headers: { 'Retry-After': '1' },
    cause: error,
  });
}
