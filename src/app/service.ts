// Wires the parts of the service over an open database: catalog reads and writes, the change
// recorder, GraphQL, the express app and its HTTP server. main.ts and the tests both use it.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createApp } from './express-app.ts';
import { createHttpServer } from '../http/http-server.ts';
import { listenOn, reachableUrl } from '../http/listen.ts';
import { checkKeyBeforeContinue } from '../http/expect-continue.ts';
import { createRateLimiter, type RateLimiter } from '../http/rate-limit.ts';
import { v1Dispatcher } from '../http/v1/dispatcher.ts';
import { createCatalogWrites, type CatalogWrites } from '../catalog/catalog-writes.ts';
import { catalogResolvers } from '../graphql/resolvers.ts';
import { receiverResolvers } from '../graphql/receiver-resolvers.ts';
import { consoleReadResolvers, consoleResolvers } from '../graphql/console-resolvers.ts';
import { webhookResolvers } from '../graphql/webhook-resolvers.ts';
import { createEventAttemptsLoader } from '../graphql/event-attempts-loader.ts';
import { feedResolvers } from '../graphql/feed-resolvers.ts';
import { createCatalogReads, type CatalogReads } from '../catalog/read-model.ts';
import { createListReads, type QueryClass } from '../catalog/list-query.ts';
import { createVersionCache, type VersionCache } from '../catalog/version-cache.ts';
import { startCountFolder } from '../catalog/count-folder.ts';
import type { Config } from '../kernel/config.ts';
import type { Database } from './database.ts';
import { createChangeRecorder, type EventFanOut } from '../events/record-change.ts';
import { type ChangeFeed, startChangeFeed } from '../feed/change-feed.ts';
import { createKeyCache, type KeyCache } from '../auth/key-cache.ts';
import { createListenConnection } from '../db/listen-connection.ts';
import { readsWithin } from '../db/deadline-reads.ts';
import { admittedBy, connectionsPerKey } from '../db/key-connections.ts';
import type { Queryable } from '../db/queryable.ts';
import { openQueryPool } from '../db/query-pool.ts';
import { createQueryGate } from '../kernel/query-gate.ts';
import { createResponsePacing } from '../http/response-pacing.ts';
import { closedSignal } from '../http/closed-signal.ts';
import { buildSchema, createGraphQLMiddleware } from '../graphql/server.ts';
import type { Logger } from '../kernel/logger.ts';
import type { ReceiverDeps } from '../webhooks/receivers/receivers.ts';
import { answerBeforeRouting, hostRefusal } from '../http/host-header.ts';

export type Api = {
  server: Server;
  /** Where a client on this machine reaches it (loopback when bound to every interface). */
  url: string;
  /** The address the server is bound to, as the kernel reports it. */
  bound: { address: string; port: number };
  reads: CatalogReads;
  writes: CatalogWrites;
  feed: ChangeFeed;
  /** Answers waiting long polls, stops accepting, drains open requests, stops Apollo. */
  close: () => Promise<void>;
};

/**
 * `pageMaxBytes`: PAGE_MAX_BYTES, the bound of a REST list page's bytes. `queryClass`: where the
 * API's list reads run (admitted, on connections of their own); else on `db.readPool` as they are.
 */
export function createCatalog(
  db: { orm: Database['orm']; readPool: Queryable },
  fanOut: EventFanOut | null = null,
  versions: VersionCache | null = null,
  pageMaxBytes?: number,
  queryClass?: QueryClass,
) {
  const reads = createCatalogReads(db.readPool, versions, pageMaxBytes);
  const writes = createCatalogWrites({
    orm: db.orm,
    recordChange: createChangeRecorder(fanOut),
    ...(versions ? { committed: versions.drop } : {}),
  });
  const lists = createListReads(queryClass ?? db.readPool, pageMaxBytes);
  return { reads, writes, lists };
}

/** What receiver management needs besides the pool (GraphQL receivers:manage); main.ts always passes it. */
export type ReceiverManagement = Omit<ReceiverDeps, 'pool'>;

export async function startApi(
  config: Pick<
    Config,
    'port' | 'host' | 'http' | 'graphql' | 'rateLimit' | 'keyCache' | 'etagCache' | 'feed' | 'db' | 'query'
  > &
    Partial<Pick<Config, 'readReplicas'>>,
  db: Database,
  logger: Logger,
  fanOut: EventFanOut | null = null,
  receivers: ReceiverManagement | null = null,
): Promise<Api> {
  // Off with read replicas (catalog/version-cache.ts): their reads could refill it with a retired version.
  const versions = db.readPool === db.pool ? createVersionCache(config.etagCache) : null;
  // The requests' reads are cancelled in PostgreSQL after DB_READ_TIMEOUT_MS (db/deadline-reads.ts):
  // a slow read or a frozen database is a 503 within seconds, and nothing of it runs on.
  const readTimeoutMs = config.db.readTimeoutMs;
  // A key's requests take at most DB_MAX_CONNECTIONS_PER_KEY of the main pool at once (db/key-connections.ts).
  const perKey = connectionsPerKey({ perKey: config.db.maxConnectionsPerKey, queueWaitMs: config.query.queueWaitMs });
  const readPool = perKey(readsWithin(db.readPool, readTimeoutMs));
  const primaryReads = perKey(readsWithin(db.pool, readTimeoutMs));
  // The query class: admitted per key and per process, on connections of its own (db/query-pool.ts).
  const queryPool = openQueryPool({
    url: db.url,
    max: config.query.total,
    readTimeoutMs,
    connectTimeoutMs: config.db.connectTimeoutMs,
    ...(db.readPool !== db.pool && config.readReplicas ? { replicas: config.readReplicas } : {}),
    logger,
  });
  const queryClass: QueryClass = {
    gate: createQueryGate(config.query),
    // A caller's own deadline (a GraphQL request's, shared by its reads) shortens the service's, never lengthens it.
    reads: (signal, ms) =>
      readsWithin(
        queryPool,
        ms === undefined ? readTimeoutMs : readTimeoutMs > 0 ? Math.min(ms, readTimeoutMs) : ms,
        signal,
        readTimeoutMs,
      ),
  };
  const catalog = createCatalog({ orm: db.orm, readPool }, fanOut, versions, config.http.pageMaxBytes, queryClass);
  const server = createHttpServer(config.http, logger);
  const feed = startChangeFeed({
    pool: primaryReads,
    readPool,
    maxWaiters: config.feed.maxWaiters,
    maxWaitersPerKey: config.feed.maxWaitersPerKey,
    pageMaxBytes: config.http.pageMaxBytes,
    // A view's page (its filter's cost chosen by the consumer) takes a slot of the query class, on the main pool.
    viewReads: admittedBy(queryClass.gate),
  });
  const keys = createKeyCache({ primary: primaryReads, fallback: readPool }, config.keyCache);
  const graphql = await startGraphQL({ config, db, logger, server, catalog, feed, receivers });
  // One limiter per process: every /v1 endpoint and GraphQL share each key's budget.
  const { perMinute, syncMs } = config.rateLimit;
  const limiter = perMinute > 0 ? createRateLimiter({ pool: db.pool, perMinute, syncMs, logger }) : null;
  const handle = requestHandler({ config, db, logger, catalog, feed, keys, limiter, graphql: graphql.middleware });
  server.on('request', handle);
  server.on('checkContinue', checkKeyBeforeContinue(keys, handle));
  const bound = await listenOn(server, config);
  // The write statements' count deltas, folded every second (catalog/count-folder.ts).
  const folder = startCountFolder({ pool: db.pool, logger });
  // Until it listens, long polls re-read every second and every request looks its key up.
  const listen = createListenConnection({
    url: db.url,
    subscribers: [feed.subscriber, keys.subscriber, ...(versions ? [versions.subscriber] : [])],
    logger,
  });
  return {
    server,
    url: reachableUrl(bound),
    bound: { address: bound.address, port: bound.port },
    ...catalog,
    feed,
    // Long polls first (they would hold the drain for up to 30 s), then the drain plugin closes the
    // listener and waits for in-flight requests.
    close: async () => {
      feed.stopWaiting();
      await graphql.stop();
      await limiter?.stop();
      await folder.stop();
      await listen.close();
      await queryPool.close();
    },
  };
}

type Parts = {
  config: Pick<Config, 'http' | 'graphql' | 'db'>;
  db: Database;
  logger: Logger;
  catalog: ReturnType<typeof createCatalog>;
  feed: ChangeFeed;
};

/** Apollo over every team's resolvers (receiver management only when main.ts hands its dependencies in). */
async function startGraphQL(parts: Parts & { server: Server; receivers: ReceiverManagement | null }) {
  const { db, receivers } = parts;
  const readTimeoutMs = parts.config.db.readTimeoutMs;
  const schema = buildSchema([
    catalogResolvers(parts.catalog),
    webhookResolvers({ pool: db.pool }),
    feedResolvers({ reads: parts.feed.reads }),
    consoleReadResolvers({ pool: db.pool }),
    ...(receivers
      ? [receiverResolvers({ ...receivers, pool: db.pool }), consoleResolvers({ boss: receivers.boss, pool: db.pool })]
      : []),
  ]);
  return await createGraphQLMiddleware({
    schema,
    newContext: (principal, res) => ({
      principal,
      signal: closedSignal(res),
      // The request's reads end within one DB_READ_TIMEOUT_MS together, not one each.
      ...(readTimeoutMs > 0 ? { deadline: performance.now() + readTimeoutMs } : {}),
      eventAttempts: createEventAttemptsLoader(db.pool),
    }),
    limits: parts.config.graphql,
    logger: parts.logger,
    drain: { httpServer: parts.server, graceMs: parts.config.http.shutdownGraceMs },
  });
}

/** Every /v1 endpoint is answered by its dispatcher, in front of express (http/v1/dispatcher.ts). */
function requestHandler(
  parts: Parts & {
    keys: KeyCache;
    limiter: RateLimiter | null;
    graphql: Awaited<ReturnType<typeof createGraphQLMiddleware>>['middleware'];
  },
) {
  const { config, db, logger, keys, limiter } = parts;
  // One per process: /v1 and GraphQL answers count against each key's one pace.
  const responsePace = createResponsePacing(config.http.responsePace);
  const app = createApp({
    pool: db.pool,
    keys,
    limiter,
    logger,
    graphql: parts.graphql,
    graphqlMaxBodyBytes: config.http.graphqlMaxBodyBytes,
    graphqlMaxTokens: config.graphql.maxTokens,
    graphqlBodyPace: config.graphql.bodyPace,
    responsePace,
    readinessTimeoutMs: config.http.readinessTimeoutMs,
  });
  const v1 = v1Dispatcher({
    keys,
    limiter,
    responsePace,
    reads: parts.catalog.reads,
    lists: parts.catalog.lists,
    feed: parts.feed,
    logger,
    corsOrigins: config.http.corsOrigins,
    pageMaxBytes: config.http.pageMaxBytes,
  });
  return (req: IncomingMessage, res: ServerResponse) => {
    const refused = hostRefusal(req);
    if (refused) return answerBeforeRouting(logger, req, res, refused);
    return v1(req, res) || app(req, res);
  };
}
