// The content platform's writes. Each call is one transaction, for one record or a batch: the
// changes, the re-rendered records and their events (with delivery jobs) commit together or not at
// all. A single-record write is a batch of one. Writers of the same id are serialised by
// transaction-scoped advisory locks, taken in id order so that two batches cannot deadlock.
// Set-based: a batch of n records costs one lock statement, one load, one statement clearing the
// nested rows of replaced records and one writing the records (write-docs.ts, the statement seed
// uses too), then the events of the changed records: one insert, one receiver query and one insert
// of jobs. The statements go through the transaction's own connection (MikroORM's, so that the
// events and their jobs share it) with bound parameters: MikroORM would inline a batch's megabytes
// of docs into the SQL text.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, badInput, notFound } from '../kernel/errors.ts';
import type { Change, ChangeRecorder } from '../events/record-change.ts';
import type { Orm } from '../db/orm.ts';
import { LearningOpportunity } from './entities.ts';
import { lifecycleOf, loadRecords } from './entity-mapping.ts';
import { type LearningOpportunityContent, type LearningOpportunityRecord, renderRecord } from './record.ts';
import { type RunSql, sqlOf } from '../db/transaction-sql.ts';
import { deleteNestedRows, writeDocs } from './write-docs.ts';

export type CatalogWrites = ReturnType<typeof createCatalogWrites>;

/** updatedAt moves forward on every observable change, even twice within one millisecond. */
function nextUpdatedAt(previous: Date, now: Date): Date {
  return now > previous ? now : new Date(previous.getTime() + 1);
}

async function lockIds(run: RunSql, ids: readonly string[]): Promise<void> {
  if (new Set(ids).size !== ids.length)
    throw badInput([{ name: 'ids', reason: 'must not repeat an id within one call' }]);
  // The locks are taken in the subquery's order (a sort above the call would not order the calls).
  await run(
    `select pg_advisory_xact_lock(hashtextextended(id, 0)) from (select id from unnest($1::text[]) as id order by id) ordered`,
    [ids],
  );
}

/**
 * `committed`: told the ids a write touched once it has committed (the process's record version
 * cache drops them at once, so that this process never answers its own writes with an old version;
 * other processes hear of them by NOTIFY).
 */
export function createCatalogWrites(deps: {
  orm: Orm;
  recordChange: ChangeRecorder;
  clock?: () => Date;
  committed?: (ids: readonly string[]) => void;
}) {
  const clock = deps.clock ?? (() => new Date());
  const inTransaction = async <T>(ids: readonly string[], work: (em: EntityManager) => Promise<T>): Promise<T> => {
    const result = await deps.orm.em.fork().transactional(work);
    deps.committed?.(ids);
    return result;
  };
  const first = async (docs: Promise<string[]>): Promise<string> => (await docs)[0]!;

  /**
   * Re-renders loaded records with a new lifecycle (`next` returns null for "no change") and records
   * the changes. Returns the docs in the order of `ids`.
   */
  function transitionMany(
    ids: readonly string[],
    next: (record: LearningOpportunityRecord, now: Date) => LearningOpportunityRecord | null,
  ): Promise<string[]> {
    return inTransaction(ids, async (em) => {
      const run = sqlOf(em);
      await lockIds(run, ids);
      const loaded = await loadRecords(em, ids);
      const now = clock();
      const changes: Change[] = [];
      const written: string[] = [];
      const docs = ids.map((id, i) => {
        const found = loaded.get(id);
        if (!found)
          throw notFound(ids.length === 1 ? `Learning opportunity ${id}` : `Learning opportunity ${id} (ids[${i}])`);
        const changed = next(found.record, now);
        if (!changed) return found.entity.doc;
        const doc = renderRecord(changed);
        changes.push({
          resourceId: id,
          before: { status: found.record.status, doc: found.entity.doc },
          after: { status: changed.status, doc },
          at: changed.updatedAt,
        });
        written.push(doc);
        return doc;
      });
      await writeDocs(run, written, 'lifecycle');
      await deps.recordChange(em, changes);
      return docs;
    });
  }

  const publishNext = (record: LearningOpportunityRecord, now: Date): LearningOpportunityRecord | null => {
    if (record.status === 'PUBLISHED') return null;
    const updatedAt = nextUpdatedAt(record.updatedAt, now);
    return { ...record, status: 'PUBLISHED', publishedAt: updatedAt, updatedAt };
  };

  /**
   * Creates drafts or replaces the content of existing records; an identical save changes nothing.
   * Returns the docs in the order given.
   */
  function upsertMany(contents: readonly LearningOpportunityContent[]): Promise<string[]> {
    const ids = contents.map((c) => c.id);
    return inTransaction(ids, async (em) => {
      const run = sqlOf(em);
      await lockIds(run, ids);
      // Read-only (no identity map): the transaction's end has nothing to compare.
      const found = await em.find(
        LearningOpportunity,
        { id: { $in: ids } },
        { populate: ['doc'], disableIdentityMap: true },
      );
      const existing = new Map(found.map((entity) => [entity.id, entity]));
      const now = clock();
      const changes: Change[] = [];
      const created: string[] = [];
      const replaced: { id: string; doc: string }[] = [];
      const docs = contents.map((content) => {
        const stored = existing.get(content.id);
        if (!stored) {
          const doc = renderRecord({ ...content, status: 'DRAFT', publishedAt: null, createdAt: now, updatedAt: now });
          changes.push({ resourceId: content.id, before: null, after: { status: 'DRAFT', doc }, at: now });
          created.push(doc);
          return doc;
        }
        const lifecycle = lifecycleOf(stored);
        // Rendered with the old timestamps, an unchanged record gives back exactly the stored bytes.
        if (renderRecord({ ...content, ...lifecycle }) === stored.doc) return stored.doc;
        const record: LearningOpportunityRecord = {
          ...content,
          ...lifecycle,
          updatedAt: nextUpdatedAt(lifecycle.updatedAt, now),
        };
        const doc = renderRecord(record);
        changes.push({
          resourceId: content.id,
          before: { status: lifecycle.status, doc: stored.doc },
          after: { status: record.status, doc },
          at: record.updatedAt,
        });
        replaced.push({ id: content.id, doc });
        return doc;
      });
      // Old nested rows go first, then one statement writes the new records and the replaced ones.
      await deleteNestedRows(
        run,
        replaced.map((r) => r.id),
      );
      await writeDocs(run, [...created, ...replaced.map((r) => r.doc)], 'replace');
      await deps.recordChange(em, changes);
      return docs;
    });
  }

  return {
    upsertMany,
    upsert: (content: LearningOpportunityContent): Promise<string> => first(upsertMany([content])),

    /** DRAFT or ARCHIVED -> PUBLISHED; publishing a published record changes nothing. */
    publishMany: (ids: readonly string[]): Promise<string[]> => transitionMany(ids, publishNext),
    publish: (id: string): Promise<string> => first(transitionMany([id], publishNext)),

    /** PUBLISHED -> ARCHIVED; archiving an archived record changes nothing; a draft cannot be archived. */
    archive(id: string): Promise<string> {
      return first(
        transitionMany([id], (record, now) => {
          if (record.status === 'ARCHIVED') return null;
          if (record.status === 'DRAFT') {
            throw new AppError(
              'INVALID_STATE_TRANSITION',
              `Learning opportunity ${id} is a draft; only a published record can be archived (delete a draft instead)`,
            );
          }
          return { ...record, status: 'ARCHIVED', updatedAt: nextUpdatedAt(record.updatedAt, now) };
        }),
      );
    },

    /** Removes a record and its nested items for good; returns its last internal view. */
    delete(id: string): Promise<string> {
      return inTransaction([id], async (em) => {
        await lockIds(sqlOf(em), [id]);
        const existing = await em.findOne(LearningOpportunity, id, { populate: ['doc'] });
        if (!existing) throw notFound(`Learning opportunity ${id}`);
        const before = { status: lifecycleOf(existing).status, doc: existing.doc };
        await em.nativeDelete(LearningOpportunity, { id });
        await deps.recordChange(em, [{ resourceId: id, before, after: null, at: clock() }]);
        return existing.doc;
      });
    },
  };
}
