// What long polls cost the database while the horizon is held back: one idle transaction that took
// a transaction id (BEGIN; select pg_current_xact_id()) in another database of the same server, then
// `waiters` requests waiting at the head with a pending event. The service database's commit rate
// (pg_stat_database.xact_commit, flushed by each backend about once a second, so measured over
// seconds) with the waiters, beside the same window without them. Issue 18 found 2 -> 203 per second
// with 40 waiters when each re-read on its own timer; the shared re-check (feed/feed-waiters.ts)
// makes it a fixed rate per process.
import pg from 'pg';
import type { Pool } from 'pg';
import { insertRawEvent } from '../../test/feed/raw-events.ts';
import type { Api } from '../../src/app/service.ts';
import { databaseUrl } from '../../test/support/scratch-postgres.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function measureHeldHorizon(
  api: Api,
  pool: Pool,
  url: string,
  key: string,
  waiters: number,
  windowMs = 5000,
): Promise<{ idlePerSecond: number; waitingPerSecond: number; wokenMs: number }> {
  const database = new URL(url).pathname.slice(1);
  const other = databaseUrl(url, 'postgres');
  const holder = new pg.Client({ connectionString: other });
  const stats = new pg.Client({ connectionString: other });
  await holder.connect();
  await stats.connect();
  const commits = async () =>
    Number(
      (
        await stats.query<{ n: string }>('select xact_commit::text as n from pg_stat_database where datname = $1', [
          database,
        ])
      ).rows[0]!.n,
    );
  const rate = async () => {
    const before = await commits();
    const began = performance.now();
    await sleep(windowMs);
    return ((await commits()) - before) / ((performance.now() - began) / 1000);
  };
  const headers = { authorization: `Bearer ${key}` };
  try {
    const { cursor } = (await (await fetch(`${api.url}/v1/events/head`, { headers })).json()) as { cursor: string };
    await holder.query('begin');
    await holder.query('select pg_current_xact_id()');
    await sleep(1000);
    const idlePerSecond = await rate();
    const waiting = Array.from({ length: waiters }, () =>
      fetch(`${api.url}/v1/events?after=${cursor}&wait=30`, { headers }).then((res) => res.text()),
    );
    while (api.feed.waiters.waiting() < waiters) await sleep(5);
    // An event commits (NOTIFY): every request re-reads once and finds it pending behind the holder.
    await insertRawEvent(pool);
    await sleep(1000);
    const waitingPerSecond = await rate();
    const ended = performance.now();
    await holder.query('commit');
    await Promise.all(waiting);
    return { idlePerSecond, waitingPerSecond, wokenMs: performance.now() - ended };
  } finally {
    await holder.end();
    await stats.end();
  }
}
