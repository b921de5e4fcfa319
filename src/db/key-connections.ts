// Connections of the main pool per API key: a request's reads on the pool (the record, the plain
// list, the feed, GraphQL's) take at most DB_MAX_CONNECTIONS_PER_KEY of them at once, so that one key
// sending many requests at once (25 pages of 8 MB each, or 500 records) never holds every connection
// while other keys, the writes and the background work wait for one. Seen from outside before: 25
// parallel plain list pages of one key made 12 of them and another key's GET 503 "database
// unreachable" (pg-pool's connect timeout), and that key's GETs took 3 to 5 s.
// The key is the request's (runAsKey, set once the key is admitted: the /v1 dispatcher, the GraphQL
// gate); reads outside any key (the key look-up itself, background work) are not counted. A read
// that finds its key's reads all taken waits in line, first come first served, at most
// QUERY_QUEUE_WAIT_MS, then is refused with 429 and Retry-After 1: the key is asking for more at
// once than its share, as with the query class (kernel/query-gate.ts), whose reads have a pool of
// their own and do not come here. A read holds its slot until it is answered (a result, an error,
// its deadline): the wait in line comes before the read's own deadline starts, so a key's reads
// fail for the database as they did (a frozen one: "unreachable") and not for their line.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { QueryConfig, QueryResultRow } from 'pg';
import { AppError } from '../kernel/errors.ts';
import { keyConnectionsRefused } from '../kernel/metrics.ts';
import { createQueryGate, type QueryGate } from '../kernel/query-gate.ts';
import type { BoundedReads } from './deadline-reads.ts';
import type { CancellableReads, RequestReads } from './queryable.ts';

const requestKey = new AsyncLocalStorage<string>();

/** Runs `fn` (and everything it starts) as the reads of API key `keyId`. */
export function runAsKey<T>(keyId: string, fn: () => T): T {
  return requestKey.run(keyId, fn);
}

/**
 * The limit: wraps reads (the primary's, the read pool's: one count across them) of which a key's
 * requests run at most `perKey` at once, waiting at most `queueWaitMs` for a turn: the query class's
 * gate (kernel/query-gate.ts) with no limit of the process's own (the pool is that).
 */
export function connectionsPerKey(limits: {
  perKey: number;
  queueWaitMs: number;
}): (reads: BoundedReads) => BoundedReads {
  const gate = createQueryGate(
    { perKey: limits.perKey, total: Number.POSITIVE_INFINITY, queueWaitMs: limits.queueWaitMs },
    {
      running: () => {},
      waiting: () => {},
      refusal: () => {
        keyConnectionsRefused.inc();
        return new AppError(
          'RATE_LIMITED',
          `This key already has ${limits.perKey} reads running at once on this service (DB_MAX_CONNECTIONS_PER_KEY); retry in 1 s`,
          { headers: { 'Retry-After': '1' } },
        );
      },
    },
  );
  const admitted = admittedBy(gate);
  return (reads) => {
    const admittedReads = admitted(reads);
    return { query: admittedReads.query, ended: () => reads.ended(), within: admittedReads.within! };
  };
}

/**
 * `reads` of which each statement of a key's request also takes one of the key's slots of `gate` (the
 * query class's): for reads on the main pool whose cost the consumer chooses, as a view's feed page
 * (up to VIEW_SCAN_MAX events scanned for one page: two keys' pages at once held every connection of
 * the main pool, and other keys' GETs took 0.4 to 1.4 s).
 */
export function admittedBy(gate: QueryGate): (reads: CancellableReads) => CancellableReads {
  // `ended` only for the reads of one request (`within`): those of the whole process end only when
  // every request's have. A read cancelled (its client gone) keeps its slot until its statement has
  // stopped in PostgreSQL: a key dropping its requests must not run more statements than its slots.
  const admit = (reads: CancellableReads, ended?: () => Promise<void>): CancellableReads => ({
    query<R extends QueryResultRow>(config: QueryConfig) {
      const keyId = requestKey.getStore();
      return keyId === undefined
        ? reads.query<R>(config)
        : gate.run(keyId, () => reads.query<R>(config), undefined, ended);
    },
    ...(reads.within
      ? {
          within: (signal: AbortSignal): RequestReads => {
            const own = reads.within!(signal);
            const ownEnded = () => own.ended();
            return { ...admit(own, ownEnded), ended: ownEnded };
          },
        }
      : {}),
  });
  return (reads) => admit(reads);
}
