// Long polls woken together (found from outside, 1 December): `waiters` requests following the feed
// at its head, each re-polling as soon as it is answered, while an event commits twice a second;
// another key reads a plain list page every 100 ms. Its p50 / p99 with the waiters, beside the same
// reads with none. Each commit wakes every waiter; those at one cursor share one read of the page
// (feed/shared-reads.ts), where each used to read it on the pool the plain reads use.
import { fork } from 'node:child_process';
import type { Pool } from 'pg';
import { insertRawEvent } from '../../test/feed/raw-events.ts';
import { type Latency, pacedReads } from '../read-path/paced-reads.ts';
import type { Api } from '../../src/app/service.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const plainReads = (api: Api, key: string, windowMs: number) =>
  pacedReads(`${api.url}/v1/learning-opportunities?limit=20`, key, { everyMs: 100, windowMs });

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
  // The waiters run in a process of their own: in this one, their clients' work (320 responses
  // parsed, 320 requests sent) would compete with the API for its thread, which a real API never
  // shares with its clients.
  const polls = fork(new URL('./pollers.ts', import.meta.url).pathname, [
    JSON.stringify({ url: api.url, keys: pollKeys, waiters }),
  ]);
  let exited: number | null | undefined;
  const pollsEnded = new Promise<number | null>((resolve) => polls.on('exit', (code) => resolve((exited = code))));
  const stopped = new Promise((resolve) => polls.on('message', resolve));
  polls.on('error', () => {}); // a failed send: the exit says what happened
  let running = true;
  const commit = () => insertRawEvent(pool);
  const commits = (async () => {
    while (running) {
      await commit();
      await sleep(500);
    }
  })();
  let beside: Latency;
  try {
    while (api.feed.waiters.waiting() < waiters) {
      if (exited !== undefined) throw new Error(`the long polls' process exited with ${exited}`);
      await sleep(10);
    }
    beside = await plainReads(api, readerKey, windowMs);
  } finally {
    running = false;
    await commits;
    if (exited === undefined) {
      polls.send('stop');
      await Promise.race([stopped, pollsEnded]);
      await commit(); // answers every waiter, and none polls again
    }
  }
  const code = await pollsEnded;
  if (code !== 0) throw new Error(`the long polls' process exited with ${code}`);
  return { alone, beside };
}
