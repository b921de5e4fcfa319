// Another key's reads, as the "beside" benchmarks measure them: one GET after the other with a pause
// between, for a window; their p50 and p99 (ms). A status other than 200 ends the run.
import { percentile } from '../delivery/stats.ts';

export type Latency = { p50: number; p99: number };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function pacedReads(
  url: string,
  key: string,
  pace: { everyMs: number; windowMs: number },
): Promise<Latency> {
  const headers = { authorization: `Bearer ${key}` };
  const times: number[] = [];
  const until = performance.now() + pace.windowMs;
  while (performance.now() < until) {
    const began = performance.now();
    const res = await fetch(url, { headers });
    await res.text();
    if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
    times.push(performance.now() - began);
    await sleep(pace.everyMs);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}
