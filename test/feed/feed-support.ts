// Reading the change feed over real HTTP in tests.
import { testDb } from '../hooks.ts';
import { feedSettled } from '../support/feed-horizon.ts';
import type { Api } from '../../src/app/service.ts';
import { createTestKey, getJson, startTestApi } from '../support/api.ts';

export type FeedEvent = {
  id: string;
  type: string;
  occurredAt: string;
  resource: { type: string; id: string };
  data: Record<string, unknown> | null;
};
export type FeedResponse = {
  results: FeedEvent[];
  pagination: { limit: number; after: string | null; next: string; hasMore: boolean };
};

/**
 * An API for a feed test file and a key with catalog:read (the scope of /v1/events). The key's own
 * rate limit is far above the default 6,000 a minute: a tight poller (commit-order.test.ts) reaches
 * that within a test on a fast machine, and what these tests check is the feed, not the limit
 * (test/scaling/rate-limit.test.ts).
 */
export async function startFeedApi(options?: Parameters<typeof startTestApi>[0]): Promise<{ api: Api; key: string }> {
  const api = await startTestApi(options);
  return { api, key: await createTestKey(['catalog:read'], testDb(), 1_000_000) };
}

/** The feed's head cursor once every committed event is readable (a head behind them would answer a long poll at once). */
export async function head(api: Api, key: string): Promise<string> {
  await feedSettled(testDb().pool);
  const res = await getJson(api, '/v1/events/head', key);
  if (res.status !== 200) throw new Error(`head: ${res.status} ${res.text}`);
  return (res.body as { cursor: string }).cursor;
}

export async function feed(
  api: Api,
  key: string,
  query: Record<string, string | number>,
): Promise<FeedResponse & { text: string }> {
  const params = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]));
  const res = await getJson(api, `/v1/events?${params}`, key);
  if (res.status !== 200) throw new Error(`feed: ${res.status} ${res.text}`);
  return { ...(res.body as FeedResponse), text: res.text };
}

/**
 * Long-polls from `after` until at least `count` events have been read; returns them and the cursor
 * after them. Transaction ids and the horizon are per cluster, not per database: with the suite's
 * test files running in parallel on one server, another file's open transaction can hold events of
 * this one back for a moment (as any long transaction does in production, see docs/consumers.md).
 */
export async function collect(
  api: Api,
  key: string,
  after: string,
  count: number,
  timeoutMs = 15_000,
): Promise<{ events: FeedEvent[]; next: string }> {
  const deadline = Date.now() + timeoutMs;
  const events: FeedEvent[] = [];
  while (events.length < count) {
    if (Date.now() > deadline) throw new Error(`read ${events.length} of ${count} events within ${timeoutMs} ms`);
    const page = await feed(api, key, { after, limit: 1000, wait: 2 });
    events.push(...page.results);
    after = page.pagination.next;
  }
  return { events, next: after };
}

/** Follows `next` from `after` until hasMore is false; every event readable now, in order. */
export async function follow(
  api: Api,
  key: string,
  after: string,
  limit = 1000,
): Promise<{ events: FeedEvent[]; next: string }> {
  const events: FeedEvent[] = [];
  for (;;) {
    const page = await feed(api, key, { after, limit });
    events.push(...page.results);
    after = page.pagination.next;
    if (!page.pagination.hasMore) return { events, next: after };
  }
}

/** Resolves once `check()` holds (polled every few ms), or fails after `timeoutMs`. */
export async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
