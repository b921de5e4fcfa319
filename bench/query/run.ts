// npm run bench:query: the filtered lists of /v1 (docs/contract.md, "Filters") on a catalog of BENCH_QUERY_RECORDS
// (default 1,000,000) published records with the seed generator's realistic spreads. For each query
// of the fixed set (queries.ts): p50 and p99 of the first page with its exact totalCount, one client
// after another (BENCH_QUERY_SAMPLES requests), then req/s at BENCH_CONNECTIONS (default 32) for
// BENCH_DURATION_S; and whether the plan reads the catalog or sessions sequentially. Targets: p50 <=
// 25 ms, p99 <= 100 ms. A report: exits 0 whatever the verdicts. See bench/README.md.
// BENCH_QUERY_DATABASE_URL: an existing database to use as is (migrated, seeded up to the count
// first when short), so a second run skips the seed; else a scratch one (DATABASE_URL's server or
// embedded), dropped after the run. Then the row "GraphQL page vs REST page" (graphql-page.ts) at
// BENCH_GRAPHQL_CONNECTIONS (default 16); BENCH_QUERY_ROWS=graphql runs that row alone.
import { cpus, loadavg } from 'node:os';
import { createApiKey } from '../../src/auth/api-keys.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { foldSearchAll } from '../../src/catalog/count-folder.ts';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import { startBenchPostgres } from '../read-path/database.ts';
import { createClient, median } from '../read-path/http-client.ts';
import { runLoad } from '../read-path/load.ts';
import { intFromEnv } from '../read-path/options.ts';
import { startServerProcess, type ServerUnderTest } from '../read-path/servers.ts';
import { compareGraphqlPage, GRAPHQL_PAGE_TARGET } from './graphql-page.ts';
import { sequentialScans } from './plans.ts';
import { benchQueries } from './queries.ts';
import { percentile } from '../delivery/stats.ts';

const log = (line: string) => process.stdout.write(`${line}\n`);
const RECORDS = intFromEnv('BENCH_QUERY_RECORDS', 1_000_000, 200);
const SAMPLES = intFromEnv('BENCH_QUERY_SAMPLES', 100, 5);
const DURATION_S = intFromEnv('BENCH_DURATION_S', 5, 1);
const CONNECTIONS = intFromEnv('BENCH_CONNECTIONS', 32, 1);
const GRAPHQL_CONNECTIONS = intFromEnv('BENCH_GRAPHQL_CONNECTIONS', 16, 1);
const ONLY_GRAPHQL = process.env.BENCH_QUERY_ROWS === 'graphql';
const P50_MS = 25;
const P99_MS = 100;

async function seedUpTo(db: Database, now: Date): Promise<void> {
  const { rows } = await db.pool.query<{ n: string }>(`select n from catalog_count where status = 'PUBLISHED'`);
  const present = Number(rows[0]!.n);
  if (present >= RECORDS) {
    log(`catalog: ${present} published records present, not seeded`);
    return;
  }
  const started = performance.now();
  let shown = 0;
  await seedCatalog(db.pool, {
    count: RECORDS,
    seed: 22,
    now,
    onProgress: ({ done, total }) => {
      if (done - shown >= total / 10 || done === total) {
        log(`  seed: ${done}/${total} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
        shown = done;
      }
    },
  });
  await db.pool.query('vacuum analyze');
  log(`seeded ${RECORDS} records in ${((performance.now() - started) / 1000).toFixed(0)} s (+ vacuum analyze)`);
}

// The records written since the last fold into the search bitmaps, as the service's folder leaves
// them (after a seed of the whole catalog, one rebuild), then the statistics of their tables.
async function foldSearchBitmaps(db: Database): Promise<void> {
  const started = performance.now();
  const { rows } = await db.pool.query<{ n: string }>('select count(*) as n from search_dirty');
  if (rows[0]!.n === '0') return;
  await foldSearchAll(db.pool);
  await db.pool.query(
    'vacuum analyze search_dirty, search_bitmap, search_lexeme, facet_value, facet_folded, facet_pair',
  );
  log(`search bitmaps: ${rows[0]!.n} records folded in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

async function main(): Promise<void> {
  log(
    `query benchmark: ${RECORDS} records, ${SAMPLES} sequential first pages per query, ${CONNECTIONS} connections for ${DURATION_S} s`,
  );
  log(
    `machine: ${cpus().length} cores, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}, node ${process.version}`,
  );
  const given = process.env.BENCH_QUERY_DATABASE_URL;
  const pg = given
    ? { url: given, description: 'BENCH_QUERY_DATABASE_URL (kept)', stop: async () => {} }
    : await startBenchPostgres(process.env.DATABASE_URL || undefined);
  let db: Database | null = null;
  let server: ServerUnderTest | null = null;
  try {
    log(`database: ${pg.description}`);
    db = await connectDatabase(pg.url, { poolMax: 4, connectTimeoutMs: 5000, migrate: true });
    // The seed's `now`: stored in the database, so the queries of a kept database stay relative to it.
    await db.pool.query(`create table if not exists bench_query_seed (now timestamptz not null)`);
    const kept = (await db.pool.query<{ now: Date | string }>('select now from bench_query_seed')).rows[0]?.now;
    const now = kept ? new Date(kept) : new Date();
    if (!kept) await db.pool.query('insert into bench_query_seed (now) values ($1)', [now]);
    await seedUpTo(db, now);
    await foldSearchBitmaps(db);
    const key = (await createApiKey(db.orm.em.fork(), { name: 'bench', scopes: ['catalog:read', 'graphql:read'] })).key;
    const headers = { authorization: `Bearer ${key}` };
    server = await startServerProcess('service', pg.url);
    const client = createClient(server.url, headers);
    const rows: string[][] = [];
    // BENCH_QUERY_MATCH: only the queries whose name matches this regular expression (a rerun of some rows).
    const only = process.env.BENCH_QUERY_MATCH ? new RegExp(process.env.BENCH_QUERY_MATCH) : null;
    for (const { name, query } of ONLY_GRAPHQL ? [] : benchQueries(now).filter((q) => !only || only.test(q.name))) {
      const path = `/v1/learning-opportunities${query ? `?${query}` : ''}`;
      for (let i = 0; i < 3; i++) await client.get(path);
      const ms: number[] = [];
      let body: Buffer | null = null;
      for (let i = 0; i < SAMPLES; i++) {
        const res = await client.get(path);
        if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.body.toString()}`);
        ms.push(res.ms);
        body = res.body;
      }
      const total = (JSON.parse(body!.toString()) as { pagination: { totalCount: number } }).pagination.totalCount;
      const load = await runLoad({
        url: server.url,
        headers,
        nextPath: () => path,
        connections: CONNECTIONS,
        durationS: DURATION_S,
      });
      const scans = await sequentialScans(db, query);
      const [p50, p99] = [
        median(ms),
        percentile(
          [...ms].sort((a, b) => a - b),
          99,
        ),
      ];
      const verdict = p50 <= P50_MS && p99 <= P99_MS && load.failures === 0 && scans.length === 0 ? 'PASS' : 'FAIL';
      rows.push([
        name,
        String(total),
        p50.toFixed(1),
        p99.toFixed(1),
        load.rps.toFixed(0),
        scans.join(',') || '-',
        verdict,
      ]);
      log(`  ${rows.at(-1)!.join(' | ')}`);
    }
    client.close();
    log('');
    log('| query | totalCount | p50 ms | p99 ms | req/s at ' + CONNECTIONS + ' | seq scans | verdict |');
    log('|---|---:|---:|---:|---:|---|---|');
    for (const row of rows) log(`| ${row.join(' | ')} |`);
    log(
      `targets: p50 <= ${P50_MS} ms, p99 <= ${P99_MS} ms at one client, no sequential scan of the catalog or sessions`,
    );
    log('');
    log(
      `GraphQL page vs REST page: 100 records with every field, ${GRAPHQL_CONNECTIONS} connections, ${DURATION_S} s per run, 3 ABBA rounds`,
    );
    const published = Number(
      (await db.pool.query<{ n: string }>(`select n from catalog_count where status = 'PUBLISHED'`)).rows[0]!.n,
    );
    const g = await compareGraphqlPage(
      server,
      headers,
      published,
      { connections: GRAPHQL_CONNECTIONS, durationS: DURATION_S, rounds: 3 },
      log,
    );
    const cpu = (us: number | null) => (us === null ? '' : `, server CPU ${us.toFixed(0)} µs/req`);
    log(
      `| GraphQL page vs REST page | REST ${g.rest.toFixed(0)} req/s${cpu(g.restCpuUs)} | GraphQL ${g.graphql.toFixed(0)} req/s${cpu(g.graphqlCpuUs)} | ratio ${g.ratio.toFixed(2)} | ${g.ratio >= GRAPHQL_PAGE_TARGET && g.failures === 0 ? 'PASS' : 'FAIL'} (target >= ${GRAPHQL_PAGE_TARGET}x) |`,
    );
  } finally {
    await server?.stop();
    await db?.close();
    await pg.stop();
  }
}

if (import.meta.main) await main();
