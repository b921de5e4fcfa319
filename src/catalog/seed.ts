// Bulk loader for demos and benchmarks: generated records are inserted already PUBLISHED, a batch
// per transaction and statement (seed-insert.ts), rendered by the same renderer as every other write.
// It emits no events (it is not a content change by the platform); run it before adding receivers.
// Idempotent for a given seed: the same seed generates the same ids, and records already present
// are skipped (kept as they are), so a second run with the same --seed inserts nothing.
import type { Pool } from 'pg';
import { inTransaction } from '../webhooks/pg-transaction.ts';
import { generateContent, type Random, seededRandom } from './generate.ts';
import { renderRecord } from './record.ts';
import { insertRenderedRecords } from './seed-insert.ts';

export type SeedProgress = { done: number; total: number };

export async function seedCatalog(
  pool: Pool,
  options: { count: number; batchSize?: number; seed?: number; now?: Date; onProgress?: (p: SeedProgress) => void },
): Promise<{ inserted: number; skipped: number }> {
  const rnd: Random = seededRandom(options.seed ?? Date.now());
  const now = options.now ?? new Date();
  const batchSize = options.batchSize ?? 1000;
  const year = 365 * 86_400_000;
  let done = 0;
  let inserted = 0;
  let previousUpdatedAt = now;
  while (done < options.count) {
    const size = Math.min(batchSize, options.count - done);
    const docs: string[] = [];
    for (let i = 0; i < size; i++) {
      const createdAt = new Date(Math.floor(now.getTime() - year - rnd() * year));
      // Whole seconds, and every 20th record on the previous one's instant: ties in updatedAt are real.
      const updatedAt = rnd() < 0.05 ? previousUpdatedAt : new Date(Math.floor((now.getTime() - rnd() * year) / 1000) * 1000);
      previousUpdatedAt = updatedAt;
      const content = generateContent(rnd, updatedAt);
      const publishedAt = new Date(Math.min(updatedAt.getTime(), createdAt.getTime() + 86_400_000));
      docs.push(renderRecord({ ...content, status: 'PUBLISHED', publishedAt, createdAt, updatedAt }));
    }
    inserted += await inTransaction(pool, (client) => insertRenderedRecords(client, docs));
    done += size;
    options.onProgress?.({ done, total: options.count });
  }
  await pool.query('analyze learning_opportunity');
  return { inserted, skipped: done - inserted };
}
