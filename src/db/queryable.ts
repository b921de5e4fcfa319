// What a read needs of a database handle: one `query` taking a pg query config. A pg Pool, the
// read-replica pool (read-replicas.ts) and a read with its own timeout (timeouts.ts) all are one.
import type { QueryConfig, QueryResult, QueryResultRow } from 'pg';

export type Queryable = {
  query<R extends QueryResultRow = QueryResultRow>(config: QueryConfig): Promise<QueryResult<R>>;
};

/** Reads that may also be cancelled with one request's signal (deadline-reads.ts `within`, `cancelledWith`). */
export type CancellableReads = Queryable & { within?: (signal: AbortSignal) => RequestReads };
/** One request's reads: `ended()` resolves once every statement they started has stopped in PostgreSQL (what a slot of theirs waits for). */
export type RequestReads = Queryable & { ended(): Promise<void>; within?: (signal: AbortSignal) => RequestReads };
