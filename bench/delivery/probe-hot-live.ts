// Probe (not part of the benchmark): where the commit-to-receipt time of live changes goes, with no
// backlog and beside a hot record (PROBE_HOT changes to one record committed with the worker
// stopped, then PROBE_LIVE other records published live at PROBE_RATE/s, 4 streams, one per
// transaction, as in ordering-run.ts). Each live delivery's path is cut into stages from the
// worker's own calls (pg-boss's fetch and the event loads wrapped, not changed):
//   wait:  commit -> its fetch starts (the NOTIFY, the pump, a fetch round already under way)
//   fetch: pg-boss's fetch statement
//   load:  fetch returned -> its events and receivers loaded
//   send:  loaded -> received (the receiver queue, a free slot, signing, the request)
// and the worker's statements are timed by name. Rounds alternate without and with the hot record.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PgBoss } from 'pg-boss';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import { connectDatabase } from '../../src/app/database.ts';
import { createLogger } from '../../src/kernel/logger.ts';
import { startScratchPostgres } from '../../test/support/scratch-postgres.ts';
import { startServiceSide, type Update } from './service-run.ts';
import { timeStatements } from './statement-timer.ts';

const env = process.env;
const LIVE = Number(env.PROBE_LIVE ?? 666);
const HOT = Number(env.PROBE_HOT ?? 1000);
const RATE = Number(env.PROBE_RATE ?? 1000);
const ROUNDS = Number(env.PROBE_ROUNDS ?? 4);
const now = () => performance.timeOrigin + performance.now();

const received = new Map<string, number>();
const server = createServer({ keepAlive: true }, (req, res) => {
  const id = String(req.headers['webhook-id'] ?? req.headers['x-service-event-id'] ?? '');
  req.resume();
  req.on('end', () => {
    received.set(id, now());
    res.writeHead(200, { 'content-length': 0 }).end();
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

// Stage marks per event id.
const fetchStart = new Map<string, number>();
const fetchEnd = new Map<string, number>();
const loadEnd = new Map<string, number>();
const originalFetch = PgBoss.prototype.fetch;
(PgBoss.prototype as unknown as { fetch: unknown }).fetch = async function (
  this: PgBoss,
  ...args: Parameters<PgBoss['fetch']>
) {
  const t0 = now();
  const jobs = (await originalFetch.apply(this, args)) as { data: { eventId: string } }[];
  const t1 = now();
  for (const j of jobs) {
    fetchStart.set(j.data.eventId, t0);
    fetchEnd.set(j.data.eventId, t1);
  }
  return jobs;
};

const config = { ...loadConfig(env).webhooks, allowPrivateTargets: true };
const logger = createLogger({ level: 'warn', destination: process.stderr });
const pg = await startScratchPostgres({ serverUrl: env.DATABASE_URL, prefix: 'lods-probe-hot-live' });
const db = await connectDatabase(pg.url, { poolMax: 20, connectTimeoutMs: 5000, migrate: true });
const stats = timeStatements(db.pool, (name, q) => {
  if (name === 'webhook-load-events') for (const id of (q.values?.[0] ?? []) as string[]) loadEnd.set(id, now());
});

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : NaN;
};
const line = (label: string, xs: number[]) =>
  `  ${label.padEnd(8)} p50 ${pct(xs, 50).toFixed(1).padStart(6)}  p90 ${pct(xs, 90).toFixed(1).padStart(6)}  p99 ${pct(xs, 99).toFixed(1).padStart(6)}  max ${pct(xs, 100).toFixed(1).padStart(6)} ms`;

try {
  await seedCatalog(db.pool, { count: LIVE * (ROUNDS + 1) + 1, seed: 42 });
  const { rows: records } = await db.pool.query<{ id: string; doc: string }>(
    'select id, doc from learning_opportunity order by id',
  );
  const service = await startServiceSide({ db, config, logger, receiverUrl: url, secret: 'probe-secret-0123456789' });
  const version = (doc: string, v: number) => doc.replace('"title":"', `"title":"v${v} `);
  const hot = records[records.length - 1]!;
  let hotV = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    // Rounds alternate: without a hot record (the control), then with one.
    const hotN = round % 2 === 0 ? 0 : HOT;
    const label = `${round === 0 ? 'warm-up' : `round ${round}`}, ${hotN ? `hot record of ${HOT}` : 'no hot record'}`;
    await service.stopWorker();
    const hotUpdates: Update[] = [];
    for (let i = 0; i < hotN; i++, hotV++)
      hotUpdates.push({ id: hot.id, before: version(hot.doc, hotV), after: version(hot.doc, hotV + 1) });
    await service.commitUpdates(hotUpdates, { streams: 1, batch: 1 });
    const live = records.slice(round * LIVE, (round + 1) * LIVE);
    received.clear();
    stats.clear();
    const { rows: mark } = await db.pool.query<{ at: string }>('select clock_timestamp()::text as at');
    await service.drain();
    const committed = await service.publishLive(
      live.map((r) => ({ id: r.id, doc: version(r.doc, 1000 + round) })),
      { producer: 'recorder', streams: 4, batch: 1, rate: RATE },
    );
    const { rows: events } = await db.pool.query<{ id: string; resource_id: string }>(
      'select id, resource_id from event where resource_id = any($1::uuid[]) and occurred_at >= $2',
      [live.map((r) => r.id), mark[0]!.at],
    );
    const deadline = Date.now() + 120_000;
    while (events.some((e) => !received.has(e.id)) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    const hotLeft = hotN - (received.size - events.length);
    const stages = {
      total: [] as number[],
      wait: [] as number[],
      fetch: [] as number[],
      load: [] as number[],
      send: [] as number[],
    };
    for (const e of events) {
      const c = committed.get(e.resource_id)!;
      const [f0, f1, l1, r] = [fetchStart.get(e.id), fetchEnd.get(e.id), loadEnd.get(e.id), received.get(e.id)];
      if (r === undefined) continue;
      stages.total.push(r - c);
      if (f0 === undefined || f1 === undefined || l1 === undefined) continue;
      stages.wait.push(f0 - c);
      stages.fetch.push(f1 - f0);
      stages.load.push(l1 - f1);
      stages.send.push(r - l1);
    }
    console.log(
      `${label}: ${stages.total.length}/${events.length} live received (hot deliveries still to go at the end: ${hotLeft}); load ${(await import('node:os')).loadavg()[0]!.toFixed(1)}`,
    );
    for (const [k, xs] of Object.entries(stages)) console.log(line(k, xs));
    for (const [name, s] of [...stats].sort((a, b) => b[1].ms - a[1].ms).slice(0, 8))
      console.log(
        `    ${name.padEnd(40)} n=${String(s.n).padStart(5)} avg=${(s.ms / s.n).toFixed(2)} max=${s.max.toFixed(1)} ms`,
      );
    // The rest of the hot record, before the next round.
    while (received.size < events.length + hotN && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }
  await service.stop();
} finally {
  server.closeAllConnections();
  server.close();
  await db.close();
  await pg.stop();
}
