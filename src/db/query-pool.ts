// The query class's own connections (kernel/query-gate.ts admits at most `max` reads at once, so
// they never wait for one): a pool apart from the one the record, the plain list, the feed and
// writes use, so that no search can take their connections, and without parallel workers (a
// statement is one backend: session-settings.ts). Every connection runs with
// `statement_timeout` = DB_READ_TIMEOUT_MS: the read's deadline holds in PostgreSQL even if this
// process dies before it could cancel the statement. With read replicas, the same on the replicas.
import pg from 'pg';
import type { ConnectionSource } from './deadline-reads.ts';
import { survivePoolErrors } from './pool-errors.ts';
import { createReadPool } from './read-replicas.ts';
import { QUERY_SESSION_OPTIONS } from './session-settings.ts';
import type { Logger } from '../kernel/logger.ts';

export type QueryPool = ConnectionSource & { close: () => Promise<void> };

export function openQueryPool(options: {
  url: string;
  max: number;
  readTimeoutMs: number;
  connectTimeoutMs: number;
  replicas?: { urls: readonly string[]; maxLagMs: number; checkMs: number };
  logger?: Logger;
}): QueryPool {
  const primary = new pg.Pool({
    connectionString: options.url,
    max: options.max,
    connectionTimeoutMillis: options.connectTimeoutMs,
    idleTimeoutMillis: 30_000,
    application_name: 'lods-query',
    options: QUERY_SESSION_OPTIONS,
    ...(options.readTimeoutMs ? { statement_timeout: options.readTimeoutMs } : {}),
  });
  survivePoolErrors(primary);
  const replicas = options.replicas?.urls.length
    ? createReadPool({
        primary,
        ...options.replicas,
        poolMax: options.max,
        connectTimeoutMs: options.connectTimeoutMs,
        statementTimeoutMs: options.readTimeoutMs,
        sessionOptions: QUERY_SESSION_OPTIONS,
        logger: options.logger,
      })
    : null;
  return {
    connect: () => (replicas ?? primary).connect(),
    reconnect: (client, error) => replicas?.reconnect(client, error) ?? null,
    async close() {
      await replicas?.close();
      await primary.end();
    },
  };
}
