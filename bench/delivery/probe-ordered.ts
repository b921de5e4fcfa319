// Probe (not part of the benchmark): the ordered drain and the hot record, with the worker's
// statements timed (pool.query wrapped) and the receipts' timeline. PROBE_COUNT changes, 4 per record.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import { connectDatabase } from '../../src/app/database.ts';
import { createLogger } from '../../src/kernel/logger.ts';
import { startScratchPostgres } from '../../test/support/scratch-postgres.ts';
import { startServiceSide, type Update } from './service-run.ts';
import { createCpuMeter } from './cpu.ts';
import { timeStatements } from './statement-timer.ts';

const env = process.env;
const COUNT = Number(env.PROBE_COUNT ?? 2000);
const HOT = Number(env.PROBE_HOT ?? 300);
// The ordered round commits 4 versions of COUNT / 4 records in transactions of 20 changes: with fewer
// than 20 records one transaction would hold two changes of a record, which the recorder refuses
// (a batch never repeats an id, events/record-change.ts).
if (!(COUNT >= 80)) throw new Error('PROBE_COUNT must be at least 80 (4 versions of at least 20 records)');
const now = () => performance.now();
const arrivals: number[] = [];
const server = createServer({ keepAlive: true }, (req, res) => {
  req.resume();
  req.on('end', () => {
    arrivals.push(now());
    res.writeHead(200, { 'content-length': 0 }).end();
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

const config = { ...loadConfig(env).webhooks, allowPrivateTargets: true };
const logger = createLogger({ level: 'warn', destination: process.stderr });
const pg = await startScratchPostgres({ serverUrl: env.DATABASE_URL, prefix: 'lods-probe-ordered' });
const db = await connectDatabase(pg.url, { poolMax: 20, connectTimeoutMs: 5000, migrate: true });
if (env.PROBE_EXPLAIN) {
  // auto_explain's LOG lines, sent to this client (client_min_messages), for statements over PROBE_EXPLAIN ms.
  db.pool.on('connect', (client) => {
    void client.query(
      `load 'auto_explain'; set auto_explain.log_min_duration = ${Number(env.PROBE_EXPLAIN)}; set auto_explain.log_analyze = on; set auto_explain.log_buffers = on; set client_min_messages = log`,
    );
    client.on('notice', (n) => {
      if (String(n.message).includes('webhook') || String(n.message).includes('delivery_lane'))
        console.log(String(n.message).slice(0, 20000));
    });
  });
}
const stats = timeStatements(db.pool);
try {
  await seedCatalog(db.pool, { count: COUNT + 1, seed: 42 });
  const { rows: records } = await db.pool.query<{ id: string; doc: string }>(
    'select id, doc from learning_opportunity',
  );
  const service = await startServiceSide({ db, config, logger, receiverUrl: url, secret: 'probe-secret-0123456789' });
  const version = (doc: string, v: number) => doc.replace('"title":"', `"title":"v${v} `);
  const updates = (rs: typeof records, n: number): Update[] => {
    const out: Update[] = [];
    for (let v = 1; v <= n; v++)
      for (const r of rs) out.push({ id: r.id, before: version(r.doc, v - 1), after: version(r.doc, v) });
    return out;
  };
  const cpu = await createCpuMeter(db.pool, !env.DATABASE_URL);
  const drain = async (label: string, expected: number) => {
    arrivals.length = 0;
    stats.clear();
    const meter = await cpu();
    const t0 = now();
    await service.drain();
    while (arrivals.length < expected) await new Promise((r) => setTimeout(r, 5));
    const span = Math.max(...arrivals) - t0;
    const used = await meter(expected);
    console.log(
      `${label}: ${expected} in ${span.toFixed(0)} ms = ${((expected / span) * 1000).toFixed(0)}/s; CPU/delivery process ${used.processUs.toFixed(0)} µs, database ${used.databaseUs?.toFixed(0)} µs; load ${(await import('node:os')).loadavg()[0]!.toFixed(1)}`,
    );
    for (const [name, s] of [...stats].sort((a, b) => b[1].ms - a[1].ms))
      console.log(
        `  ${name.padEnd(40)} n=${String(s.n).padStart(5)} ms=${s.ms.toFixed(0).padStart(6)} avg=${(s.ms / s.n).toFixed(2)} rows/call=${(s.rows / s.n).toFixed(1)}`,
      );
    await service.stopWorker();
  };
  const spread = records.slice(0, COUNT / 4);
  const flat = records.slice(0, COUNT);
  let v = 0;
  const bump = (rs: typeof records, n: number) => {
    const out = updates(rs, n).map((u) => ({ ...u, before: version(u.before, v), after: version(u.after, v) }));
    v++;
    return out;
  };
  await service.commitUpdates(bump(flat, 1), { streams: 4, batch: 20 });
  await drain('warm-up, 1 version per record', flat.length);
  for (let round = 0; round < Number(env.PROBE_ROUNDS ?? 2); round++) {
    await service.commitUpdates(bump(flat, 1), { streams: 4, batch: 20 });
    await drain(`unordered: ${COUNT} records, 1 version each`, flat.length);
    await service.commitUpdates(bump(spread, 4), { streams: 4, batch: 20 });
    await drain(`ordered: ${spread.length} records, 4 versions each`, spread.length * 4);
  }
  const hot = records[records.length - 1]!;
  await service.commitUpdates(updates([hot], HOT), { streams: 1, batch: 1 });
  await drain(`hot record, ${HOT} versions`, HOT);
  await service.stop();
} finally {
  server.closeAllConnections();
  server.close();
  await db.close();
  await pg.stop();
}
