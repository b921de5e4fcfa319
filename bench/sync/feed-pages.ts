// A 1,000,000-event feed: events inserted with generate_series (not mutations), a page of 1000 read
// over HTTP at the start, the middle and the end, and the plan of the page statement at the end.
import type { Pool } from 'pg';
import { encodeCursor, type FeedPosition } from '../../src/feed/cursor.ts';
import { FEED_PAGE_SQL } from '../../src/feed/feed-reads.ts';
import { PAGE_MAX_BYTES_DEFAULT, pageBudget } from '../../src/catalog/read-model.ts';
import { percentile } from '../delivery/stats.ts';

const PAGE = 1000;

/** Inserts `total` DELETED events, `perTransaction` per transaction (so the feed spans many xids). */
export async function insertEvents(
  pool: Pool,
  total: number,
  perTransaction: number,
  log: (line: string) => void,
): Promise<void> {
  for (let done = 0; done < total; done += perTransaction) {
    const n = Math.min(perTransaction, total - done);
    await pool.query(
      `insert into event (id, type, resource_id, occurred_at, body)
       select id, 'LEARNING_OPPORTUNITY_DELETED', rid, at,
              '{"id":"' || id || '","type":"LEARNING_OPPORTUNITY_DELETED","occurredAt":"' || to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') ||
              '","resource":{"type":"LEARNING_OPPORTUNITY","id":"' || rid || '"},"data":null}'
         from (select gen_random_uuid() as id, gen_random_uuid() as rid, now() as at from generate_series(1, $1)) g`,
      [n],
    );
    if ((done + n) % (total / 10) < perTransaction) log(`  events: ${done + n}/${total}`);
  }
  await pool.query('vacuum analyze event');
}

async function positionAt(pool: Pool, offset: number): Promise<FeedPosition> {
  const { rows } = await pool.query<FeedPosition>(
    'select xid::text as xid, position::text as position from event order by xid, position offset $1 limit 1',
    [offset],
  );
  return rows[0]!;
}

export type PageTimes = { first: number; middle: number; last: number; plan: string[]; scans: boolean };

/**
 * Median time of a limit=1000 page at the start, the middle and the end (the last full page) of the
 * `count` events that follow the first `before` events of the feed.
 */
export async function measurePages(
  pool: Pool,
  baseUrl: string,
  key: string,
  range: { before: number; count: number },
  samples: number,
): Promise<PageTimes> {
  const start = range.before > 0 ? await positionAt(pool, range.before - 1) : null;
  const middle = await positionAt(pool, range.before + Math.floor(range.count / 2));
  const last = await positionAt(pool, range.before + range.count - PAGE - 1);
  const readPage = async (after: FeedPosition | null): Promise<number> => {
    const started = performance.now();
    const res = await fetch(`${baseUrl}/v1/events?limit=${PAGE}${after ? `&after=${encodeCursor(after)}` : ''}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const body = (await res.json()) as { results: unknown[] };
    if (res.status !== 200 || body.results.length !== PAGE)
      throw new Error(`feed page: ${res.status}, ${body.results.length} events`);
    return performance.now() - started;
  };
  // Interleaved (start, middle, end, start, ...) so that the neighbours' load hits all three alike.
  const places = [start, middle, last];
  const times: number[][] = [[], [], []];
  for (const after of places) await readPage(after); // warm-up
  for (let i = 0; i < samples; i++) for (const [j, after] of places.entries()) times[j]!.push(await readPage(after));
  const median = (xs: number[]) =>
    percentile(
      xs.sort((a, b) => a - b),
      50,
    );
  const result = { first: median(times[0]!), middle: median(times[1]!), last: median(times[2]!) };
  const { rows } = await pool.query<{ 'QUERY PLAN': string }>({
    text: `explain (analyze, costs off, timing off, summary off) ${FEED_PAGE_SQL}`,
    values: [last.xid, last.position, PAGE, pageBudget(PAGE_MAX_BYTES_DEFAULT)],
  });
  const plan = rows.map((r) => r['QUERY PLAN']);
  // A scan of the event table or a sort would grow with the feed (the one-row watermark table is read whole).
  return { ...result, plan, scans: plan.some((line) => /(Seq Scan|Bitmap Heap Scan) on event |\bSort\b/.test(line)) };
}
