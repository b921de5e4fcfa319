// Records the name of every statement run on the connections of a pool, however it is run: through
// pool.query, or on a connection taken with pool.connect() (the API's reads, db/deadline-reads.ts).
// It patches the query method of the pool's own client class (MikroORM's pool may come from
// another copy of pg than the one this file imports), so every pool of that class is recorded.
import type { Pool, QueryConfig } from 'pg';

/** Calls `record` with each statement's name ('unnamed' for a text query); returns the undo. */
export function recordStatements(pool: Pool, record: (name: string) => void): () => void {
  const prototype = (pool as unknown as { Client: { prototype: { query: (...args: unknown[]) => unknown } } }).Client
    .prototype;
  const query = prototype.query;
  prototype.query = function (this: unknown, ...args: unknown[]) {
    const config = args[0];
    record(typeof config === 'object' && config !== null ? ((config as QueryConfig).name ?? 'unnamed') : 'unnamed');
    return query.apply(this, args);
  };
  return () => {
    prototype.query = query;
  };
}
