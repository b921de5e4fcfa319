// Long-poll wake-up latency: a request waits (wait=30) at the head; a transaction inserts an event
// and commits; the time from sending COMMIT to the response's arrival, per round.
import type { Pool } from 'pg';
import { insertRawEvent } from '../../test/feed/raw-events.ts';
import type { Api } from '../../src/app/service.ts';
import { percentile } from '../delivery/stats.ts';

export async function measureWakeLatency(
  api: Api,
  pool: Pool,
  key: string,
  rounds: number,
): Promise<{ p50: number; p99: number; plainRead: number }> {
  const headers = { authorization: `Bearer ${key}` };
  const latencies: number[] = [];
  const plain: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const { cursor } = (await (await fetch(`${api.url}/v1/events/head`, { headers })).json()) as { cursor: string };
    const readStarted = performance.now();
    await (await fetch(`${api.url}/v1/events?after=${cursor}`, { headers })).text();
    plain.push(performance.now() - readStarted);
    const waiting = fetch(`${api.url}/v1/events?after=${cursor}&wait=30`, { headers }).then(async (res) => {
      await res.text();
      return performance.now();
    });
    while (api.feed.waiters.waiting() === 0) await new Promise((resolve) => setImmediate(resolve));
    const client = await pool.connect();
    let committing: number;
    try {
      await client.query('begin');
      await insertRawEvent(client);
      committing = performance.now();
      await client.query('commit');
    } finally {
      client.release();
    }
    latencies.push((await waiting) - committing);
  }
  const sorted = latencies.sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    plainRead: percentile(
      plain.sort((a, b) => a - b),
      50,
    ),
  };
}
