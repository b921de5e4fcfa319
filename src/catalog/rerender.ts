// `catalog rerender`: after a change of the renderer (such as a new additive field), every stored
// record's `doc` is rendered again from its rows. A change of representation, not of content: no
// event is recorded and `updatedAt` stays as it was. Records whose doc is already what the renderer
// produces are left alone, so a second run (or a run without a renderer change) changes nothing.
import type { Pool } from 'pg';
import type { Orm } from '../db/orm.ts';
import { type ILearningOpportunity, LearningOpportunity } from './entities.ts';
import { NESTED_PROPERTIES, recordOf } from './entity-mapping.ts';
import { renderRecord } from './record.ts';

export type RerenderResult = { scanned: number; changed: number };

// Only when the row is still the one that was rendered (same updatedAt): a mutation that landed
// meanwhile wrote its own, newer doc.
const WRITE_DOCS_SQL = `
  update learning_opportunity l set doc = u.doc
    from unnest($1::uuid[], $2::text[], $3::timestamptz[]) as u (id, doc, updated_at)
   where l.id = u.id and l.updated_at = u.updated_at and l.doc is distinct from u.doc`;

/** Re-renders every record in key order, `batchSize` at a time; reports progress after each batch. */
export async function rerenderCatalog(
  db: { orm: Orm; pool: Pick<Pool, 'query'> },
  options: { batchSize?: number; onProgress?: (progress: RerenderResult) => void } = {},
): Promise<RerenderResult> {
  const batchSize = options.batchSize ?? 500;
  const result: RerenderResult = { scanned: 0, changed: 0 };
  let after: string | null = null;
  for (;;) {
    const em = db.orm.em.fork();
    const entities: ILearningOpportunity[] = await em.find(LearningOpportunity, after ? { id: { $gt: after } } : {}, {
      orderBy: { id: 'asc' },
      limit: batchSize,
      populate: ['doc', ...NESTED_PROPERTIES],
    });
    if (entities.length === 0) break;
    after = entities.at(-1)!.id;
    const stale = entities
      .map((entity) => ({ entity, doc: renderRecord(recordOf(entity)) }))
      .filter(({ entity, doc }) => doc !== entity.doc);
    if (stale.length) {
      const updated = await db.pool.query(WRITE_DOCS_SQL, [
        stale.map((s) => s.entity.id),
        stale.map((s) => s.doc),
        stale.map((s) => s.entity.updatedAt),
      ]);
      result.changed += updated.rowCount ?? 0;
    }
    result.scanned += entities.length;
    options.onProgress?.({ ...result });
  }
  return result;
}
