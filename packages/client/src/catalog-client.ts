// A typed client for the read-only /v1 REST API.
import { type Expect, getJson, type RequestSettings, type RetryInfo } from './request.ts';
import { listValue } from './list-values.ts';
import type {
  EventPage,
  LearningOpportunity,
  LearningOpportunityListParams,
  LearningOpportunityPage,
} from './types.ts';

export type CatalogClientOptions = {
  /** Base address of the service, without `/v1` (a path prefix such as `https://host/lods` is kept). */
  baseUrl: string | URL;
  /** An API key with the `catalog:read` scope; sent as `Authorization: Bearer <key>`. */
  apiKey: string;
  /** Defaults to the global fetch. */
  fetch?: typeof globalThis.fetch;
  /** Retries after the first attempt for network errors, timeouts, 429 and 5xx (default 4). */
  retries?: number;
  /** Per-attempt timeout, body included (default 30 000 ms). */
  timeoutMs?: number;
  /** First backoff delay; doubles per retry, with jitter (default 500 ms). */
  minRetryDelayMs?: number;
  /**
   * Upper bound of any single wait (default 60 000 ms). A 429 or 5xx whose Retry-After is longer is
   * not retried: the call fails at once with that CatalogHttpError (see its retryAfterMs). The
   * service's rate limit counts per minute, so the default waits out any 429 of its own.
   */
  maxRetryDelayMs?: number;
  userAgent?: string;
  /** Called before each retry (for logs or progress output). */
  onRetry?: (info: RetryInfo) => void;
};

export type CallOptions = { signal?: AbortSignal };

export type CatalogClient = {
  readonly baseUrl: string;
  /** `GET /v1/learning-opportunities/{id}`. A 404 (unknown, archived, deleted) throws CatalogHttpError. */
  getLearningOpportunity(id: string, options?: CallOptions): Promise<LearningOpportunity>;
  /**
   * `GET /v1/learning-opportunities?limit&offset` (service defaults: limit 20 of at most 100, offset 0),
   * with the optional filters, search, sort, fields and facets.
   */
  listLearningOpportunities(
    params?: LearningOpportunityListParams,
    options?: CallOptions,
  ): Promise<LearningOpportunityPage>;
  /**
   * `GET /v1/events?after&limit&wait&view` (service defaults: from the oldest retained event, limit 100
   * of at most 1000, wait 0 of at most 30 s; the timeout grows by the wait). A cursor older than the
   * retained window throws CatalogHttpError with status 410: start over (see sync). `view`: the feed
   * of a view (a filter such as `format=IN_PERSON&country=DE`), whose cursors serve only that view.
   */
  listEvents(
    params?: { after?: string | null; limit?: number; wait?: number; view?: string },
    options?: CallOptions,
  ): Promise<EventPage>;
  /** `GET /v1/events/head`: the cursor just after the latest committed event (of the view's feed, with `view`). */
  getEventsHead(options?: CallOptions, params?: { view?: string }): Promise<{ cursor: string }>;
};

export function createCatalogClient(options: CatalogClientOptions): CatalogClient {
  const base = parseBaseUrl(options.baseUrl);
  if (typeof options.apiKey !== 'string' || options.apiKey.trim() === '')
    throw new TypeError('createCatalogClient: apiKey is required');
  const settings: RequestSettings = {
    apiKey: options.apiKey,
    fetch: options.fetch ?? globalThis.fetch,
    retries: nonNegative('retries', options.retries ?? 4, { integer: true }),
    timeoutMs: nonNegative('timeoutMs', options.timeoutMs ?? 30_000),
    minRetryDelayMs: nonNegative('minRetryDelayMs', options.minRetryDelayMs ?? 500),
    maxRetryDelayMs: nonNegative('maxRetryDelayMs', options.maxRetryDelayMs ?? 60_000),
    userAgent: options.userAgent ?? 'lods-catalog-client/1',
    onRetry: options.onRetry,
  };
  const url = (path: string) => new URL(path, base);

  return {
    baseUrl: base.href,

    async getLearningOpportunity(id, call = {}) {
      const target = url(`v1/learning-opportunities/${encodeURIComponent(id)}`);
      return await getJson(target, RECORD, settings, call.signal);
    },

    async listLearningOpportunities(params = {}, call = {}) {
      const target = url('v1/learning-opportunities');
      for (const [name, value] of Object.entries(params) as [
        string,
        LearningOpportunityListParams[keyof LearningOpportunityListParams],
      ][]) {
        if (value === undefined) continue;
        target.searchParams.set(
          name,
          value instanceof Date ? value.toISOString() : Array.isArray(value) ? listValue(value) : String(value),
        );
      }
      return await getJson(target, PAGE, settings, call.signal);
    },

    async listEvents(params = {}, call = {}) {
      const target = url('v1/events');
      if (params.after !== undefined && params.after !== null) target.searchParams.set('after', params.after);
      if (params.limit !== undefined) target.searchParams.set('limit', String(params.limit));
      if (params.wait !== undefined) target.searchParams.set('wait', String(params.wait));
      if (params.view !== undefined) target.searchParams.set('view', params.view);
      // A long poll may rightly take its whole wait before the first byte.
      const waited = params.wait ? { ...settings, timeoutMs: settings.timeoutMs + params.wait * 1000 } : settings;
      return await getJson(target, EVENT_PAGE, waited, call.signal);
    },

    async getEventsHead(call = {}, params = {}) {
      // The other methods take their parameters first: a view given first here was silently the
      // whole feed's head, whose cursor the view's feed then refused.
      if ('view' in call) throw new TypeError('getEventsHead(call, { view }): the view goes in the second argument');
      const target = url('v1/events/head');
      if (params.view !== undefined) target.searchParams.set('view', params.view);
      return await getJson(target, HEAD, settings, call.signal);
    },
  };
}

function parseBaseUrl(value: string | URL): URL {
  let base: URL;
  try {
    base = new URL(String(value));
  } catch {
    throw new TypeError(`createCatalogClient: baseUrl is not a URL: ${String(value)}`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:')
    throw new TypeError(`createCatalogClient: baseUrl must be http or https, got ${base.protocol}`);
  if (base.username || base.password)
    throw new TypeError('createCatalogClient: baseUrl must not carry credentials; pass apiKey');
  base.search = '';
  base.hash = '';
  // Relative resolution needs a trailing slash to keep a path prefix ("https://host/lods/").
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  return base;
}

function nonNegative(name: string, value: number, { integer = false } = {}): number {
  if (!Number.isFinite(value) || value < 0 || (integer && !Number.isInteger(value))) {
    throw new TypeError(`createCatalogClient: ${name} must be a finite ${integer ? 'integer' : 'number'} >= 0`);
  }
  return value;
}

// Enough checking to fail clearly when the base URL points at something else than the service
// (a proxy's JSON, another API); the full record shape is the service's contract, not re-validated.
function isRecordLike(value: unknown): value is LearningOpportunity {
  return (
    !!value &&
    typeof value === 'object' &&
    typeof (value as { id?: unknown }).id === 'string' &&
    typeof (value as { updatedAt?: unknown }).updatedAt === 'string'
  );
}

function isPage(value: unknown): value is LearningOpportunityPage {
  if (!value || typeof value !== 'object') return false;
  const { results, pagination } = value as { results?: unknown; pagination?: { totalCount?: unknown } };
  return (
    Array.isArray(results) &&
    results.every(isRecordLike) &&
    Number.isSafeInteger(pagination?.totalCount) &&
    (pagination!.totalCount as number) >= 0
  );
}

function isEventPage(value: unknown): value is EventPage {
  if (!value || typeof value !== 'object') return false;
  const { results, pagination } = value as { results?: unknown; pagination?: { next?: unknown; hasMore?: unknown } };
  const isEvent = (e: unknown) =>
    !!e &&
    typeof e === 'object' &&
    typeof (e as { id?: unknown }).id === 'string' &&
    typeof (e as { resource?: { id?: unknown } }).resource?.id === 'string';
  return (
    Array.isArray(results) &&
    results.every(isEvent) &&
    typeof pagination?.next === 'string' &&
    typeof pagination.hasMore === 'boolean'
  );
}

const isHead = (value: unknown): value is { cursor: string } =>
  !!value && typeof (value as { cursor?: unknown }).cursor === 'string';

const RECORD: Expect<LearningOpportunity> = { is: isRecordLike, what: 'a learning opportunity' };
const PAGE: Expect<LearningOpportunityPage> = { is: isPage, what: 'a page of learning opportunities' };
const EVENT_PAGE: Expect<EventPage> = { is: isEventPage, what: 'a page of the change feed' };
const HEAD: Expect<{ cursor: string }> = { is: isHead, what: 'the head of the change feed' };
