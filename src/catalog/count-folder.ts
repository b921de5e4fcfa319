// The folders of the maintained counts. Every FOLD_EVERY_MS:
// - `fold_counts()` (migration count_deltas): the deltas that write statements appended to
//   catalog_count_delta, facet_count_delta and list_bucket_delta are moved into their base rows, and
//   list_bucket's ranges rebalanced, in one transaction. Readers read base plus pending deltas, so
//   the counts are exact whether or not a fold ran; folding keeps the pending deltas to about a
//   second of writes, so reading them stays cheap.
// - `fold_search(max)` (migration search_bitmaps): the records written since their last fold into
//   the search bitmaps, whole chunks up to about SEARCH_FOLD_RECORDS records per call (a search
//   counts the records not yet folded from their rows, so it is exact either way).
// Every API process runs both, each on its own timer (a long search fold never holds up the
// counts'); a try-lock lets one session fold at a time, and the others' calls return at once.
import type { Pool } from 'pg';
import { boundedQuery } from '../db/bounded-query.ts';
import type { Logger } from '../kernel/logger.ts';
import { createOutageLog } from '../kernel/outage-log.ts';

export const FOLD_EVERY_MS = 1000;
/** Records folded into the search bitmaps per call, at most (whole chunks: at least one). */
export const SEARCH_FOLD_RECORDS = 20_000;

type Queryable = Pick<Pool, 'query'>;

/**
 * Folds the count deltas once; false when another session was folding (its fold covers what was
 * committed). `waitMs`: how long list_bucket's rebalance may wait for the writers in flight (0: only when none).
 */
export async function foldCounts(pool: Queryable, waitMs = 200): Promise<boolean> {
  const { rows } = await pool.query<{ folded: boolean }>('select fold_counts($1) as folded', [waitMs]);
  return rows[0]!.folded;
}

// fold_search's lock (migration search_bitmaps), taken here for the session before the fold's
// transaction starts; fold_search takes it again for its transaction, which a session holding it
// always gets.
const FOLD_LOCK = '20261223, 1';

/**
 * Folds marked records into the search bitmaps once: how many were folded (0: none were marked),
 * or -1 when another session was folding.
 *
 * One snapshot for the whole fold (REPEATABLE READ): its statements number the marked records'
 * facet values, then look each value's number up, and under READ COMMITTED a write committed between
 * the two (a record published with a provider never seen) left a value unnumbered: the fold failed
 * on a null (found from outside under 8 writers; test/catalog/facet-pairs.test.ts). A write committed
 * after the snapshot keeps its mark and is folded next time. The lock is held before the snapshot
 * is taken, so the snapshot sees every earlier fold committed.
 */
export async function foldSearch(pool: Pick<Pool, 'connect'>, maxRecords = SEARCH_FOLD_RECORDS): Promise<number> {
  const client = await pool.connect();
  try {
    const { rows: locked } = await client.query<{ held: boolean }>(`select pg_try_advisory_lock(${FOLD_LOCK}) as held`);
    if (!locked[0]!.held) {
      client.release();
      return -1;
    }
    await client.query('begin isolation level repeatable read');
    const { rows } = await client.query<{ folded: number }>('select fold_search($1) as folded', [maxRecords]);
    await client.query('commit');
    await client.query(`select pg_advisory_unlock(${FOLD_LOCK})`);
    client.release();
    return rows[0]!.folded;
  } catch (error) {
    client.release(true); // closed: its lock and its transaction end with it
    throw error;
  }
}

/**
 * The records waiting for their fold into the search bitmaps (/metrics' lods_search_marked_records,
 * read at scrape time): a million rows after a seed count in about 40 ms.
 */
export async function readSearchMarked(pool: Pool, timeoutMs: number): Promise<number> {
  const rows = await boundedQuery<{ n: string }>(pool, 'select count(*) as n from search_dirty', timeoutMs);
  return Number(rows[0]!.n);
}

/** Folds the search bitmaps until no record is marked (or another session folds). */
export async function foldSearchAll(pool: Pick<Pool, 'connect'>): Promise<void> {
  while ((await foldSearch(pool)) > 0);
}

/** Starts both folders, every `everyMs`; a failed fold is logged and retried at the next tick. */
export function startCountFolder(options: { pool: Pool; logger: Logger; everyMs?: number }): {
  stop: () => Promise<void>;
} {
  const { pool, logger } = options;
  const folders = [
    { fold: () => foldCounts(pool), what: 'folding the maintained counts', after: 'they stay exact' },
    { fold: () => foldSearch(pool), what: 'folding the search bitmaps', after: 'counts stay exact' },
  ].map(({ fold, what, after }) => {
    let running: Promise<void> = Promise.resolve();
    const log = createOutageLog(logger, {
      failed: `${what} failed; ${after}, and the next fold retries`,
      recovered: `${what} works again`,
    });
    const once = async () => {
      try {
        await fold();
        log.succeeded();
      } catch (error) {
        log.failed(error);
      }
    };
    // A tick while the previous fold still runs is skipped, not queued.
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      running = once().finally(() => (busy = false));
    }, options.everyMs ?? FOLD_EVERY_MS);
    timer.unref();
    return { timer, running: () => running };
  });
  return {
    stop: async () => {
      for (const f of folders) clearInterval(f.timer);
      await Promise.all(folders.map((f) => f.running()));
    },
  };
}
