// Bulk loader for demos and benchmarks: generated records are inserted already PUBLISHED, a batch
// per transaction and statement, rendered by the same renderer and written by the same statement as
// every other write (write-docs.ts, keeping present records as they are). It calls that statement
// directly rather than the mutations: it emits no events (it is not a content change by the
// platform; run it before adding receivers), takes no locks (it only inserts, and ON CONFLICT DO
// NOTHING settles a race) and sets its own historical lifecycle timestamps.
// Idempotent for a given seed: the same seed generates the same ids, and records already present
// are skipped (kept as they are), so a second run with the same --seed inserts nothing.
//
// Batches go out on `connections` sessions at once (default 2): while PostgreSQL inserts one batch,
// this process renders the next and another session inserts a third, so neither side waits for the
// other (bench/README.md, "seed"). The batches are generated in order from one random sequence, so
// which records a seed makes never depends on how many sessions insert them.
import type { Pool, PoolClient } from 'pg';
import { generateContent, type Random, seededRandom } from './generate.ts';
import { renderRecord } from './record.ts';
import type { RunSql } from '../db/transaction-sql.ts';
import { writeDocs } from './write-docs.ts';
import { foldCounts } from './count-folder.ts';

export type SeedProgress = { done: number; total: number };

export type SeedOptions = {
  count: number;
  batchSize?: number;
  seed?: number;
  now?: Date;
  /** Sessions inserting batches at the same time (default 2). */
  connections?: number;
  onProgress?: (p: SeedProgress) => void;
};

const YEAR = 365 * 86_400_000;
const DEFAULT_BATCH_SIZE = 1000;
const FOLD_EVERY_BATCHES = 10;

// Statistics of the tables the write statement's triggers read, refreshed each time the seed has
// doubled what it inserted (from ANALYZE_FROM on). A trigger's statements have no parameters, so each
// session plans them once and keeps that plan until the statistics of a table they read change: the
// plans a seed's sessions made on a nearly empty catalog scanned list_entry and list_session whole
// for every batch (a 1000-record batch took 2 s at 20,000 records and 34 s at 40,000 on a server
// with autovacuum off; with it on, autovacuum's analyze refreshes them, after up to a minute).
const ANALYZE_FROM = 1000;
const ANALYZE_GROWN = 'analyze learning_opportunity (id, status, updated_at), list_entry, list_session';

/**
 * Settings for a session that runs only seed batches (the session ends with the seed: its connection
 * is closed, not returned to the pool with them):
 * - JIT compiling the statement costs more than running it (its row estimates are far too high);
 * - the batch (docs and their parsed jsonb, about 8 MB per 1000 records) stays in memory instead of
 *   going through temporary files;
 * - a commit does not wait for its WAL to reach the disk. A crash can lose the batches of the last
 *   moment (never part of one: each is atomic); seed is idempotent, so running it again with the
 *   same --seed inserts exactly what is missing.
 */
export async function prepareSeedSession(client: PoolClient): Promise<void> {
  await client.query(`set jit = off; set work_mem = '64MB'; set synchronous_commit = off`);
}

/** The rendered docs of the seed's records, a batch at a time (also bench:writes's bare insert of the same documents). */
export function* renderedBatches(options: SeedOptions): Generator<string[]> {
  const rnd: Random = seededRandom(options.seed ?? Date.now());
  const now = options.now ?? new Date();
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  let previousUpdatedAt = now;
  for (let done = 0; done < options.count;) {
    const size = Math.min(batchSize, options.count - done);
    const docs: string[] = [];
    for (let i = 0; i < size; i++) {
      const createdAt = new Date(Math.floor(now.getTime() - YEAR - rnd() * YEAR));
      // Whole seconds, and every 20th record on the previous one's instant: ties in updatedAt are real.
      const updatedAt =
        rnd() < 0.05 ? previousUpdatedAt : new Date(Math.floor((now.getTime() - rnd() * YEAR) / 1000) * 1000);
      previousUpdatedAt = updatedAt;
      const content = generateContent(rnd, updatedAt);
      const publishedAt = new Date(Math.min(updatedAt.getTime(), createdAt.getTime() + 86_400_000));
      docs.push(renderRecord({ ...content, status: 'PUBLISHED', publishedAt, createdAt, updatedAt }));
    }
    done += size;
    yield docs;
  }
}

export async function seedCatalog(pool: Pool, options: SeedOptions): Promise<{ inserted: number; skipped: number }> {
  const connections = options.connections ?? 2;
  if (!Number.isInteger(connections) || connections < 1)
    throw new Error(`connections must be a positive integer, got ${connections}`);
  const batches = renderedBatches(options);
  const sessionCount = Math.min(connections, Math.ceil(options.count / (options.batchSize ?? DEFAULT_BATCH_SIZE))); // no idle sessions
  let done = 0;
  let inserted = 0;
  let failed = false;
  let analyzedAt = 0;
  let analyzing = false;
  let written = 0; // batches, every session's
  // Each session takes the next batch when its previous one is committed, renders it (the other
  // sessions' statements run meanwhile) and sends it; the first failure stops every session.
  const insertBatches = async (client: PoolClient) => {
    await prepareSeedSession(client);
    // Each batch is one statement in its own (implicit) transaction: no BEGIN and COMMIT round trips.
    // The count deltas are folded every FOLD_EVERY_BATCHES batches (count-folder.ts: a fold after
    // each took a tenth of the seed, its deltas written and moved each time), the ranges rebalanced
    // only when the other sessions are between batches: never a wait.
    const run: RunSql = async (text, params) => (await client.query(text, [...params])).rows;
    for (let next = batches.next(); !next.done && !failed; next = batches.next()) {
      const n = await writeDocs(run, next.value, 'skip'); // not `inserted += await`: the sessions interleave
      if (++written % FOLD_EVERY_BATCHES === 0) await foldCounts(client, 0);
      inserted += n;
      done += next.value.length;
      options.onProgress?.({ done, total: options.count });
      if (inserted >= Math.max(ANALYZE_FROM, 2 * analyzedAt) && !analyzing) {
        analyzing = true;
        analyzedAt = inserted;
        await client.query(ANALYZE_GROWN);
        analyzing = false;
      }
    }
  };
  const sessions = await Promise.allSettled(
    Array.from({ length: sessionCount }, async () => {
      const client = await pool.connect();
      try {
        await insertBatches(client);
      } catch (error) {
        failed = true;
        throw error;
      } finally {
        client.release(true); // closed, not pooled: it carries prepareSeedSession's settings
      }
    }),
  );
  const failure = sessions.find((s) => s.status === 'rejected');
  if (failure) throw failure.reason;
  await foldCounts(pool); // the last deltas, and the ranges rebalanced now that no batch runs
  // Statistics for the columns the read statements filter and sort on (read-model.ts), so the planner
  // sees the new rows at once. Not every column: sampling the docs (kilobytes each, compressed) made
  // this a tenth of a 20,000-record seed; autovacuum analyzes the rest as usual.
  await pool.query('analyze learning_opportunity (id, status, updated_at)');
  return { inserted, skipped: done - inserted };
}
