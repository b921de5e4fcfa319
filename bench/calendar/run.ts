// npm run bench:calendar: the CPU a calendar takes to render on the API's one thread (GET
// /v1/calendar.ics renders up to CALENDAR_RECORDS_MAX records of the list's page). The records are
// the seed's (generated in this process, no database), 1,000 of them as the calendar reads them;
// the baseline, measured alternately in the same run, is serializing the same records as JSON (the
// least any response of them costs). Prints both medians and the ratio.
// Then (unless BENCH_BESIDE=0) another key's reads beside calendars (beside.ts), against the same
// reads alone, on an API over a catalog of BENCH_RECORDS (20,000) seeded records: its own embedded
// PostgreSQL, or a scratch database on the server of DATABASE_URL. A report: exits 0.
import { cpus, loadavg } from 'node:os';
import { createApiKey } from '../../src/auth/api-keys.ts';
import { connectDatabase } from '../../src/app/database.ts';
import { startApi } from '../../src/app/service.ts';
import { CALENDAR_RECORDS_MAX, type CalendarRecord, renderCalendar } from '../../src/catalog/calendar-ics.ts';
import { TOPICS } from '../../src/catalog/generate-vocabulary.ts';
import { renderedBatches, seedCatalog } from '../../src/catalog/seed.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import { createLogger } from '../../src/kernel/logger.ts';
import { intFromEnv } from '../read-path/options.ts';
import { startBenchPostgres } from '../read-path/database.ts';
import { measureBeside } from './beside.ts';

const log = (line: string) => process.stdout.write(`${line}\n`);
const ROUNDS = intFromEnv('BENCH_ROUNDS', 21, 3);
const MAX_BYTES = 16 * 1024 * 1024; // no byte bound: every record rendered

const records: CalendarRecord[] = [...renderedBatches({ count: CALENDAR_RECORDS_MAX, seed: 2026 })]
  .flat()
  .map((doc) => {
    const r = JSON.parse(doc) as CalendarRecord;
    return {
      id: r.id,
      title: r.title,
      summary: r.summary,
      url: r.url,
      format: r.format,
      updatedAt: r.updatedAt,
      sessions: r.sessions,
    };
  });
const sessions = records.reduce((n, r) => n + r.sessions.length, 0);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const time = (work: () => unknown): number => {
  const at = performance.now();
  work();
  return performance.now() - at;
};

let bytes = 0;
const render = () =>
  (bytes = renderCalendar(records, records.length, { name: 'Learning opportunities', maxBytes: MAX_BYTES }).text
    .length);
const serialize = () => JSON.stringify(records).length;
// Warm-up: both paths compiled before the rounds.
for (let i = 0; i < 3; i++) {
  render();
  serialize();
}
const rendered: number[] = [];
const serialized: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  rendered.push(time(render));
  serialized.push(time(serialize));
}
log(
  `calendar of ${records.length} records, ${sessions} events, ${(bytes / 1024 / 1024).toFixed(1)} MB; ${ROUNDS} rounds, alternated`,
);
log(
  `  render: median ${median(rendered).toFixed(1)} ms (${((median(rendered) * 1000) / sessions).toFixed(1)} µs per event)`,
);
log(`  baseline, JSON.stringify of the same records: median ${median(serialized).toFixed(1)} ms`);
log(`  render / baseline: ${(median(rendered) / median(serialized)).toFixed(1)}x`);

if (process.env.BENCH_BESIDE !== '0') await besideCalendars();

async function besideCalendars(): Promise<void> {
  const count = intFromEnv('BENCH_RECORDS', 20_000, 5_000);
  const windowMs = intFromEnv('BENCH_WINDOW_MS', 10_000, 1_000);
  const pg = await startBenchPostgres(process.env.DATABASE_URL || undefined);
  const db = await connectDatabase(pg.url, { poolMax: 10, connectTimeoutMs: 5000, migrate: true });
  try {
    await seedCatalog(db.pool, { count, seed: 2026 });
    await db.pool.query('vacuum analyze');
    const api = await startApi(
      { ...loadConfig({ RESPONSE_BYTES_PER_SECOND: '0' }), port: 0, host: '127.0.0.1' },
      db,
      createLogger({ level: 'silent' }),
    );
    try {
      const key = async (name: string) =>
        (await createApiKey(db.orm.em.fork(), { name, scopes: ['catalog:read'] })).key;
      const keys = { reader: await key('reader'), calendars: await key('calendars') };
      const id = (
        await db.pool.query<{ id: string }>("select id from learning_opportunity where status = 'PUBLISHED' limit 1")
      ).rows[0]!.id;
      log(
        `\nanother key's GET by id every 50 ms beside one key fetching distinct calendars two at a time (${count} records, ${pg.description}; ${cpus().length} cores, load ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')})`,
      );
      const ms = (x: number) => `${x.toFixed(1)} ms`;
      for (let round = 1; round <= 2; round++) {
        const r = await measureBeside(api, keys, id, TOPICS, windowMs);
        const ratio = r.beside.p99 / r.alone.p99;
        log(
          `  round ${round}: p50 / p99 ${ms(r.beside.p50)} / ${ms(r.beside.p99)} beside ${r.calendars} calendars (${r.megabytes.toFixed(2)} MB each, ${r.failed} failed) in ${windowMs / 1000} s; alone ${ms(r.alone.p50)} / ${ms(r.alone.p99)}: p99 ${ratio.toFixed(1)}x, target <= 2x: ${ratio <= 2 ? 'PASS' : 'FAIL'}`,
        );
      }
    } finally {
      await api.close();
    }
  } finally {
    await db.close();
    await pg.stop();
  }
}
