// A read for probes and scrapes that can never hang them: a server-side statement timeout (so a
// slow statement does not keep a pooled connection busy) and a client-side deadline that also covers
// waiting for a connection while the database is unreachable or the pool is exhausted.
import type { Pool, QueryResultRow } from 'pg';

export class DeadlineExceeded extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'DeadlineExceeded';
  }
}

/**
 * Runs one parameterless SELECT with `statement_timeout` set for its own implicit transaction only
 * (both statements travel in one simple-protocol message, so SET LOCAL cannot leak to the next user
 * of the pooled connection). Rejects with DeadlineExceeded after `timeoutMs`.
 */
export async function boundedQuery<R extends QueryResultRow>(pool: Pool, sql: string, timeoutMs: number): Promise<R[]> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceeded(timeoutMs)), timeoutMs);
  });
  const query = pool.query(`set local statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}; ${sql}`);
  query.catch(() => {}); // if the deadline wins, a late failure must not become an unhandled rejection
  try {
    const results = (await Promise.race([query, deadline])) as unknown as { rows: R[] }[];
    return results[results.length - 1]?.rows ?? [];
  } finally {
    clearTimeout(timer);
  }
}

/** True when `error` says a table or schema does not exist (e.g. pg-boss has not created its own yet). */
export function isMissingRelation(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return code === '42P01' || code === '3F000';
}
