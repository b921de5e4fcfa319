// What the service is configured with (Config): the settings of kernel/config-schema.ts grouped by
// the part of the service that reads them, with what each means; kernel/config.ts builds it.
import type { Settings } from './config-schema.ts';
import type { QueryGateLimits } from './query-gate.ts';

type LogLevel = NonNullable<Settings['LOG_LEVEL']>;

export type Config = Readonly<{
  databaseUrl: string | undefined;
  dataDir: string;
  port: number;
  host: string;
  logLevel: LogLevel;
  /** The CLI logs to stderr and keeps quiet unless LOG_LEVEL says otherwise. */
  cliLogLevel: LogLevel;
  production: boolean;
  role: 'all' | 'api' | 'worker';
  db: Readonly<{ poolMax: number; connectTimeoutMs: number; statementTimeoutMs: number; readTimeoutMs: number }>;
  /** The query class's admission and its own connections (kernel/query-gate.ts): per key, per process, the longest wait. */
  query: Readonly<QueryGateLimits>;
  http: Readonly<{
    requestTimeoutMs: number;
    headersTimeoutMs: number;
    keepAliveTimeoutMs: number;
    maxConnections: number;
    readinessTimeoutMs: number;
    graphqlMaxBodyBytes: number;
    /** PAGE_MAX_BYTES: a list or feed page stops before the record that would pass it. */
    pageMaxBytes: number;
    /** Origins whose browsers may read /v1 (CORS); empty: CORS off. */
    corsOrigins: readonly string[];
  }>;
  graphql: Readonly<{
    maxCost: number;
    maxDepth: number;
    maxAliases: number;
    maxResponseBytes: number;
    maxTokens: number;
    bodyPace: { bytesPerSecond: number; burstBytes: number };
    maxDirectives: number;
  }>;
  /** How long a shutdown waits for pg-boss to finish its work before closing it. */
  shutdownQueueTimeoutMs: number;
  walk: Readonly<{ baseUrl: string | undefined; apiKey: string | undefined }>;
  webhooks: Readonly<{
    maxAttempts: number;
    timeoutMs: number;
    backoffBaseMs: number;
    backoffMaxMs: number;
    allowPrivateTargets: boolean;
    concurrencyPerReceiver: number;
    workerConcurrency: number;
    // Worker and queue tunables (delivery worker).
    /** Times pg-boss hands a delivery out again after its worker died or lost the database mid-attempt. */
    lostRetryLimit: number;
    /** A delivery job no worker picks up within this long is dropped (a worker outage that long). */
    queueRetentionDays: number;
    /** Dead letters are kept this long unless replayed or removed. */
    deadLetterRetentionDays: number;
    /** One receiver's jobs in progress across all workers: this times concurrencyPerReceiver. */
    groupFactor: number;
    /** Longest a fetched job may wait in a receiver's local queue (prefetch sizing). */
    prefetchBudgetMs: number;
    /** Jobs per fetch. */
    fetchBatch: number;
    /** Poll floor when no NOTIFY arrives. */
    pollIntervalMs: number;
    /** pg-boss's own connection pool. */
    bossPoolMax: number;
    /** pg-boss maintenance (deleting old jobs) interval. */
    bossMaintenanceIntervalSeconds: number;
    /** Hours of nothing but failed attempts after which a receiver is disabled; 0 = never. */
    disableAfterHours: number;
  }>;
  /** Keys of the signing secrets at rest; without `key`, webhooks/secrets/secret-keys.ts decides. */
  secretKeys: Readonly<{ key: Buffer | undefined; previous: Buffer | undefined }>;
  demoSeedCount: number;
  /** Scaling: perMinute 0 = off; syncMs: how often each API process shares its counts. */
  rateLimit: Readonly<{ perMinute: number; syncMs: number }>;
  /** The API key cache of each API process: maxAgeMs 0 = every request looks its key up. */
  keyCache: Readonly<{ maxAgeMs: number; maxEntries: number }>;
  /** The record version cache (304s from memory); off with read replicas. */
  etagCache: Readonly<{ maxAgeMs: number; maxEntries: number }>;
  /** Scaling: read replicas (none: every read on the primary), skipped beyond maxLagMs, checked every checkMs. */
  readReplicas: Readonly<{ urls: readonly string[]; maxLagMs: number; checkMs: number }>;
  // Change feed and retention.
  feed: Readonly<{ maxWaiters: number; maxWaitersPerKey: number }>;
  retention: Readonly<{ eventDays: number; deliveryAttemptDays: number }>;
}>;
