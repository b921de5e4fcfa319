// The only reader of process.env: validated once at boot, typed, frozen.
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { PAGE_MAX_BYTES_DEFAULT } from '../catalog/read-model.ts';

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
/** An origin as browsers send it in `Origin`: http(s), host, optional port, nothing else. */
const isOrigin = (o: string): boolean => {
  try {
    const url = new URL(o);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === o;
  } catch {
    return false;
  }
};
const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

const schema = z.object({
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  DATA_DIR: z.string().min(1).default('.data'),
  PORT: int(0, 65535).default(3000),
  HOST: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
  NODE_ENV: z.string().default('development'),
  ROLE: z.enum(['all', 'api', 'worker']).default('all'),
  DB_POOL_MAX: int(1, 200).default(10),
  DB_CONNECT_TIMEOUT_MS: int(100, 60_000).default(3000),
  REQUEST_TIMEOUT_MS: int(1000, 600_000).default(30_000),
  // 500 records (the bulk mutations' most) of the largest generated content, 6,476 B each, are
  // 3.09 MiB of variables (README, "Internal GraphQL"); 4 MiB leaves room for larger real records.
  GRAPHQL_MAX_BODY_BYTES: int(1024, 50 * 1024 * 1024).default(4 * 1024 * 1024),
  // The bytes of one REST list page or change-feed page (README, "Sizes of records and pages").
  PAGE_MAX_BYTES: int(1024 * 1024, 512 * 1024 * 1024).default(PAGE_MAX_BYTES_DEFAULT),
  WEBHOOK_MAX_ATTEMPTS: int(1, 100).default(8),
  WEBHOOK_TIMEOUT_MS: int(100, 120_000).default(10_000),
  WEBHOOK_BACKOFF_BASE_MS: int(0, 86_400_000).default(5000),
  WEBHOOK_BACKOFF_MAX_MS: int(0, 86_400_000).default(3_600_000),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: bool.optional(),
  WEBHOOK_CONCURRENCY_PER_RECEIVER: int(1, 100).default(4),
  WORKER_CONCURRENCY: int(1, 1000).default(64),
  DEMO_SEED_COUNT: int(0, 1_000_000).default(200),
  // Webhook worker and queue tunables (delivery worker; defaults suit one to a few workers).
  WEBHOOK_LOST_RETRY_LIMIT: int(0, 100).default(10),
  WEBHOOK_QUEUE_RETENTION_DAYS: int(1, 3650).default(14),
  WEBHOOK_DEAD_LETTER_RETENTION_DAYS: int(1, 36_500).default(3650),
  WEBHOOK_GROUP_FACTOR: int(1, 1000).default(64),
  WEBHOOK_PREFETCH_BUDGET_MS: int(0, 60_000).default(1000),
  WEBHOOK_FETCH_BATCH: int(1, 1000).default(200),
  WEBHOOK_POLL_INTERVAL_MS: int(10, 60_000).default(1000),
  PGBOSS_POOL_MAX: int(1, 100).default(4),
  PGBOSS_MAINTENANCE_INTERVAL_SECONDS: int(1, 86_400).default(300),
  // Receiver management: signing secrets at rest and automatic disabling (issue 10).
  SECRET_ENCRYPTION_KEY: z.string().optional(),
  SECRET_ENCRYPTION_KEY_PREVIOUS: z.string().optional(),
  WEBHOOK_DISABLE_AFTER_HOURS: int(0, 100_000).default(120),
  // HTTP edges and GraphQL cost (issue 7: slow clients, GraphQL cost, statement timeout).
  HTTP_HEADERS_TIMEOUT_MS: int(100, 600_000).default(10_000),
  HTTP_MAX_CONNECTIONS: int(1, 1_000_000).default(1024),
  DB_STATEMENT_TIMEOUT_MS: int(0, 3_600_000).default(30_000),
  // The client-side bound of the API's reads (/v1, GraphQL catalog and feed queries, key look-ups): a frozen database fails them within seconds (issue 18).
  DB_READ_TIMEOUT_MS: int(0, 3_600_000).default(5000),
  GRAPHQL_MAX_COST: int(1, 10_000_000).default(50_000),
  GRAPHQL_MAX_DEPTH: int(1, 100).default(8),
  GRAPHQL_MAX_ALIASES: int(0, 10_000).default(15),
  GRAPHQL_MAX_RESPONSE_BYTES: int(1024, 256 * 1024 * 1024).default(16 * 1024 * 1024),
  GRAPHQL_MAX_TOKENS: int(100, 1_000_000).default(5000),
  GRAPHQL_BODY_BYTES_PER_SECOND: int(1024, 2 ** 31 - 1).default(1024 * 1024),
  GRAPHQL_BODY_BURST_BYTES: int(1024, 2 ** 31 - 1).default(16 * 1024 * 1024),
  // Browsers' cross-origin reads of /v1 (http/v1/cors.ts): exact origins, comma-separated; unset = off.
  CORS_ORIGINS: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean),
    )
    .pipe(
      z.array(
        z
          .string()
          .refine(
            isOrigin,
            'must be exact origins such as https://app.example.com (scheme, host, optional port; no path, no *)',
          ),
      ),
    )
    .optional(),
  GRAPHQL_MAX_DIRECTIVES: int(0, 10_000).default(50),
  // Start-up and shutdown (tunables that were literals in main.ts, service.ts and health.ts).
  HTTP_KEEP_ALIVE_TIMEOUT_MS: int(0, 600_000).default(5000),
  READINESS_TIMEOUT_MS: int(100, 60_000).default(1000),
  SHUTDOWN_QUEUE_TIMEOUT_MS: int(0, 600_000).default(10_000),
  // The consumer-side `walk` command (it talks HTTP only): stand-ins for --base-url and --key.
  LODS_BASE_URL: z.string().optional(),
  LODS_API_KEY: z.string().optional(),
  // Scaling (CONTRACT.md 9): per-key rate limits of /v1, shared by the API processes through the database.
  RATE_LIMIT_PER_MINUTE: int(0, 2 ** 31 - 1).default(6000),
  RATE_LIMIT_SYNC_MS: int(50, 60_000).default(1000),
  // The API key cache (auth/key-cache.ts): invalidated by NOTIFY; the age bounds an unnoticed outage. 0 = no cache.
  KEY_CACHE_MAX_AGE_MS: int(0, 3_600_000).default(10_000),
  KEY_CACHE_MAX_ENTRIES: int(1, 10_000_000).default(100_000),
  // The record version cache (catalog/version-cache.ts), for 304s without a round trip; likewise. 0 = no cache.
  ETAG_CACHE_MAX_AGE_MS: int(0, 3_600_000).default(10_000),
  ETAG_CACHE_MAX_ENTRIES: int(1, 10_000_000).default(100_000),
  // ... and read replicas: /v1 reads and GraphQL's catalog and feed queries on streaming replicas when healthy.
  DATABASE_READ_URL: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((u) => u.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.url({ protocol: /^postgres(ql)?$/ })))
    .optional(),
  READ_MAX_LAG_MS: int(0, 3_600_000).default(5000),
  READ_CHECK_MS: int(100, 60_000).default(1000),
  // Change feed (GET /v1/events) and retention of events and delivery attempts (0 days = keep forever).
  FEED_MAX_WAITERS: int(0, 100_000).default(1000),
  // Of those, how many one API key may hold (default: a tenth of FEED_MAX_WAITERS, at least 1).
  FEED_MAX_WAITERS_PER_KEY: int(1, 100_000).optional(),
  EVENT_RETENTION_DAYS: int(0, 36_500).default(30),
  DELIVERY_ATTEMPT_RETENTION_DAYS: int(0, 36_500).default(30),
});

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

type LogLevel = NonNullable<z.infer<typeof schema>['LOG_LEVEL']>;

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
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  const e = parsed.data;
  const production = e.NODE_ENV === 'production';
  if (e.WEBHOOK_BACKOFF_MAX_MS < e.WEBHOOK_BACKOFF_BASE_MS) {
    throw new ConfigError(['WEBHOOK_BACKOFF_MAX_MS: must be >= WEBHOOK_BACKOFF_BASE_MS']);
  }
  if (e.HTTP_HEADERS_TIMEOUT_MS > e.REQUEST_TIMEOUT_MS) {
    throw new ConfigError([
      'HTTP_HEADERS_TIMEOUT_MS: must be <= REQUEST_TIMEOUT_MS (the headers are part of the request)',
    ]);
  }
  const keyProblems: string[] = [];
  const key = secretKey('SECRET_ENCRYPTION_KEY', e.SECRET_ENCRYPTION_KEY, keyProblems);
  const previous = secretKey('SECRET_ENCRYPTION_KEY_PREVIOUS', e.SECRET_ENCRYPTION_KEY_PREVIOUS, keyProblems);
  if (production && e.SECRET_ENCRYPTION_KEY === undefined) keyProblems.push(MISSING_SECRET_KEY);
  if (keyProblems.length) throw new ConfigError(keyProblems);
  return Object.freeze({
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR,
    port: e.PORT,
    host: e.HOST ?? (env.container || existsDockerEnv() ? '0.0.0.0' : '127.0.0.1'),
    logLevel: e.LOG_LEVEL ?? 'info',
    cliLogLevel: e.LOG_LEVEL ?? 'warn',
    production,
    role: e.ROLE,
    db: Object.freeze({
      poolMax: e.DB_POOL_MAX,
      connectTimeoutMs: e.DB_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS,
      readTimeoutMs: e.DB_READ_TIMEOUT_MS,
    }),
    http: Object.freeze({
      requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: e.HTTP_MAX_CONNECTIONS,
      readinessTimeoutMs: e.READINESS_TIMEOUT_MS,
      graphqlMaxBodyBytes: e.GRAPHQL_MAX_BODY_BYTES,
      pageMaxBytes: e.PAGE_MAX_BYTES,
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
    shutdownQueueTimeoutMs: e.SHUTDOWN_QUEUE_TIMEOUT_MS,
    walk: Object.freeze({ baseUrl: e.LODS_BASE_URL, apiKey: e.LODS_API_KEY }),
    webhooks: Object.freeze({
      maxAttempts: e.WEBHOOK_MAX_ATTEMPTS,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      backoffBaseMs: e.WEBHOOK_BACKOFF_BASE_MS,
      backoffMaxMs: e.WEBHOOK_BACKOFF_MAX_MS,
      allowPrivateTargets: e.WEBHOOK_ALLOW_PRIVATE_TARGETS ?? !production,
      concurrencyPerReceiver: e.WEBHOOK_CONCURRENCY_PER_RECEIVER,
      workerConcurrency: e.WORKER_CONCURRENCY,
      lostRetryLimit: e.WEBHOOK_LOST_RETRY_LIMIT,
      queueRetentionDays: e.WEBHOOK_QUEUE_RETENTION_DAYS,
      deadLetterRetentionDays: e.WEBHOOK_DEAD_LETTER_RETENTION_DAYS,
      groupFactor: e.WEBHOOK_GROUP_FACTOR,
      prefetchBudgetMs: e.WEBHOOK_PREFETCH_BUDGET_MS,
      fetchBatch: e.WEBHOOK_FETCH_BATCH,
      pollIntervalMs: e.WEBHOOK_POLL_INTERVAL_MS,
      bossPoolMax: e.PGBOSS_POOL_MAX,
      bossMaintenanceIntervalSeconds: e.PGBOSS_MAINTENANCE_INTERVAL_SECONDS,
      disableAfterHours: e.WEBHOOK_DISABLE_AFTER_HOURS,
    }),
    secretKeys: Object.freeze({ key, previous }),
    demoSeedCount: e.DEMO_SEED_COUNT,
    rateLimit: Object.freeze({ perMinute: e.RATE_LIMIT_PER_MINUTE, syncMs: e.RATE_LIMIT_SYNC_MS }),
    keyCache: Object.freeze({ maxAgeMs: e.KEY_CACHE_MAX_AGE_MS, maxEntries: e.KEY_CACHE_MAX_ENTRIES }),
    etagCache: Object.freeze({ maxAgeMs: e.ETAG_CACHE_MAX_AGE_MS, maxEntries: e.ETAG_CACHE_MAX_ENTRIES }),
    readReplicas: Object.freeze({
      urls: Object.freeze(e.DATABASE_READ_URL ?? []),
      maxLagMs: e.READ_MAX_LAG_MS,
      checkMs: e.READ_CHECK_MS,
    }),
    // Change feed and retention.
    feed: Object.freeze({
      maxWaiters: e.FEED_MAX_WAITERS,
      maxWaitersPerKey: e.FEED_MAX_WAITERS_PER_KEY ?? defaultWaitersPerKey(e.FEED_MAX_WAITERS),
    }),
    retention: Object.freeze({
      eventDays: e.EVENT_RETENTION_DAYS,
      deliveryAttemptDays: e.DELIVERY_ATTEMPT_RETENTION_DAYS,
    }),
  });
}

function existsDockerEnv(): boolean {
  return existsSync('/.dockerenv');
}
