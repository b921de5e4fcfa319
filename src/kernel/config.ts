// The only reader of process.env: validated once at boot, typed, frozen. The settings and their
// checks are in config-schema.ts; Config is what buildConfig makes of them, grouped by the part of
// the service that reads them, with what each means. A new setting is written in the schema and in
// buildConfig, nowhere else in the code.
import { existsSync } from 'node:fs';
import { MAX_WAIT_MS } from './byte-pace.ts';
import { type Settings, settingsSchema } from './config-schema.ts';
import type { QueryGateLimits } from './query-gate.ts';

/** What the service is configured with: the object buildConfig makes (frozen, section by section). */
export type Config = ReturnType<typeof buildConfig>;

/** HTTP_HEADERS_TIMEOUT_MS when unset, or REQUEST_TIMEOUT_MS when that is shorter. */
const HEADERS_TIMEOUT_DEFAULT_MS = 10_000;

/** FEED_MAX_WAITERS_PER_KEY when unset: a tenth of FEED_MAX_WAITERS, at least 1. */
export const defaultWaitersPerKey = (maxWaiters: number): number => Math.max(1, Math.floor(maxWaiters / 10));

/** A 32-byte AES key given as base64; `undefined` when absent. */
function secretKey(name: string, value: string | undefined, problems: string[]): Buffer | undefined {
  if (value === undefined) return undefined;
  const key = Buffer.from(value, 'base64');
  if (key.length !== 32 || key.toString('base64') !== value.replace(/\s+$/, '')) {
    problems.push(`${name}: must be the base64 of exactly 32 bytes (e.g. openssl rand -base64 32)`);
    return undefined;
  }
  return key;
}

/** The one-line refusal when production runs without a key (also used by the key resolution). */
export const MISSING_SECRET_KEY =
  'SECRET_ENCRYPTION_KEY is required with NODE_ENV=production: set it to the base64 of 32 random bytes (openssl rand -base64 32)';

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

/** Parses the environment; throws a ConfigError listing every problem at once. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = settingsSchema.safeParse(present);
  if (!parsed.success) {
    // Named by the variable alone: an item of a list setting says which item in its message.
    throw new ConfigError(
      parsed.error.issues.map((i) => (i.path.length ? `${String(i.path[0])}: ${i.message}` : i.message)),
    );
  }
  checkTogether(parsed.data);
  return buildConfig(parsed.data, env);
}

/** Config from the parsed settings (`env` only for the container check of the default host). */
function buildConfig(e: Settings, env: NodeJS.ProcessEnv) {
  const production = e.NODE_ENV === 'production';
  return Object.freeze({
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR,
    port: e.PORT,
    host: e.HOST ?? (env.container || existsDockerEnv() ? '0.0.0.0' : '127.0.0.1'),
    logLevel: e.LOG_LEVEL ?? 'info',
    /** The CLI logs to stderr and keeps quiet unless LOG_LEVEL says otherwise. */
    cliLogLevel: e.LOG_LEVEL ?? 'warn',
    production,
    role: e.ROLE,
    ...apiSections(e),
    /** How long a shutdown waits for pg-boss to finish its work before closing it. */
    shutdownQueueTimeoutMs: e.SHUTDOWN_QUEUE_TIMEOUT_MS,
    walk: Object.freeze({ baseUrl: e.LODS_BASE_URL, apiKey: e.LODS_API_KEY }),
    webhooks: webhookSection(e, production),
    /** Keys of the signing secrets at rest; without `key`, webhooks/secrets/secret-keys.ts decides. */
    secretKeys: secretKeys(e, production),
    demoSeedCount: e.DEMO_SEED_COUNT,
    // Change feed and retention.
    feed: feedSection(e),
    retention: Object.freeze({
      eventDays: e.EVENT_RETENTION_DAYS,
      deliveryAttemptDays: e.DELIVERY_ATTEMPT_RETENTION_DAYS,
    }),
  });
}

/**
 * The change feed's long polls. Each holds its connection while it waits, so together they stay
 * below HTTP_MAX_CONNECTIONS: by default half of it (512 of 1024), leaving the rest to every other
 * request; at its old default of 1,000, twelve keys' valid long polls left 24 connections, and
 * further clients were refused without an answer (found from outside).
 */
function feedSection(e: Settings) {
  const maxWaiters = e.FEED_MAX_WAITERS ?? Math.floor(e.HTTP_MAX_CONNECTIONS / 2);
  return Object.freeze({
    maxWaiters,
    maxWaitersPerKey: e.FEED_MAX_WAITERS_PER_KEY ?? defaultWaitersPerKey(maxWaiters),
  });
}

/** Settings valid alone but not together: every such problem listed at once. */
function checkTogether(e: Settings): void {
  const problems: string[] = [];
  if (e.WEBHOOK_BACKOFF_MAX_MS < e.WEBHOOK_BACKOFF_BASE_MS)
    problems.push('WEBHOOK_BACKOFF_MAX_MS: must be >= WEBHOOK_BACKOFF_BASE_MS');
  if (e.FEED_MAX_WAITERS !== undefined && e.FEED_MAX_WAITERS >= e.HTTP_MAX_CONNECTIONS)
    problems.push(
      `FEED_MAX_WAITERS: must be below HTTP_MAX_CONNECTIONS (${e.HTTP_MAX_CONNECTIONS}): waiting long polls hold their connections, and every other request needs one`,
    );
  if (e.HTTP_HEADERS_TIMEOUT_MS !== undefined && e.HTTP_HEADERS_TIMEOUT_MS > e.REQUEST_TIMEOUT_MS)
    problems.push('HTTP_HEADERS_TIMEOUT_MS: must be <= REQUEST_TIMEOUT_MS (the headers are part of the request)');
  // A body the pace could not take within MAX_WAIT_MS even from a key that owes nothing is refused for ever.
  const paceable = e.GRAPHQL_BODY_BURST_BYTES + (MAX_WAIT_MS / 1000) * e.GRAPHQL_BODY_BYTES_PER_SECOND;
  if (e.GRAPHQL_MAX_BODY_BYTES > paceable)
    problems.push(
      `GRAPHQL_MAX_BODY_BYTES: must be at most GRAPHQL_BODY_BURST_BYTES + ${MAX_WAIT_MS / 1000} s of GRAPHQL_BODY_BYTES_PER_SECOND (${paceable}): a larger body would wait longer than the pace lets a body wait, and be refused every time`,
    );
  if (problems.length) throw new ConfigError(problems);
}

/** The keys of the signing secrets at rest; production refuses to run without one. */
function secretKeys(e: Settings, production: boolean) {
  const problems: string[] = [];
  const key = secretKey('SECRET_ENCRYPTION_KEY', e.SECRET_ENCRYPTION_KEY, problems);
  const previous = secretKey('SECRET_ENCRYPTION_KEY_PREVIOUS', e.SECRET_ENCRYPTION_KEY_PREVIOUS, problems);
  if (production && e.SECRET_ENCRYPTION_KEY === undefined) problems.push(MISSING_SECRET_KEY);
  if (problems.length) throw new ConfigError(problems);
  return Object.freeze({ key, previous });
}

/** What the API reads: database and HTTP bounds, GraphQL limits, rate limits, caches, read replicas. */
function apiSections(e: Settings) {
  return {
    db: Object.freeze({
      poolMax: e.DB_POOL_MAX,
      /** A request's reads take at most this many of the main pool's connections per key (db/key-connections.ts). */
      maxConnectionsPerKey: e.DB_MAX_CONNECTIONS_PER_KEY ?? Math.max(1, Math.floor(e.DB_POOL_MAX / 2)),
      connectTimeoutMs: e.DB_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS,
      readTimeoutMs: e.DB_READ_TIMEOUT_MS,
    }),
    /** The query class's admission and its own connections (kernel/query-gate.ts): per key, per process, the longest wait. */
    query: Object.freeze<QueryGateLimits>({
      perKey: e.QUERY_MAX_CONCURRENT_PER_KEY,
      total: e.QUERY_MAX_CONCURRENT ?? Math.max(1, Math.floor(e.DB_POOL_MAX / 2)),
      queueWaitMs: e.QUERY_QUEUE_WAIT_MS,
    }),
    http: Object.freeze({
      requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS ?? Math.min(HEADERS_TIMEOUT_DEFAULT_MS, e.REQUEST_TIMEOUT_MS),
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: e.HTTP_MAX_CONNECTIONS,
      readinessTimeoutMs: e.READINESS_TIMEOUT_MS,
      /** How long a shutdown lets requests in flight finish before it closes their connections. */
      shutdownGraceMs: e.SHUTDOWN_HTTP_GRACE_MS,
      graphqlMaxBodyBytes: e.GRAPHQL_MAX_BODY_BYTES,
      /** PAGE_MAX_BYTES: a list or feed page stops before the record that would pass it. */
      pageMaxBytes: e.PAGE_MAX_BYTES,
      /** The bytes answered per key and process (/v1 and GraphQL), after a burst; bytesPerSecond 0 = off. */
      responsePace: { bytesPerSecond: e.RESPONSE_BYTES_PER_SECOND, burstBytes: e.RESPONSE_BURST_BYTES },
      /** Origins whose browsers may read /v1 (CORS); empty: CORS off. */
      corsOrigins: Object.freeze(e.CORS_ORIGINS ?? []),
    }),
    graphql: Object.freeze({
      maxCost: e.GRAPHQL_MAX_COST,
      maxDepth: e.GRAPHQL_MAX_DEPTH,
      maxAliases: e.GRAPHQL_MAX_ALIASES,
      maxResponseBytes: e.GRAPHQL_MAX_RESPONSE_BYTES,
      maxTokens: e.GRAPHQL_MAX_TOKENS,
      bodyPace: { bytesPerSecond: e.GRAPHQL_BODY_BYTES_PER_SECOND, burstBytes: e.GRAPHQL_BODY_BURST_BYTES },
      maxDirectives: e.GRAPHQL_MAX_DIRECTIVES,
    }),
    /** Scaling: perMinute 0 = off; syncMs: how often each API process shares its counts. */
    rateLimit: Object.freeze({ perMinute: e.RATE_LIMIT_PER_MINUTE, syncMs: e.RATE_LIMIT_SYNC_MS }),
    /** The API key cache of each API process: maxAgeMs 0 = every request looks its key up. */
    keyCache: Object.freeze({ maxAgeMs: e.KEY_CACHE_MAX_AGE_MS, maxEntries: e.KEY_CACHE_MAX_ENTRIES }),
    /** The record version cache (304s from memory); off with read replicas. */
    etagCache: Object.freeze({ maxAgeMs: e.ETAG_CACHE_MAX_AGE_MS, maxEntries: e.ETAG_CACHE_MAX_ENTRIES }),
    /** Scaling: read replicas (none: every read on the primary), skipped beyond maxLagMs, checked every checkMs. */
    readReplicas: Object.freeze({
      urls: Object.freeze(e.DATABASE_READ_URL ?? []),
      maxLagMs: e.READ_MAX_LAG_MS,
      checkMs: e.READ_CHECK_MS,
    }),
  };
}

/** The delivery worker's and the queue's settings. */
function webhookSection(e: Settings, production: boolean) {
  return Object.freeze({
    maxAttempts: e.WEBHOOK_MAX_ATTEMPTS,
    timeoutMs: e.WEBHOOK_TIMEOUT_MS,
    backoffBaseMs: e.WEBHOOK_BACKOFF_BASE_MS,
    backoffMaxMs: e.WEBHOOK_BACKOFF_MAX_MS,
    allowPrivateTargets: e.WEBHOOK_ALLOW_PRIVATE_TARGETS ?? !production,
    concurrencyPerReceiver: e.WEBHOOK_CONCURRENCY_PER_RECEIVER,
    workerConcurrency: e.WORKER_CONCURRENCY,
    // Worker and queue tunables (delivery worker).
    /** Times pg-boss hands a delivery out again after its worker died or lost the database mid-attempt. */
    lostRetryLimit: e.WEBHOOK_LOST_RETRY_LIMIT,
    /** A delivery job no worker picks up within this long is dropped (a worker outage that long). */
    queueRetentionDays: e.WEBHOOK_QUEUE_RETENTION_DAYS,
    /** Dead letters are kept this long unless replayed or removed. */
    deadLetterRetentionDays: e.WEBHOOK_DEAD_LETTER_RETENTION_DAYS,
    /** One receiver's jobs in progress across all workers: this times concurrencyPerReceiver. */
    groupFactor: e.WEBHOOK_GROUP_FACTOR,
    /** Longest a fetched job may wait in a receiver's local queue (prefetch sizing). */
    prefetchBudgetMs: e.WEBHOOK_PREFETCH_BUDGET_MS,
    /** Jobs per fetch. */
    fetchBatch: e.WEBHOOK_FETCH_BATCH,
    /** Poll floor when no NOTIFY arrives. */
    pollIntervalMs: e.WEBHOOK_POLL_INTERVAL_MS,
    /** pg-boss's own connection pool. */
    bossPoolMax: e.PGBOSS_POOL_MAX,
    /** pg-boss maintenance (deleting old jobs) interval. */
    bossMaintenanceIntervalSeconds: e.PGBOSS_MAINTENANCE_INTERVAL_SECONDS,
    /** Hours of nothing but failed attempts after which a receiver is disabled; 0 = never. */
    disableAfterHours: e.WEBHOOK_DISABLE_AFTER_HOURS,
  });
}

function existsDockerEnv(): boolean {
  return existsSync('/.dockerenv');
}
