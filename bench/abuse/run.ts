// npm run bench:abuse (issue 18 item 4): another key's /v1 latency while one catalog:write key sends
// 1 MiB GraphQL documents back to back on two connections, with the per-key pace of GraphQL bodies
// at its defaults (graphql/body-pacing.ts) and, as the comparison of the same run, without it
// (GRAPHQL_BODY_BYTES_PER_SECOND and GRAPHQL_BODY_BURST_BYTES at their maximum: the code before the
// pace). Each round, on each side: a fresh API process; GET of one record by a reader key, one
// request after the other, for BENCH_SECONDS unloaded, then for BENCH_SECONDS with the abuser
// running (after a 0.5 s start). Target: the reader's loaded p99 within 2x of its unloaded p99.
// BENCH_ROUNDS (3) rounds, sides alternating; DATABASE_URL uses a scratch database on that server.
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpus, loadavg } from 'node:os';
import { connectDatabase } from '../../src/app/database.ts';
import { createApiKey } from '../../src/auth/api-keys.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { startBenchPostgres } from '../read-path/database.ts';

const log = (line: string) => process.stdout.write(`${line}\n`);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const MAX = String(2 ** 31 - 1);
const SIDES = { paced: {}, unpaced: { GRAPHQL_BODY_BYTES_PER_SECOND: MAX, GRAPHQL_BODY_BURST_BYTES: MAX } };
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * q) - 1]!;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

async function startServer(databaseUrl: string, env: Record<string, string>) {
  const child = fork(new URL('./server.ts', import.meta.url).pathname, {
    execArgv: process.execArgv,
    env: { ...process.env, ...env, BENCH_DATABASE_URL: databaseUrl },
  });
  const [message] = (await once(child, 'message')) as [{ url: string }];
  return { url: message.url, child };
}

async function stopChild(child: ChildProcess, how: () => void) {
  const exited = once(child, 'exit');
  how();
  await exited;
}

async function readLatencies(url: string, key: string, seconds: number): Promise<number[]> {
  const samples: number[] = [];
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    const started = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`reader got ${res.status}`);
    samples.push(performance.now() - started);
  }
  return samples;
}

async function round(
  databaseUrl: string,
  side: keyof typeof SIDES,
  keys: { reader: string; writer: string },
  path: string,
) {
  const server = await startServer(databaseUrl, SIDES[side]);
  try {
    await readLatencies(server.url + path, keys.reader, 0.5);
    const unloaded = await readLatencies(server.url + path, keys.reader, SECONDS);
    const abuser = spawn(
      process.execPath,
      [...process.execArgv, new URL('../../test/support/graphql-abuser.ts', import.meta.url).pathname],
      {
        env: { ...process.env, URL: `${server.url}/graphql`, KEY: keys.writer },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let output = '';
    abuser.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    while (!output.startsWith('go\n')) await new Promise((r) => setTimeout(r, 20));
    let loaded: number[];
    try {
      await new Promise((r) => setTimeout(r, 500));
      loaded = await readLatencies(server.url + path, keys.reader, SECONDS);
    } finally {
      await stopChild(abuser, () => abuser.kill());
    }
    const [u99, l99] = [quantile(unloaded, 0.99), quantile(loaded, 0.99)];
    log(
      `  ${side.padEnd(8)} unloaded p50/p99 ${quantile(unloaded, 0.5).toFixed(1)}/${u99.toFixed(1)} ms` +
        ` | abused p50/p99 ${quantile(loaded, 0.5).toFixed(1)}/${l99.toFixed(1)} ms | p99 ratio ${(l99 / u99).toFixed(2)}x` +
        ` | ${output.length - 3} documents answered | load ${load()}`,
    );
    return l99 / u99;
  } finally {
    await stopChild(server.child, () => server.child.send('stop'));
  }
}

async function main() {
  log(`abuse benchmark: ${ROUNDS} rounds of ${SECONDS} s per side; ${cpus().length} cores, load ${load()}`);
  const pg = await startBenchPostgres(process.env.DATABASE_URL || undefined);
  try {
    const db = await connectDatabase(pg.url, { poolMax: 4, connectTimeoutMs: 5000, migrate: true });
    await seedCatalog(db.pool, { count: 100, seed: 3 });
    const { rows } = await db.pool.query<{ id: string }>(
      "select id from learning_opportunity where status = 'PUBLISHED' limit 1",
    );
    const em = db.orm.em.fork();
    const keys = {
      reader: (await createApiKey(em, { name: 'reader', scopes: ['catalog:read'], rateLimit: 2 ** 31 - 1 })).key,
      writer: (await createApiKey(em, { name: 'writer', scopes: ['catalog:write'] })).key,
    };
    await db.close();
    const path = `/v1/learning-opportunities/${rows[0]!.id}`;
    const ratios: Record<string, number[]> = { paced: [], unpaced: [] };
    for (let r = 1; r <= ROUNDS; r++) {
      log(`round ${r}`);
      for (const side of r % 2 ? (['unpaced', 'paced'] as const) : (['paced', 'unpaced'] as const))
        ratios[side]!.push(await round(pg.url, side, keys, path));
    }
    const median = (xs: number[]) => quantile(xs, 0.5);
    log(
      `median p99 ratio (abused / unloaded): paced ${median(ratios.paced!).toFixed(2)}x, ` +
        `unpaced (baseline) ${median(ratios.unpaced!).toFixed(2)}x; target <= 2x: ${median(ratios.paced!) <= 2 ? 'PASS' : 'FAIL'}`,
    );
  } finally {
    await pg.stop();
  }
}

await main();
