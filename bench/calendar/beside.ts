// Another key's reads beside calendars: one key fetching distinct calendars (up to
// CALENDAR_RECORDS_MAX records each) two at a time from a process of its own, while another key
// reads one record by id every 50 ms; that key's p50 / p99 against the same reads with no calendar
// fetched. A render is CPU on the API's one thread; rendered a slice per turn of the event loop
// (renderCalendarInTurns), the other key's requests are read between slices. Target: p99 within 2x.
import { fork } from 'node:child_process';
import type { Api } from '../../src/app/service.ts';
import { type Latency, pacedReads } from '../read-path/paced-reads.ts';

export type Beside = { alone: Latency; beside: Latency; calendars: number; megabytes: number; failed: number };

const reads = (api: Api, key: string, id: string, windowMs: number) =>
  pacedReads(`${api.url}/v1/learning-opportunities/${id}`, key, { everyMs: 50, windowMs });

export async function measureBeside(
  api: Api,
  keys: { reader: string; calendars: string },
  id: string,
  topics: readonly string[],
  windowMs: number,
): Promise<Beside> {
  const alone = await reads(api, keys.reader, id, windowMs);
  const fetchers = fork(new URL('./fetchers.ts', import.meta.url).pathname, [
    JSON.stringify({ url: api.url, key: keys.calendars, topics, concurrency: 2 }),
  ]);
  fetchers.on('error', () => {}); // a failed send: the exit says what happened
  const exited = new Promise<number | null>((resolve) => fetchers.on('exit', resolve));
  // The channel closes after the last message (the report) has arrived.
  const disconnected = new Promise((resolve) => fetchers.on('disconnect', resolve));
  let report: { calendars: number; bytes: number; failed: number } | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    fetchers.on('message', (m) => (m === 'ready' ? resolve() : (report = m as typeof report)));
    void exited.then((code) => reject(new Error(`the calendar fetchers exited with ${code}`)));
  });
  try {
    await ready;
    const beside = await reads(api, keys.reader, id, windowMs);
    fetchers.send('stop');
    await disconnected;
    if (!report) throw new Error('the calendar fetchers ended without their report');
    const { calendars, bytes, failed } = report;
    return { alone, beside, calendars, megabytes: bytes / calendars / 1024 / 1024, failed };
  } finally {
    if (fetchers.exitCode === null) fetchers.kill();
    await exited;
  }
}
