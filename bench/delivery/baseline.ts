// The bare baseline: the same event bodies, signed exactly as the worker signs them and POSTed to the
// same receiver over a keep-alive agent at the same concurrency, with no database or queue in the
// way. Each body is released at the moment its change committed in the service run (same offsets
// from the start), so that its latency is comparable; releasing all at once gives the ceiling.
import http from 'node:http';
import { deliveryHeaders } from '@lods/receiver-kit';

export type BaselineBody = { eventId: string; type: string; body: Buffer; releaseAtMs: number };

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends every body; returns when all have been answered. Failures are counted, not retried. */
export async function runBaseline(options: {
  url: string;
  secret: string | null;
  bodies: readonly BaselineBody[];
  concurrency: number;
  timeoutMs: number;
}): Promise<{ failed: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency, keepAliveMsecs: 1000 });
  const queue = [...options.bodies].sort((a, b) => a.releaseAtMs - b.releaseAtMs);
  const target = new URL(options.url);
  let next = 0;
  let failed = 0;

  const post = (item: BaselineBody) =>
    new Promise<void>((resolve) => {
      const headers = deliveryHeaders({
        body: item.body,
        eventId: item.eventId,
        eventType: item.type,
        secret: options.secret,
        timestamp: Date.now(),
      });
      const req = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          agent,
          headers: { ...headers, 'content-length': String(item.body.length) },
          timeout: options.timeoutMs,
        },
        (res) => {
          if (res.statusCode === undefined || res.statusCode < 200 || res.statusCode > 299) failed++;
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end(item.body);
    });

  const lane = async () => {
    while (next < queue.length) {
      const item = queue[next++]!;
      const wait = item.releaseAtMs - now();
      if (wait > 0) await sleep(wait);
      await post(item);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, lane));
  agent.destroy();
  return { failed };
}
