// npm run bench:memory: does the API's memory come back to a plateau after load, or keep growing?
// Three rounds of the same load (a mixed run of real requests at 64 connections, then 10,000
// fuzzed ones), then a pause, then RSS and heap read from the service's own /metrics. Target: the
// RSS of rounds 2 and 3 within 10% of round 1 (round 1 warms caches and the JIT). With BENCH_URL
// and BENCH_KEY it measures a service already running; otherwise it starts one (a child process
// on a scratch PostgreSQL, as bench/read-path does). Exits 0 either way: it is a report.
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { createApiKey, SCOPES } from '../../src/auth/api-keys.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { connectDatabase } from '../../src/app/database.ts';
import { startBenchPostgres } from '../read-path/database.ts';
import { intFromEnv } from '../read-path/options.ts';
import { startServerProcess } from '../read-path/servers.ts';
import { fuzz } from './fuzz.ts';

const log = (line: string) => process.stdout.write(`${line}\n`);
const options = {
  rounds: intFromEnv('BENCH_ROUNDS', 3, 2),
  mixedS: intFromEnv('BENCH_DURATION_S', 20, 1),
  fuzzRequests: intFromEnv('BENCH_FUZZ_REQUESTS', 10_000, 0),
  connections: intFromEnv('BENCH_CONNECTIONS', 64, 1),
  records: intFromEnv('BENCH_RECORDS', 2000, 200),
  settleS: intFromEnv('BENCH_SETTLE_S', 5, 0),
};
const MiB = 1024 * 1024;

type Target = { url: string; key: string; collectGarbage: () => Promise<boolean>; stop: () => Promise<void> };

async function startOwnService(): Promise<Target> {
  const pg = await startBenchPostgres(process.env.DATABASE_URL || undefined);
  const db = await connectDatabase(pg.url, { poolMax: 4, connectTimeoutMs: 5000, migrate: true });
  await seedCatalog(db.pool, { count: options.records, seed: 7 });
  const key = (await createApiKey(db.orm.em.fork(), { name: 'bench-memory', scopes: [...SCOPES] })).key;
  await db.close();
  const service = await startServerProcess('service', pg.url, { exposeGc: true });
  log(`service ${service.url} (pid ${service.pid}) on ${pg.description}, ${options.records} records`);
  return {
    url: service.url,
    key,
    collectGarbage: service.collectGarbage,
    stop: async () => (await service.stop(), await pg.stop()),
  };
}

type Memory = { rss: number; heapUsed: number; heapTotal: number; series: number };

/** RSS, heap and the number of HTTP duration series, from the service's own /metrics. */
async function readMemory(url: string): Promise<Memory> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name: string) => {
    const total = [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce(
      (sum, m) => sum + Number(m[1]),
      0,
    );
    if (!text.includes(name)) throw new Error(`${name} missing from /metrics`);
    return total;
  };
  const series = text.split('\n').filter((l) => l.startsWith('lods_http_request_duration_seconds_count{')).length;
  return {
    rss: value('lods_process_resident_memory_bytes'),
    heapUsed: value('lods_nodejs_heap_size_used_bytes'),
    heapTotal: value('lods_nodejs_heap_size_total_bytes'),
    series,
  };
}

async function mixed(target: Target, ids: string[]): Promise<{ requests: number; non2xx: number }> {
  const auth = { authorization: `Bearer ${target.key}` };
  const graphqlBody = JSON.stringify({
    query:
      '{ learningOpportunities(limit: 20) { results { id title sessions { id startsAt } } pagination { totalCount } } }',
  });
  const result = await autocannon({
    url: target.url,
    connections: options.connections,
    duration: options.mixedS,
    requests: [
      {
        setupRequest: (req) => {
          const r = Math.random();
          if (r < 0.5)
            return {
              ...req,
              method: 'GET',
              path: `/v1/learning-opportunities/${ids[Math.floor(Math.random() * ids.length)]}`,
              headers: auth,
            };
          if (r < 0.75)
            return {
              ...req,
              method: 'GET',
              path: `/v1/learning-opportunities?limit=100&offset=${Math.floor(Math.random() * options.records)}`,
              headers: auth,
            };
          if (r < 0.9)
            return {
              ...req,
              method: 'POST',
              path: '/graphql',
              headers: { ...auth, 'content-type': 'application/json' },
              body: graphqlBody,
            };
          if (r < 0.98) return { ...req, method: 'GET', path: '/healthz', headers: {} };
          return { ...req, method: 'GET', path: '/metrics', headers: {} };
        },
      },
    ],
  });
  return { requests: result['2xx'] + result.non2xx, non2xx: result.non2xx };
}

function line(label: string, m: Memory, extra = ''): string {
  return `${label.padEnd(10)} RSS ${(m.rss / MiB).toFixed(0).padStart(5)} MiB  heap used ${(m.heapUsed / MiB).toFixed(0).padStart(4)} MiB  heap total ${(m.heapTotal / MiB).toFixed(0).padStart(4)} MiB  duration series ${String(m.series).padStart(4)}${extra}`;
}

async function main(): Promise<void> {
  log(
    `memory benchmark: ${options.rounds} rounds of ${options.mixedS} s mixed load at ${options.connections} connections + ${options.fuzzRequests} fuzzed requests, ${options.settleS} s pause before each reading`,
  );
  const target: Target = process.env.BENCH_URL
    ? {
        url: process.env.BENCH_URL.replace(/\/$/, ''),
        key: process.env.BENCH_KEY ?? '',
        collectGarbage: async () => false,
        stop: async () => {},
      }
    : await startOwnService();
  if (!target.key) throw new Error('BENCH_KEY (a key with catalog:read and graphql:read) is required with BENCH_URL');
  try {
    const page = (await (
      await fetch(`${target.url}/v1/learning-opportunities?limit=100`, {
        headers: { authorization: `Bearer ${target.key}` },
      })
    ).json()) as { results: { id: string }[] };
    const ids = page.results.map((r) => r.id);
    if (ids.length === 0) throw new Error('the service has no published records to read');
    const readings: Memory[] = [];
    log(line('start', await readMemory(target.url)));
    for (let round = 1; round <= options.rounds; round++) {
      const load = await mixed(target, ids);
      const fuzzed = await fuzz(target.url, target.key, options.fuzzRequests, options.connections);
      await sleep(options.settleS * 1000);
      const before = await readMemory(target.url);
      // Then a full collection where the service is ours: what remains is what it retains.
      const collected = await target.collectGarbage();
      const memory = collected ? await readMemory(target.url) : before;
      readings.push(memory);
      const gc = collected ? `, heap used ${(before.heapUsed / MiB).toFixed(0)} MiB before a full GC` : '';
      log(
        line(
          `round ${round}`,
          memory,
          `  (${load.requests} mixed, ${fuzzed.sent} fuzzed in ${(fuzzed.ms / 1000).toFixed(1)} s${gc})`,
        ),
      );
    }
    const first = readings[0]!.rss;
    const worst = Math.max(...readings.slice(1).map((m) => Math.abs(m.rss - first) / first));
    log(
      `${worst <= 0.1 ? 'PASS' : 'FAIL'}  RSS after rounds 2..${options.rounds} within ${(worst * 100).toFixed(1)}% of round 1 (target 10%)`,
    );
  } finally {
    await target.stop();
  }
}

await main();
