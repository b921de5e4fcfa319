// npm run bench: the read path of /v1 against a bare node:http + pg baseline, on a catalog seeded
// for the run. Prints a table with PASS/FAIL per target; exits 0 either way (it is a report), and
// non-zero only when the benchmark itself could not run. See bench/README.md.
import { cpus, loadavg } from 'node:os';
import type { Pool } from 'pg';
import { createApiKey, hashKey } from '../../src/auth/api-keys.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import { measureCountCost } from './count-cost.ts';
import { postmasterOf } from './cpu.ts';
import { measureDeepOffset } from './deep-offset.ts';
import { startBenchPostgres } from './database.ts';
import { createClient } from './http-client.ts';
import { compareUnderLoad } from './load.ts';
import { readOptions } from './options.ts';
import { measureScaling } from './scaling.ts';
import { buildRows, printReport } from './report.ts';
import { type ServerUnderTest, startServerProcess } from './servers.ts';
import { firstVersusLastPage, fullWalk, type WalkResult, WALK_LIMIT } from './walk.ts';

const log = (line: string) => process.stdout.write(`${line}\n`);
const options = readOptions();

async function seed(db: Database, count: number, seedValue: number, label: string): Promise<void> {
  const started = performance.now();
  let lastShown = 0;
  await seedCatalog(db.pool, {
    count,
    seed: seedValue,
    onProgress: ({ done, total }) => {
      if (process.stderr.isTTY) process.stderr.write(`\r  ${label}: ${done}/${total}`);
      else if (done === total || done - lastShown >= total / 10) {
        log(`  ${label}: ${done}/${total}`);
        lastShown = done;
      }
    },
  });
  if (process.stderr.isTTY) process.stderr.write('\n');
  await db.pool.query('vacuum analyze');
  log(`  ${label}: ${count} records in ${((performance.now() - started) / 1000).toFixed(1)} s (+ vacuum analyze)`);
}

/** The postmaster of the benchmark's database when it runs on this machine (its CPU is reported). */
async function postmasterPid(pool: Pool, url: string): Promise<number | undefined> {
  const host = new URL(url).hostname;
  if (!['localhost', '127.0.0.1', '[::1]', ''].includes(host)) return undefined;
  return (await postmasterOf(pool)) ?? undefined;
}

async function publishedIds(pool: Pool): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `select id from learning_opportunity where status = 'PUBLISHED' order by random()`,
  );
  return rows.map((r) => r.id);
}

/** Both servers must give the same bytes, or the ratio compares different work. */
async function verifySameBodies(
  service: ServerUnderTest,
  baseline: ServerUnderTest,
  headers: Record<string, string>,
  ids: string[],
  records: number,
): Promise<void> {
  const lastOffset = Math.floor((records - 1) / WALK_LIMIT) * WALK_LIMIT;
  const paths = [
    `/v1/learning-opportunities?limit=${WALK_LIMIT}&offset=0`,
    `/v1/learning-opportunities?limit=${WALK_LIMIT}&offset=${Math.floor(records / 2)}`,
    `/v1/learning-opportunities?limit=${WALK_LIMIT}&offset=${lastOffset}`,
    `/v1/learning-opportunities?limit=1&offset=${records}`,
    ...ids.slice(0, 3).map((id) => `/v1/learning-opportunities/${id}`),
  ];
  const a = createClient(service.url, headers);
  const b = createClient(baseline.url, headers);
  try {
    for (const path of paths) {
      const [x, y] = [await a.get(path), await b.get(path)];
      if (x.status !== 200 || y.status !== 200 || !x.body.equals(y.body)) {
        throw new Error(
          `service and baseline differ on ${path}: ${x.status} (${x.body.length} bytes) vs ${y.status} (${y.body.length} bytes)`,
        );
      }
    }
  } finally {
    a.close();
    b.close();
  }
  log(`  identical bodies on ${paths.length} URLs (list pages, past the end, GET one)`);
}

async function bestWalk(targets: ServerUnderTest[], headers: Record<string, string>): Promise<Map<string, WalkResult>> {
  const best = new Map<string, WalkResult>();
  for (let round = 1; round <= options.rounds; round++) {
    for (const t of targets) {
      const w = await fullWalk(t.url, t.name === 'service' ? headers : {});
      log(
        `  round ${round} ${t.name.padEnd(8)} ${w.pages} pages, ${(w.bytes / 1e6).toFixed(0)} MB in ${(w.totalMs / 1000).toFixed(2)} s`,
      );
      if (!best.has(t.name) || w.totalMs < best.get(t.name)!.totalMs) best.set(t.name, w);
    }
  }
  return best;
}

async function main(): Promise<void> {
  log(
    `read-path benchmark: ${options.records} records, ${options.connections} connections, ${options.durationS} s per run (+${options.warmupS} s warm-up), ${options.rounds} rounds (ABBA), the round with the median ratio counts`,
  );
  log(
    `machine: ${cpus().length} cores, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}, node ${process.version}`,
  );
  const pg = await startBenchPostgres(options.databaseUrl);
  const servers: ServerUnderTest[] = [];
  let db: Database | null = null;
  try {
    log(`database: ${pg.description}`);
    db = await connectDatabase(pg.url, { poolMax: 4, connectTimeoutMs: 5000, migrate: true });
    const { rows: version } = await db.pool.query<{ server_version: string }>('show server_version');
    log(`postgres ${version[0]!.server_version}, migrated`);

    const small = Math.max(100, Math.round(options.records / 10));
    log('seeding (src/catalog/seed.ts)');
    await seed(db, small, 1, 'phase 1');
    const countSmall = await measureCountCost(db.pool, 201);
    await seed(db, options.records - small, 2, 'phase 2');
    const countLarge = await measureCountCost(db.pool, 201);
    log(
      `totalCount: ${countSmall.countMs.toFixed(3)} ms at ${countSmall.records}, ${countLarge.countMs.toFixed(3)} ms at ${countLarge.records}`,
    );

    const key = (await createApiKey(db.orm.em.fork(), { name: 'bench', scopes: ['catalog:read'] })).key;
    const auth = { authorization: `Bearer ${key}` };
    servers.push(await startServerProcess('service', pg.url), await startServerProcess('baseline', pg.url));
    const [service, baseline] = servers as [ServerUnderTest, ServerUnderTest];
    const limited = await startServerProcess('service', pg.url, { name: 'service, limits on', rateLimit: true });
    const second = await startServerProcess('service', pg.url, { name: 'second service' });
    servers.push(limited, second);
    // Limits on for the limited service: this key's own limit is never reached, so every request pays the bookkeeping.
    await db.pool.query('update api_key set rate_limit = 2147483647 where key_hash = $1', [hashKey(key)]);
    log(`service ${service.url}, baseline ${baseline.url}`);

    const ids = await publishedIds(db.pool);
    await verifySameBodies(service, baseline, auth, ids, ids.length);
    const targets = [
      { name: 'baseline', url: baseline.url, pid: baseline.pid, headers: {} },
      { name: 'service', url: service.url, pid: service.pid, headers: auth },
    ] as const;
    const databasePid = await postmasterPid(db.pool, pg.url);
    log(
      databasePid === undefined
        ? 'database CPU: not measured (the server is not on this machine)'
        : `database CPU: postmaster ${databasePid} and its backends (every client of that server counts)`,
    );
    const loadOptions = {
      connections: options.connections,
      durationS: options.durationS,
      warmupS: options.warmupS,
      rounds: options.rounds,
      databasePid,
    };

    let nextId = 0;
    log(`GET one, spread over ${ids.length} ids`);
    const getOne = await compareUnderLoad(
      targets,
      () => `/v1/learning-opportunities/${ids[nextId++ % ids.length]}`,
      loadOptions,
      log,
    );

    const pageCount = Math.ceil(ids.length / WALK_LIMIT);
    log(`list limit=${WALK_LIMIT}, spread over all ${pageCount} pages`);
    const list = await compareUnderLoad(
      targets,
      () =>
        `/v1/learning-opportunities?limit=${WALK_LIMIT}&offset=${Math.floor(Math.random() * pageCount) * WALK_LIMIT}`,
      loadOptions,
      log,
    );

    const scaling = await measureScaling({ off: service, on: limited, second }, auth, ids, loadOptions, log);

    log(`full walk at limit=${WALK_LIMIT}, sequential`);
    const walk = await bestWalk([baseline, service], auth);

    log(`deep offset in the database: plain OFFSET statement vs range counts, median of ${options.samples}`);
    const deepOffset = await measureDeepOffset(db.pool, ids.length, options.samples);

    log(`first vs last page, median of ${options.samples}`);
    const pages = {
      service: await firstVersusLastPage(service.url, auth, ids.length, options.samples),
      baseline: await firstVersusLastPage(baseline.url, {}, ids.length, options.samples),
    };

    log('');
    log(
      `machine load average at the end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (figures from a shared machine are noisy)`,
    );
    printReport(
      buildRows({
        getOne: { service: getOne.get('service')!, baseline: getOne.get('baseline')! },
        list: { service: list.get('service')!, baseline: list.get('baseline')! },
        walk: { service: walk.get('service')!, baseline: walk.get('baseline')! },
        pages,
        deepOffset,
        count: { small: countSmall, large: countLarge },
        scaling,
      }),
      log,
    );
  } finally {
    for (const s of servers) await s.stop();
    await db?.close();
    await pg.stop();
  }
}

await main();
