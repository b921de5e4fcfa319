// Single mutations as the content platform sends them: an upsert of an existing published record
// (new content, same id) over real GraphQL, on a catalog of BENCH_SINGLE_CATALOG records (default
// 20,000). One writer's latency (p50, p99), then WRITERS concurrent writers' throughput and latency,
// and their throughput against one writer's (targets: one writer p50 <= 5 ms; 8 writers >= 4x one
// writer with p99 <= 50 ms).
import { generateContent, seededRandom } from '../../src/catalog/generate.ts';
import type { Api } from '../../src/app/service.ts';
import { percentile } from '../delivery/stats.ts';

export const SINGLE_WRITERS = 8;
export const SINGLE_P50_MS = 5;
export const SINGLE_P99_MS = 50;
export const SINGLE_SCALING = 4;

const UPSERT = 'mutation ($input: LearningOpportunityInput!) { upsertLearningOpportunity(input: $input) { id } }';

export type WriterRun = { writers: number; perSecond: number; p50: number; p99: number };

/** `count` upserts of existing records (ids from `ids`, content new) by `writers` concurrent writers. */
export async function upsertRun(
  api: Api,
  key: string,
  ids: string[],
  writers: number,
  count: number,
  seed: number,
): Promise<WriterRun> {
  const rnd = seededRandom(seed);
  const inputs = Array.from({ length: count }, (_, i) => ({
    ...(JSON.parse(JSON.stringify(generateContent(rnd, new Date()))) as object),
    id: ids[(seed * 7919 + i) % ids.length],
  }));
  const ms: number[] = [];
  let next = 0;
  const started = performance.now();
  const writer = async () => {
    for (let i = next++; i < inputs.length; i = next++) {
      const t = performance.now();
      const res = await fetch(`${api.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query: UPSERT, variables: { input: inputs[i] } }),
      });
      const body = (await res.json()) as { errors?: unknown[] };
      if (res.status !== 200 || body.errors) throw new Error(`upsert failed: ${res.status} ${JSON.stringify(body)}`);
      ms.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: writers }, writer));
  const seconds = (performance.now() - started) / 1000;
  const sorted = ms.sort((a, b) => a - b);
  return { writers, perSecond: count / seconds, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

export const describeRun = (r: WriterRun) =>
  `${r.writers} writer(s): ${r.perSecond.toFixed(0)} upserts/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms`;
