// Starts the real API (express + Apollo) on an ephemeral loopback port over the suite's database.
import { createApiKey, type Scope, SCOPES } from '../../src/auth/api-keys.ts';
import { type Config, defaultWaitersPerKey, loadConfig } from '../../src/kernel/config.ts';
import type { Database } from '../../src/app/database.ts';
import type { EventFanOut } from '../../src/events/record-change.ts';
import { createLogger, type Logger } from '../../src/kernel/logger.ts';
import { type Api, type ReceiverManagement, startApi } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';

export const silentLogger = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/** The settings of startApi as the service would read them from an empty environment. */
export const DEFAULT_CONFIG = loadConfig({});

export type TestApiOptions = {
  db?: Database;
  fanOut?: EventFanOut | null;
  http?: Partial<Config['http']>;
  graphql?: Partial<Config['graphql']>;
  receivers?: ReceiverManagement | null;
  logger?: Logger;
  rateLimit?: Config['rateLimit'];
  keyCache?: Config['keyCache'];
  etagCache?: Config['etagCache'];
  feedMaxWaiters?: number;
  /** DB_READ_TIMEOUT_MS (default: the service's). */
  readTimeoutMs?: number;
  /** DB_MAX_CONNECTIONS_PER_KEY (default: the service's). */
  maxConnectionsPerKey?: number;
  /** QUERY_MAX_CONCURRENT_PER_KEY, QUERY_MAX_CONCURRENT, QUERY_QUEUE_WAIT_MS (default: the service's). */
  query?: Partial<Config['query']>;
  /** Default: a tenth of feedMaxWaiters, at least 1 (as FEED_MAX_WAITERS_PER_KEY). */
  feedMaxWaitersPerKey?: number;
};

export async function startTestApi(options: TestApiOptions = {}): Promise<Api> {
  return await startApi(
    {
      port: 0,
      host: '127.0.0.1',
      http: { ...DEFAULT_CONFIG.http, requestTimeoutMs: 10_000, ...options.http },
      graphql: { ...DEFAULT_CONFIG.graphql, ...options.graphql },
      rateLimit: options.rateLimit ?? DEFAULT_CONFIG.rateLimit,
      keyCache: options.keyCache ?? DEFAULT_CONFIG.keyCache,
      etagCache: options.etagCache ?? DEFAULT_CONFIG.etagCache,
      feed: feedConfig(options),
      db: {
        ...DEFAULT_CONFIG.db,
        readTimeoutMs: options.readTimeoutMs ?? DEFAULT_CONFIG.db.readTimeoutMs,
        maxConnectionsPerKey: options.maxConnectionsPerKey ?? DEFAULT_CONFIG.db.maxConnectionsPerKey,
      },
      query: { ...DEFAULT_CONFIG.query, ...options.query },
    },
    options.db ?? testDb(),
    options.logger ?? silentLogger,
    options.fanOut ?? null,
    options.receivers ?? null,
  );
}

function feedConfig(options: TestApiOptions): Config['feed'] {
  const maxWaiters = options.feedMaxWaiters ?? DEFAULT_CONFIG.feed.maxWaiters;
  return { maxWaiters, maxWaitersPerKey: options.feedMaxWaitersPerKey ?? defaultWaitersPerKey(maxWaiters) };
}

/** A fresh API key with the given scopes (all of them by default). */
export async function createTestKey(
  scopes: readonly Scope[] = SCOPES,
  db: Database = testDb(),
  rateLimit: number | null = null,
): Promise<string> {
  return (await createApiKey(db.orm.em.fork(), { name: 'test', scopes: [...scopes], rateLimit })).key;
}

/** The API of a describe block and its keys, filled in by the before hook of useTestApi. */
export type TestApi<K extends string = 'key'> = { api: Api } & Record<K, string>;

/**
 * The usual set-up of a describe block: registers a before hook that starts the test API
 * (startTestApi(options)) and creates its keys in the suite's database (testDb()), and an after hook
 * that closes it. Returns the object those hooks fill in: read `api` and the keys in tests and in
 * later hooks (registered after this call, they run after it). `scopes`: one key, `key`, with these
 * scopes (all of them by default); or named keys with theirs (`{ writer: ['catalog:write'], reader:
 * ['catalog:read'] }` gives `writer` and `reader`; `{}` no key).
 */
export function useTestApi(scopes?: readonly Scope[], options?: TestApiOptions): TestApi;
export function useTestApi<K extends string>(keys: Record<K, readonly Scope[]>, options?: TestApiOptions): TestApi<K>;
export function useTestApi(
  scopes: readonly Scope[] | Record<string, readonly Scope[]> = SCOPES,
  options: TestApiOptions = {},
): Record<string, unknown> {
  const keys: Record<string, readonly Scope[]> = isScopeList(scopes) ? { key: scopes } : scopes;
  const served: { api?: Api; [key: string]: unknown } = {};
  before(async () => {
    served.api = await startTestApi(options);
    for (const [name, keyScopes] of Object.entries(keys)) served[name] = await createTestKey(keyScopes);
  });
  after(async () => {
    await served.api?.close();
  });
  return served;
}

const isScopeList = (scopes: readonly Scope[] | Record<string, readonly Scope[]>): scopes is readonly Scope[] =>
  Array.isArray(scopes);

/**
 * Repeats `request` until it answers 401, for at most `withinMs`; returns the milliseconds that took.
 * A revocation reaches each API process's key cache by NOTIFY when it commits (auth/key-cache.ts):
 * within milliseconds, not in the same instant (up to half a second measured on a loaded 2-core
 * machine). `withinMs` is half the cache's age bound (KEY_CACHE_MAX_AGE_MS, 10 s), so only the
 * notification can make this pass.
 */
export async function refusedWithin(request: () => Promise<{ status: number }>, withinMs = 5000): Promise<number> {
  const started = performance.now();
  for (;;) {
    const { status } = await request();
    const elapsed = performance.now() - started;
    if (status === 401) return elapsed;
    if (status !== 200 && status !== 304)
      throw new Error(`expected 200 until the revocation arrived, then 401; got ${status}`);
    if (elapsed > withinMs)
      throw new Error(`the revoked key still works ${Math.round(elapsed)} ms after its revocation`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export type GraphQLResponse<T = Record<string, unknown>> = {
  status: number;
  headers: Headers;
  body: {
    data?: T | null;
    errors?: { message: string; extensions?: { code?: string; invalidParams?: { name: string; reason: string }[] } }[];
  };
};

export async function graphql<T = Record<string, unknown>>(
  api: Api,
  key: string | null,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<GraphQLResponse<T>> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  const res = await fetch(`${api.url}/graphql`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as GraphQLResponse<T>['body'] };
}

export async function getJson(
  api: Api,
  path: string,
  key: string | null,
  init: RequestInit = {},
): Promise<{ status: number; headers: Headers; body: unknown; text: string }> {
  const headers = new Headers(init.headers);
  if (key) headers.set('authorization', `Bearer ${key}`);
  const res = await fetch(`${api.url}${path}`, { ...init, headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: parseOrNull(text), text };
}

function parseOrNull(text: string): unknown {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}
