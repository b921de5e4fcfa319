// Long polls woken together (found from outside, 1 December): `waiters` requests following the feed
// at its head, each re-polling as soon as it is answered, while an event commits twice a second;
// another key reads a plain list page every 100 ms. Its p50 / p99 with the waiters, beside the same
// reads with none. Each commit wakes every waiter; those at one cursor share one read of the page
// (feed/shared-reads.ts), where each used to read it on the pool the plain reads use.
import type { Pool } from 'pg';
import { insertRawEvent } from '../../test/feed/raw-events.ts';
import { percentile } from '../delivery/stats.ts';
import type { Api } from '../../src/app/service.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
type Latency = { p50: number; p99: number };

async function plainReads(api: Api, key: string, windowMs: number): Promise<Latency> {
  const headers = { authorization: `Bearer ${key}` };
  const times: number[] = [];
  const until = performance.now() + windowMs;
  while (performance.now() < until) {
    const began = performance.now();
    const res = await fetch(`${api.url}/v1/learning-opportunities?limit=20`, { headers });
    await res.text();
    if (res.status !== 200) throw new Error(`plain read: ${res.status}`);
    times.push(performance.now() - began);
    await sleep(100);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

/** `pollKeys`: the waiters' keys (FEED_MAX_WAITERS_PER_KEY bounds each key's share), `readerKey` the other key's. */
export async function measureWokenTogether(
  api: Api,
  pool: Pool,
  pollKeys: string[],
  readerKey: string,
  waiters: number,
  windowMs = 15_000,
): Promise<{ alone: Latency; beside: Latency }> {
  const alone = await plainReads(api, readerKey, windowMs);
  let running = true;
  const head = async (key: string) =>
    (
      (await (await fetch(`${api.url}/v1/events/head`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
        cursor: string;
      }
    ).cursor;
  const polls = Array.from({ length: waiters }, async (_, i) => {
    const key = pollKeys[i % pollKeys.length]!;
    const headers = { authorization: `Bearer ${key}` };
    let cursor = await head(key);
    while (running) {
      const res = await fetch(`${api.url}/v1/events?after=${encodeURIComponent(cursor)}&wait=30`, { headers });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`long poll: ${res.status} ${text}`);
      cursor = (JSON.parse(text) as { pagination: { next: string } }).pagination.next;
    }
  });
  const commit = () => insertRawEvent(pool);
  const commits = (async () => {
    while (running) {
      await commit();
      await sleep(500);
    }
  })();
  try {
    while (api.feed.waiters.waiting() < waiters) await sleep(10);
    return { alone, beside: await plainReads(api, readerKey, windowMs) };
  } finally {
    running = false;
    await commits;
    await commit(); // answers every waiter, and none polls again
    await Promise.all(polls);
  }
}
