// A pooled connection that breaks (the database restarted, a replica stopped, an operator's
// pg_terminate_backend): pg emits 'error' on its client. pg-pool listens only while the client is
// idle (it then drops it); while a caller holds it (pool.connect()), nothing did, and the unhandled
// 'error' ended the process. The statement in flight fails with the same error, and its caller
// answers for it and hands the connection back as broken (deadline-reads.ts `release`).
import type { Pool } from 'pg';

/** Makes a broken connection of `pool` an error of its statement, never of the process. */
export function survivePoolErrors(pool: Pool): void {
  pool.on('error', () => {}); // an idle connection that broke: the pool drops it, the next read opens another
  pool.on('connect', (client) => client.on('error', () => {}));
}
