// npm run bench:writes: the content platform's write path over real GraphQL. Records/s for single
// mutations (upsert + publish per record) from 8 concurrent writers against the bulk mutations
// (upsertLearningOpportunities + publishLearningOpportunities, 500 per call), and what the
// statement-level triggers (catalog_count, list_bucket) add to the bulk load; beside them `seed` (the
// set-based loader: no events, historical timestamps, one statement per 1000 records). A report:
// exits 0 either way, non-zero only when the benchmark itself could not run. BENCH_WRITE_RECORDS
// (default 4000).
import { cpus, loadavg } from 'node:os';
import { createApiKey } from '../../src/auth/api-keys.ts';
import { generateContent, seededRandom } from '../../src/catalog/generate.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { loadConfig } from '../../src/config.ts';
import { connectDatabase, type Database } from '../../src/database.ts';
import { createLogger } from '../../src/logger.ts';
import { type Api, startApi } from '../../src/service.ts';
import { startBenchPostgres } from '../read-path/database.ts';

const log = (line: string) => process.stdout.write(`${line}\n`);
const config = loadConfig({});
const RECORDS = Number(process.env.BENCH_WRITE_RECORDS ?? 4000);
const WRITERS = 8;
const BATCH = 500;

let seed = 1;
const inputs = (n: number) => {
  const rnd = seededRandom(seed++);
  return Array.from({ length: n }, () => JSON.parse(JSON.stringify(generateContent(rnd, new Date()))) as { id: string });
};

async function gql(api: Api, key: string, query: string, variables: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${api.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ query, variables }) });
  const body = (await res.json()) as { errors?: unknown[] };
  if (res.status !== 200 || body.errors) throw new Error(`mutation failed: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
}

const UPSERT = 'mutation ($input: LearningOpportunityInput!) { upsertLearningOpportunity(input: $input) { id } }';
const PUBLISH = 'mutation ($id: ID!) { publishLearningOpportunity(id: $id) { id } }';
const UPSERT_MANY = 'mutation ($inputs: [LearningOpportunityInput!]!) { upsertLearningOpportunities(inputs: $inputs) { id } }';
const PUBLISH_MANY = 'mutation ($ids: [ID!]!) { publishLearningOpportunities(ids: $ids) { id } }';

async function timed(label: string, records: number, work: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await work();
  const perSecond = records / ((performance.now() - started) / 1000);
  log(`  ${label}: ${records} records in ${((performance.now() - started) / 1000).toFixed(1)} s, ${perSecond.toFixed(0)} records/s`);
  return perSecond;
}

async function singles(api: Api, key: string, records: { id: string }[]): Promise<void> {
  let next = 0;
  const writer = async () => {
    for (let i = next++; i < records.length; i = next++) {
      await gql(api, key, UPSERT, { input: records[i] });
      await gql(api, key, PUBLISH, { id: records[i]!.id });
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, writer));
}

async function bulk(api: Api, key: string, records: { id: string }[]): Promise<void> {
  for (let i = 0; i < records.length; i += BATCH) {
    const batch = records.slice(i, i + BATCH);
    await gql(api, key, UPSERT_MANY, { inputs: batch });
    await gql(api, key, PUBLISH_MANY, { ids: batch.map((r) => r.id) });
  }
}

async function main(): Promise<void> {
  log(`write-path benchmark: ${RECORDS} records per run (upsert + publish each), ${WRITERS} concurrent writers for single mutations, ${BATCH} per bulk call`);
  log(`machine: ${cpus().length} cores, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}, node ${process.version}`);
  const pg = await startBenchPostgres(process.env.DATABASE_URL || undefined);
  let db: Database | null = null;
  let api: Api | null = null;
  try {
    db = await connectDatabase(pg.url, { poolMax: 10, connectTimeoutMs: 5000, migrate: true });
    api = await startApi(
      { ...config, port: 0, host: '127.0.0.1', http: { ...config.http, requestTimeoutMs: 120_000, graphqlMaxBodyBytes: 50 * 1024 * 1024 }, rateLimit: { perMinute: 0, syncMs: 1000 } },
      db,
      createLogger({ level: 'silent' }),
    );
    const key = (await createApiKey(db.orm.em.fork(), { name: 'bench', scopes: ['catalog:write'] })).key;
    await bulk(api, key, inputs(BATCH)); // warm-up: plans, JIT

    const single = await timed(`single mutations, ${WRITERS} writers`, RECORDS, () => singles(api!, key, inputs(RECORDS)));
    const many = await timed('bulk mutations', RECORDS, () => bulk(api!, key, inputs(RECORDS)));
    // A seed of its own (new ids): published records without events, through seed's own path.
    const seeded = await timed('seed (set-based, no events)', RECORDS, async () => {
      await seedCatalog(db!.pool, { count: RECORDS, seed: 20_261_128 });
    });
    // The same bulk load without the statement-level triggers (counts left wrong: a scratch database).
    await db.pool.query('alter table learning_opportunity disable trigger user');
    const bare = await timed('bulk mutations, triggers off', RECORDS, () => bulk(api!, key, inputs(RECORDS)));
    await db.pool.query('alter table learning_opportunity enable trigger user');

    log('');
    log(`machine load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (figures from a shared machine are noisy)`);
    log(`bulk vs single (8 writers): ${many.toFixed(0)} vs ${single.toFixed(0)} records/s = ${(many / single).toFixed(1)}x`);
    log(`seed vs bulk mutations: ${seeded.toFixed(0)} vs ${many.toFixed(0)} records/s = ${(seeded / many).toFixed(1)}x (seed: no events, no GraphQL, already published)`);
    log(`triggers (catalog_count, list_bucket) on the bulk load: ${many.toFixed(0)} vs ${bare.toFixed(0)} records/s without them = ${((bare / many - 1) * 100).toFixed(0)}% more time`);
  } finally {
    await api?.close();
    await db?.close();
    await pg.stop();
  }
}

await main();
