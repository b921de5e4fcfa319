// npm run bench:sync: the change feed and incremental sync (issue 8). Each figure is printed beside
// its comparison from the same run:
//   1. write cost: a mutation with the feed's column, index and trigger vs without them
//   2. sync: incremental (1,000 changes since the last sync) vs the full first run, 100,000 records
//   3. long-poll wake-up, commit to response, p50/p99 (beside a plain feed read)
//   4. a feed page (limit 1000) at the start, middle and end of a 1,000,000-event feed, and its plan
//   5. long polls behind an idle transaction: the service database's commit rate with 40 waiting
//   6. 320 long polls woken by 2 commits a second: another key's plain reads, p50/p99, beside none
// BENCH_RECORDS, BENCH_EVENTS, BENCH_CHANGES, BENCH_WAKE_ROUNDS and BENCH_WOKEN_WAITERS shrink it while developing;
// BENCH_ONLY=woken-together runs item 6 alone;
// DATABASE_URL uses a scratch database on that server instead of an embedded cluster.
import { cpus, loadavg } from 'node:os';
import { createApiKey } from '../../src/auth/api-keys.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { createCatalogClient, sync, type SyncBatch, type SyncState } from '@lods/client';
import { loadConfig } from '../../src/kernel/config.ts';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import { createLogger } from '../../src/kernel/logger.ts';
import { type Api, startApi } from '../../src/app/service.ts';
import { startBenchPostgres } from '../read-path/database.ts';
import { insertEvents, measurePages } from './feed-pages.ts';
import { measureHeldHorizon } from './held-horizon.ts';
import { measureWakeLatency } from './wake-latency.ts';
import { measureWriteCost, mutate } from './write-cost.ts';
import { measureWokenTogether } from './woken-together.ts';

const log = (line: string) => process.stdout.write(`${line}\n`);
const env = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const RECORDS = env('BENCH_RECORDS', 100_000);
const EVENTS = env('BENCH_EVENTS', 1_000_000);
const CHANGES = env('BENCH_CHANGES', 1000);
const WAKE_ROUNDS = env('BENCH_WAKE_ROUNDS', 200);
const WOKEN = env('BENCH_WOKEN_WAITERS', 320);
const ms = (x: number) => `${x.toFixed(x < 10 ? 2 : 0)} ms`;
const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');

/** A sync whose `apply` keeps the copy in memory: the protocol's cost, not a disk's. */
async function timedSync(api: Api, key: string, copy: Map<string, unknown>, state: SyncState | null) {
  const client = createCatalogClient({ baseUrl: api.url, apiKey: key });
  const apply = async (batch: SyncBatch) => {
    if (batch.reset) copy.clear();
    for (const c of batch.changes) {
      if (c.op === 'upsert') copy.set(c.id, c.record);
      else copy.delete(c.id);
    }
  };
  const started = performance.now();
  const result = await sync({ client, state, apply });
  return { ...result, ms: performance.now() - started };
}

/** 6: `WOKEN` long polls of 8 keys woken by 2 commits a second, beside another key's plain reads. */
async function measureWoken(api: Api, db: Database, readerKey: string) {
  log(`6. ${WOKEN} long polls (8 keys) woken by 2 commits a second, another key's plain reads: 15 s windows`);
  const pollKeys = await Promise.all(
    Array.from({ length: 8 }, async (_, i) => {
      const created = await createApiKey(db.orm.em.fork(), { name: `poll-${i}`, scopes: ['catalog:read'] });
      return created.key;
    }),
  );
  return await measureWokenTogether(api, db.pool, pollKeys, readerKey, WOKEN);
}

const wokenRow = (w: Awaited<ReturnType<typeof measureWoken>>) =>
  `| another key's plain read p50 / p99 beside ${WOKEN} long polls woken twice a second | ${ms(w.beside.p50)} / ${ms(w.beside.p99)} | ${ms(w.alone.p50)} / ${ms(w.alone.p99)} with none: p99 ${(w.beside.p99 / w.alone.p99).toFixed(1)}x | p99 <= 2x | ${verdict(w.beside.p99 <= 2 * w.alone.p99)} |`;

/** BENCH_ONLY=woken-together: item 6 alone. */
async function wokenTogether(api: Api, db: Database, key: string): Promise<void> {
  const woken = await measureWoken(api, db, key);
  log('| measure | figure | comparison | target | |');
  log('|---|---|---|---|---|');
  log(wokenRow(woken));
}

async function main(): Promise<void> {
  log(
    `sync benchmark: ${RECORDS} records, ${CHANGES} changes, ${EVENTS} feed events; ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const pg = await startBenchPostgres(process.env.DATABASE_URL || undefined);
  let db: Database | null = null;
  let api: Api | null = null;
  try {
    db = await connectDatabase(pg.url, { poolMax: 10, connectTimeoutMs: 5000, migrate: true });
    log(`database: ${pg.description}`);
    const seeded = performance.now();
    await seedCatalog(db.pool, {
      count: RECORDS,
      seed: 8,
      onProgress: ({ done, total }) => done % (total / 10) < 500 && log(`  seeded ${done}/${total}`),
    });
    await db.pool.query('vacuum analyze');
    log(`seeded ${RECORDS} records in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);
    api = await startApi(
      { ...loadConfig({ RESPONSE_BYTES_PER_SECOND: '0' }), port: 0, host: '127.0.0.1' },
      db,
      createLogger({ level: 'silent' }),
    );
    const key = (await createApiKey(db.orm.em.fork(), { name: 'bench', scopes: ['catalog:read'] })).key;
    const ids = (
      await db.pool.query<{ id: string }>(
        `select id from learning_opportunity where status = 'PUBLISHED' order by random() limit $1`,
        [CHANGES / 2],
      )
    ).rows.map((r) => r.id);

    if (process.env.BENCH_ONLY === 'woken-together') return await wokenTogether(api, db, key);
    log(
      '1. write cost: archive + publish, 8 alternating rounds of 120 mutations with and without the feed column (medians)',
    );
    const writeCost = await measureWriteCost(db.pool, api.writes, ids.slice(0, 60), 8);

    log('2. sync: the full first run, then 1,000 changes, then the incremental run');
    const copy = new Map<string, unknown>();
    const full = await timedSync(api, key, copy, null);
    await mutate(api.writes, ids); // CHANGES mutations, one event each
    const incremental = await timedSync(api, key, copy, full.state);
    if (incremental.events !== CHANGES || copy.size !== RECORDS)
      throw new Error(`incremental sync saw ${incremental.events} events, copy holds ${copy.size}`);

    log(`3. long-poll wake-up, ${WAKE_ROUNDS} rounds`);
    const wake = await measureWakeLatency(api, db.pool, key, WAKE_ROUNDS);

    log(`4. ${EVENTS} events (generate_series, 10,000 per transaction), then pages of 1000`);
    const before = Number((await db.pool.query<{ n: string }>('select count(*) as n from event')).rows[0]!.n);
    await insertEvents(db.pool, EVENTS, 10_000, log);
    const pages = await measurePages(db.pool, api.url, key, { before, count: EVENTS }, 25);

    log('5. long polls behind an idle transaction in another database: 40 waiting, 5 s windows');
    const held = await measureHeldHorizon(api, db.pool, pg.url, key, 40);

    const woken = await measureWoken(api, db, key);

    const slower = (writeCost.withFeed / writeCost.withoutFeed - 1) * 100;
    log('');
    log(
      `machine load at the end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (a shared machine: figures are noisy)`,
    );
    log('| measure | figure | comparison | target | |');
    log('|---|---|---|---|---|');
    log(
      `| mutation (archive or publish) with the feed column | ${ms(writeCost.withFeed)} | ${ms(writeCost.withoutFeed)} without (${slower >= 0 ? '+' : ''}${slower.toFixed(1)}%) | <= +5% | ${verdict(slower <= 5)} |`,
    );
    log(
      `| incremental sync, ${incremental.events} changes | ${ms(incremental.ms)} | full first run ${ms(full.ms)} (${full.walked} records): ${(full.ms / incremental.ms).toFixed(0)}x faster | >= 50x | ${verdict(full.ms / incremental.ms >= 50)} |`,
    );
    log(
      `| long-poll wake-up p50 / p99 | ${ms(wake.p50)} / ${ms(wake.p99)} | plain feed read ${ms(wake.plainRead)} | <= 30 / 100 ms | ${verdict(wake.p50 <= 30 && wake.p99 <= 100)} |`,
    );
    log(
      `| service database commits/s with 40 long polls behind an idle transaction | ${held.waitingPerSecond.toFixed(1)} | ${held.idlePerSecond.toFixed(1)} without them; all answered ${ms(held.wokenMs)} after it ends | <= +10/s | ${verdict(held.waitingPerSecond - held.idlePerSecond <= 10)} |`,
    );
    log(wokenRow(woken));
    log(
      `| feed page of 1000 at the end of ${EVENTS} events | ${ms(pages.last)} | start ${ms(pages.first)}, middle ${ms(pages.middle)}: last/first ${(pages.last / pages.first).toFixed(2)}x | <= 1.2x, no scan | ${verdict(pages.last / pages.first <= 1.2 && !pages.scans)} |`,
    );
    log('');
    log('plan of the page statement at the end of the feed (EXPLAIN ANALYZE):');
    for (const line of pages.plan) log(`  ${line}`);
  } finally {
    await api?.close();
    await db?.close();
    await pg.stop();
  }
}

await main();
