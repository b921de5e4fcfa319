// Long-poll wake-up latency: a request waits (wait=30) at the head; a transaction inserts an event
// and commits; the time from sending COMMIT to the response's arrival, per round.
import type { Pool } from 'pg';
import { renderEventBody } from '../../src/events/event-body.ts';
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
      const id = crypto.randomUUID();
      const resourceId = crypto.randomUUID();
      const at = new Date();
      await client.query('insert into event (id, type, resource_id, occurred_at, body) values ($1, $2, $3, $4, $5)', [
        id,
        'LEARNING_OPPORTUNITY_DELETED',
        resourceId,
        at,
        renderEventBody({
          id,
          type: 'LEARNING_OPPORTUNITY_DELETED',
          occurredAt: at,
          resourceId,
          version: 1,
          doc: null,
        }),
      ]);
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
