// Bulk loader for demos and benchmarks: generated records are inserted already PUBLISHED, a batch
// per transaction, rendered by the same renderer as every other write. It emits no events (it is
// not a content change by the platform); run it before adding receivers. Idempotent for a given
// seed: the same seed generates the same ids, and records already present are skipped (kept as
// they are), so a second run with the same --seed inserts nothing.
import type { Orm } from '../db/orm.ts';
import { LearningOpportunity } from './entities.ts';
import { createNestedItems, rowOf } from './entity-mapping.ts';
import { generateContent, type Random, seededRandom } from './generate.ts';
import { type LearningOpportunityRecord, renderRecord } from './record.ts';

export type SeedProgress = { done: number; total: number };

export async function seedCatalog(
  orm: Orm,
  options: { count: number; batchSize?: number; seed?: number; now?: Date; onProgress?: (p: SeedProgress) => void },
): Promise<{ inserted: number; skipped: number }> {
  const rnd: Random = seededRandom(options.seed ?? Date.now());
  const now = options.now ?? new Date();
  const batchSize = options.batchSize ?? 500;
  const year = 365 * 86_400_000;
  let done = 0;
  let skipped = 0;
  let previousUpdatedAt = now;
  while (done < options.count) {
    const size = Math.min(batchSize, options.count - done);
    await orm.em.fork().transactional(async (em) => {
      const batch: LearningOpportunityRecord[] = [];
      for (let i = 0; i < size; i++) {
        const createdAt = new Date(Math.floor(now.getTime() - year - rnd() * year));
        // Whole seconds, and every 20th record on the previous one's instant: ties in updatedAt are real.
        const updatedAt = rnd() < 0.05 ? previousUpdatedAt : new Date(Math.floor((now.getTime() - rnd() * year) / 1000) * 1000);
        previousUpdatedAt = updatedAt;
        const content = generateContent(rnd, updatedAt);
        const publishedAt = new Date(Math.min(updatedAt.getTime(), createdAt.getTime() + 86_400_000));
        batch.push({ ...content, status: 'PUBLISHED', publishedAt, createdAt, updatedAt });
      }
      const present = new Set((await em.find(LearningOpportunity, { id: { $in: batch.map((r) => r.id) } }, { fields: ['id'] })).map((e) => e.id));
      for (const record of batch) {
        if (present.has(record.id)) continue;
        createNestedItems(em, em.create(LearningOpportunity, rowOf(record, renderRecord(record))), record);
      }
      skipped += present.size;
      await em.flush();
    });
    done += size;
    options.onProgress?.({ done, total: options.count });
  }
  await orm.em.getConnection().execute('analyze learning_opportunity');
  return { inserted: done - skipped, skipped };
}
