// The settings as the environment gives them: one zod schema, every value checked (ranges, formats),
// every refusal naming the setting and the value it got. kernel/config.ts turns the result into Config.
import { z } from 'zod';
import { PAGE_MAX_BYTES_DEFAULT } from './paging.ts';

/**
 * An integer setting within [min, max], in decimal digits (surrounding spaces ignored); a refusal reads
 * `must be an integer min-max, got "abc"`. Number() alone took " " as 0 (PORT=" " bound a random port)
 * and "1e3", "0x10" and "5.0" as integers.
 */
const int = (min: number, max: number) =>
  z.string().transform((raw, ctx) => {
    const value = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
    if (Number.isSafeInteger(value) && value >= min && value <= max) return value;
    ctx.issues.push({
      code: 'custom',
      input: raw,
      message: `must be an integer ${min}-${max}, got ${JSON.stringify(raw)}`,
    });
    return z.NEVER;
  });
/** One of a few words; a refusal names them and the value given. */
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, {
    error: (issue) => `must be one of ${values.join(', ')}, got ${JSON.stringify(issue.input)}`,
  });
/** An origin as browsers send it in `Origin`: http(s), host, optional port, nothing else. */
const isOrigin = (o: string): boolean => {
  try {
    const url = new URL(o);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === o;
  } catch {
    return false;
  }
};
/** Whether every %-escape of `text` is valid percent-encoding of UTF-8. */
const decodes = (text: string): boolean => {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
};
const bool = oneOf(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

export const settingsSchema = z.object({
  DATABASE_URL: z
    .url({
      protocol: /^postgres(ql)?$/,
      // Never the value itself: it may hold a password.
      error: (issue) =>
        /^postgres(ql)?:\/\//i.test(String(issue.input))
          ? 'is not a valid URL: postgresql://user:password@host:5432/database (a host is required; @ : / % in the user or password written %40 %3A %2F %25)'
          : 'must be a postgres:// or postgresql:// URL',
    })
    // A host in the URL, or in ?host= (a Unix socket's directory, as libpq takes it).
    .refine((u) => !URL.canParse(u) || new URL(u).hostname !== '' || new URL(u).searchParams.get('host'), {
      error: 'must name a host: postgresql://user:password@host:5432/database (or ?host= a socket directory)',
    })
    // The driver decodes the user, password and database name: a bare "%" stopped the start with a stack.
    .refine((u) => decodes(u), {
      error: 'holds a "%" that is not percent-encoding of UTF-8 text: write a "%" in the password or name as %25',
    })
    .optional(),
  DATA_DIR: z.string().min(1).default('.data'),
  PORT: int(0, 65535).default(3000),
  HOST: z.string().min(1).optional(),
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
  // A word out of these (`prod`, `Production`) ran in development mode: no key required, the demo key made.
  NODE_ENV: oneOf(['production', 'development', 'test']).default('development'),
  ROLE: oneOf(['all', 'api', 'worker']).default('all'),
  DB_POOL_MAX: int(1, 200).default(10),
  DB_MAX_CONNECTIONS_PER_KEY: int(1, 200).optional(), // default: half of DB_POOL_MAX, at least 1
  DB_CONNECT_TIMEOUT_MS: int(100, 60_000).default(3000),
  REQUEST_TIMEOUT_MS: int(1000, 600_000).default(30_000),
  // 500 records (the bulk mutations' most) of the largest generated content, 6,476 B each, are
  // 3.09 MiB of variables (docs/graphql.md, "Admission and limits"); 4 MiB leaves room for larger real records.
  GRAPHQL_MAX_BODY_BYTES: int(1024, 50 * 1024 * 1024).default(4 * 1024 * 1024),
  // The bytes of one REST list page or change-feed page (docs/decisions.md, "Sizes of records and pages").
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
  HTTP_HEADERS_TIMEOUT_MS: int(100, 600_000).optional(), // default: 10000, or REQUEST_TIMEOUT_MS when that is shorter
  HTTP_MAX_CONNECTIONS: int(1, 1_000_000).default(1024),
  DB_STATEMENT_TIMEOUT_MS: int(0, 3_600_000).default(30_000),
  // The client-side bound of the API's reads (/v1, GraphQL catalog and feed queries, key look-ups): a frozen database fails them within seconds (issue 18).
  DB_READ_TIMEOUT_MS: int(0, 3_600_000).default(5000),
  // Admission of the query class (search, filters, facets, another sort): kernel/query-gate.ts.
  QUERY_MAX_CONCURRENT_PER_KEY: int(1, 1000).default(2),
  QUERY_MAX_CONCURRENT: int(1, 200).optional(), // default: half of DB_POOL_MAX, at least 1
  QUERY_QUEUE_WAIT_MS: int(0, 60_000).default(1000),
  GRAPHQL_MAX_COST: int(1, 10_000_000).default(50_000),
  GRAPHQL_MAX_DEPTH: int(1, 100).default(8),
  GRAPHQL_MAX_ALIASES: int(0, 10_000).default(15),
  GRAPHQL_MAX_RESPONSE_BYTES: int(1024, 256 * 1024 * 1024).default(16 * 1024 * 1024),
  GRAPHQL_MAX_TOKENS: int(100, 1_000_000).default(5000),
  GRAPHQL_BODY_BYTES_PER_SECOND: int(1024, 2 ** 31 - 1).default(4 * 1024 * 1024),
  GRAPHQL_BODY_BURST_BYTES: int(1024, 2 ** 31 - 1).default(16 * 1024 * 1024),
  // The bytes answered per key (/v1 and GraphQL): http/response-pacing.ts; 0 = off.
  RESPONSE_BYTES_PER_SECOND: int(0, 2 ** 31 - 1).default(8 * 1024 * 1024),
  RESPONSE_BURST_BYTES: int(1024, 2 ** 31 - 1).default(16 * 1024 * 1024),
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
        z.string().refine(isOrigin, {
          error: (issue) =>
            `${String(issue.input)} is not an exact origin such as https://app.example.com (scheme, host, optional port; no path, no *)`,
        }),
      ),
    )
    .optional(),
  GRAPHQL_MAX_DIRECTIVES: int(0, 10_000).default(50),
  // Start-up and shutdown (tunables that were literals in main.ts, service.ts and health.ts).
  HTTP_KEEP_ALIVE_TIMEOUT_MS: int(1, 600_000).default(5000), // Node reads 0 as never: idle connections held for ever
  READINESS_TIMEOUT_MS: int(100, 60_000).default(1000),
  SHUTDOWN_HTTP_GRACE_MS: int(0, 600_000).default(25_000),
  SHUTDOWN_QUEUE_TIMEOUT_MS: int(0, 600_000).default(10_000),
  // The consumer-side `walk` command (it talks HTTP only): stand-ins for --base-url and --key.
  LODS_BASE_URL: z.string().optional(),
  LODS_API_KEY: z.string().optional(),
  // Scaling (docs/contract.md, "Rate limits"): per-key rate limits of /v1, shared by the API processes in the database.
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
    .pipe(z.array(z.url({ protocol: /^postgres(ql)?$/, error: 'must be postgres:// or postgresql:// URLs' })))
    .optional(),
  READ_MAX_LAG_MS: int(0, 3_600_000).default(5000),
  READ_CHECK_MS: int(100, 60_000).default(1000),
  // Change feed (GET /v1/events) and retention of events and delivery attempts (0 days = keep forever).
  // Default: half of HTTP_MAX_CONNECTIONS (long polls hold their connections); below it in any case.
  FEED_MAX_WAITERS: int(0, 100_000).optional(),
  // Of those, how many one API key may hold (default: a tenth of FEED_MAX_WAITERS, at least 1).
  FEED_MAX_WAITERS_PER_KEY: int(1, 100_000).optional(),
  EVENT_RETENTION_DAYS: int(0, 36_500).default(30),
  DELIVERY_ATTEMPT_RETENTION_DAYS: int(0, 36_500).default(30),
});

/** The settings once parsed: numbers, booleans and lists instead of strings. */
export type Settings = z.output<typeof settingsSchema>;
