// npm run bench:calendar: the CPU a calendar takes to render on the API's one thread (GET
// /v1/calendar.ics renders up to CALENDAR_RECORDS_MAX records of the list's page). The records are
// the seed's (generated in this process, no database), 1,000 of them as the calendar reads them;
// the baseline, measured alternately in the same run, is serializing the same records as JSON (the
// least any response of them costs). Prints both medians and the ratio. A report: exits 0.
import { CALENDAR_RECORDS_MAX, type CalendarRecord, renderCalendar } from '../../src/catalog/calendar-ics.ts';
import { renderedBatches } from '../../src/catalog/seed.ts';
import { intFromEnv } from '../read-path/options.ts';

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
