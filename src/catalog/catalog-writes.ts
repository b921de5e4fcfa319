// The content platform's four writes. Each is one transaction: the change, the re-rendered record
// and its event (with delivery jobs) commit together or not at all. Writers of the same id are
// serialised by a transaction-scoped advisory lock.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, notFound } from '../errors.ts';
import type { ChangeRecorder } from '../events/record-change.ts';
import type { Orm } from '../db/orm.ts';
import { LearningOpportunity } from './entities.ts';
import { createNestedItems, deleteNestedItems, lifecycleOf, loadRecord, rowOf } from './entity-mapping.ts';
import { type LearningOpportunityContent, type LearningOpportunityRecord, renderRecord } from './record.ts';

export type CatalogWrites = ReturnType<typeof createCatalogWrites>;

/** updatedAt moves forward on every observable change, even twice within one millisecond. */
function nextUpdatedAt(previous: Date, now: Date): Date {
  return now > previous ? now : new Date(previous.getTime() + 1);
}

async function lockId(em: EntityManager, id: string): Promise<void> {
  await em.getConnection().execute('select pg_advisory_xact_lock(hashtextextended(?, 0))', [id], 'run', em.getTransactionContext());
}

export function createCatalogWrites(deps: { orm: Orm; recordChange: ChangeRecorder; clock?: () => Date }) {
  const clock = deps.clock ?? (() => new Date());
  const inTransaction = <T>(work: (em: EntityManager) => Promise<T>): Promise<T> => deps.orm.em.fork().transactional(work);

  /** Re-renders a loaded record with a new lifecycle and records the change. Returns the new doc. */
  async function transition(em: EntityManager, id: string, next: (record: LearningOpportunityRecord, now: Date) => LearningOpportunityRecord | null): Promise<string> {
    const loaded = await loadRecord(em, id);
    if (!loaded) throw notFound(`Learning opportunity ${id}`);
    const now = clock();
    const changed = next(loaded.record, now);
    if (!changed) return loaded.entity.doc;
    const doc = renderRecord(changed);
    const before = { status: loaded.record.status, doc: loaded.entity.doc };
    em.assign(loaded.entity, { status: changed.status, publishedAt: changed.publishedAt, updatedAt: changed.updatedAt, doc });
    await em.flush();
    await deps.recordChange(em, { resourceId: id, before, after: { status: changed.status, doc }, at: changed.updatedAt });
    return doc;
  }

  return {
    /** Creates a draft or replaces the content of an existing record; an identical save changes nothing. */
    upsert(content: LearningOpportunityContent): Promise<string> {
      return inTransaction(async (em) => {
        await lockId(em, content.id);
        const existing = await em.findOne(LearningOpportunity, content.id, { populate: ['doc'] });
        const now = clock();
        if (!existing) {
          const record: LearningOpportunityRecord = { ...content, status: 'DRAFT', publishedAt: null, createdAt: now, updatedAt: now };
          const doc = renderRecord(record);
          const entity = em.create(LearningOpportunity, rowOf(record, doc));
          createNestedItems(em, entity, content);
          await em.flush();
          await deps.recordChange(em, { resourceId: content.id, before: null, after: { status: 'DRAFT', doc }, at: now });
          return doc;
        }
        const lifecycle = lifecycleOf(existing);
        // Rendered with the old timestamps, an unchanged record gives back exactly the stored bytes.
        if (renderRecord({ ...content, ...lifecycle }) === existing.doc) return existing.doc;
        const record: LearningOpportunityRecord = { ...content, ...lifecycle, updatedAt: nextUpdatedAt(lifecycle.updatedAt, now) };
        const doc = renderRecord(record);
        const before = { status: lifecycle.status, doc: existing.doc };
        await deleteNestedItems(em, content.id);
        em.assign(existing, rowOf(record, doc));
        createNestedItems(em, existing, content);
        await em.flush();
        await deps.recordChange(em, { resourceId: content.id, before, after: { status: record.status, doc }, at: record.updatedAt });
        return doc;
      });
    },

    /** DRAFT or ARCHIVED -> PUBLISHED; publishing a published record changes nothing. */
    publish(id: string): Promise<string> {
      return inTransaction(async (em) => {
        await lockId(em, id);
        return transition(em, id, (record, now) => {
          if (record.status === 'PUBLISHED') return null;
          const updatedAt = nextUpdatedAt(record.updatedAt, now);
          return { ...record, status: 'PUBLISHED', publishedAt: updatedAt, updatedAt };
        });
      });
    },

    /** PUBLISHED -> ARCHIVED; archiving an archived record changes nothing; a draft cannot be archived. */
    archive(id: string): Promise<string> {
      return inTransaction(async (em) => {
        await lockId(em, id);
        return transition(em, id, (record, now) => {
          if (record.status === 'ARCHIVED') return null;
          if (record.status === 'DRAFT') {
            throw new AppError('INVALID_STATE_TRANSITION', `Learning opportunity ${id} is a draft; only a published record can be archived (delete a draft instead)`);
          }
          return { ...record, status: 'ARCHIVED', updatedAt: nextUpdatedAt(record.updatedAt, now) };
        });
      });
    },

    /** Removes a record and its nested items for good; returns its last internal view. */
    delete(id: string): Promise<string> {
      return inTransaction(async (em) => {
        await lockId(em, id);
        const existing = await em.findOne(LearningOpportunity, id, { populate: ['doc'] });
        if (!existing) throw notFound(`Learning opportunity ${id}`);
        const before = { status: lifecycleOf(existing).status, doc: existing.doc };
        await em.nativeDelete(LearningOpportunity, { id });
        await deps.recordChange(em, { resourceId: id, before, after: null, at: clock() });
        return existing.doc;
      });
    },
  };
}
