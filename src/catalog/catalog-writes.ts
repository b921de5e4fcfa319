// The content platform's writes. Each call is one transaction, for one record or a batch: the
// changes, the re-rendered records and their events (with delivery jobs) commit together or not at
// all. A single-record write is a batch of one. Writers of the same id are serialised by
// transaction-scoped advisory locks, taken in id order so that two batches cannot deadlock; in one
// process they first queue in memory (id-gate.ts), so that waiting writers hold no connection.
// Set-based: a batch of n records costs one lock statement, one load, one statement clearing the
// nested rows of replaced records and one writing the records (write-docs.ts, the statement seed
// uses too), then the events of the changed records: one insert, one receiver query and one insert
// of jobs. The statements go through the transaction's own connection (MikroORM's, so that the
// events and their jobs share it) with bound parameters: MikroORM would inline a batch's megabytes
// of docs into the SQL text. What changes is decided first (write-plans.ts, pure).
import type { EntityManager } from '@mikro-orm/postgresql';
import { badInput, notFound } from '../kernel/errors.ts';
import type { ChangeRecorder } from '../events/record-change.ts';
import type { Orm } from '../db/orm.ts';
import { LearningOpportunity } from './entities.ts';
import { lifecycleOf, loadRecords } from './entity-mapping.ts';
import { type LearningOpportunityContent, recordOfDoc, type Status } from './record.ts';
import {
  archiveNext,
  type CurrentRecord,
  planTransitions,
  planUpserts,
  publishNext,
  type StoredRecord,
  type Transition,
} from './write-plans.ts';
import { type RunSql, sqlOf } from '../db/transaction-sql.ts';
import { recordLockSql } from '../db/record-locks.ts';
import { deleteNestedRows, writeDocs } from './write-docs.ts';
import { createIdGate, type IdGate } from './id-gate.ts';
import { ROUTING_LOCK_KEY } from '../db/routing-lock.ts';
import { retryConflicts } from '../db/pg-transaction.ts';

export type CatalogWrites = ReturnType<typeof createCatalogWrites>;

async function lockIds(run: RunSql, ids: readonly string[]): Promise<void> {
  if (new Set(ids).size !== ids.length)
    throw badInput([{ name: 'ids', reason: 'must not repeat an id within one call' }]);
  // The locks are taken in the subquery's order (a sort above the call would not order the calls);
  // and, shared, the lock that a change of a receiver's view takes exclusive (db/routing-lock.ts).
  await run(
    `select pg_advisory_xact_lock_shared(${ROUTING_LOCK_KEY}), (select count(${recordLockSql('id')})
       from (select id from unnest($1::text[]) as id order by id) ordered)`,
    [ids],
  );
}

type StoredRow = {
  id: string;
  status: Status;
  published_at: Date | null;
  created_at: Date;
  updated_at: Date;
  doc: string;
};

/** The records of `ids` present, as an upsert compares with them: one plain statement, no entities. */
async function loadStored(run: RunSql, ids: readonly string[]): Promise<Map<string, StoredRecord>> {
  const rows = await run<StoredRow>(
    'select id, status, published_at, created_at, updated_at, doc from learning_opportunity where id = any($1::uuid[])',
    [ids],
  );
  const at = (value: Date | string) => new Date(value);
  return new Map(
    rows.map((r) => [
      r.id,
      {
        status: r.status,
        publishedAt: r.published_at === null ? null : at(r.published_at),
        createdAt: at(r.created_at),
        updatedAt: at(r.updated_at),
        doc: r.doc,
      },
    ]),
  );
}

/**
 * The records of `ids` present, as a lifecycle move re-renders them: each from its doc (one plain
 * statement), or from its rows where the doc no longer fits the schema (a field added or removed,
 * before `catalog rerender`).
 */
async function loadCurrent(em: EntityManager, ids: readonly string[]): Promise<Map<string, CurrentRecord>> {
  const current = new Map<string, CurrentRecord>();
  const stale: string[] = [];
  for (const [id, { doc }] of await loadStored(sqlOf(em), ids)) {
    const record = recordOfDoc(doc);
    if (record) current.set(id, { doc, record });
    else stale.push(id);
  }
  if (stale.length)
    for (const [id, { entity, record }] of await loadRecords(em, stale)) current.set(id, { doc: entity.doc, record });
  return current;
}

type Deps = {
  orm: Orm;
  recordChange: ChangeRecorder;
  clock?: () => Date;
  committed?: (ids: readonly string[]) => void;
  /** The process's queue per id (made by createCatalogWrites). */
  gate: IdGate;
};

const now = (deps: Deps): Date => deps.clock?.() ?? new Date();

/** One transaction over `ids`, entered once no other call of this process holds them; `committed` hears of them once it has committed. */
async function inTransaction<T>(deps: Deps, ids: readonly string[], work: (em: EntityManager) => Promise<T>) {
  const leave = await deps.gate.enter(ids);
  try {
    // A deadlock's victim (a writer meeting an operator's disable or the worker on the same rows) runs again, whole.
    const result = await retryConflicts(() => deps.orm.em.fork().transactional(work));
    deps.committed?.(ids);
    return result;
  } finally {
    leave();
  }
}

/**
 * Re-renders loaded records with a new lifecycle (`next` returns null for "no change") and records
 * the changes. Returns the docs in the order of `ids`.
 */
function transitionMany(deps: Deps, ids: readonly string[], next: Transition): Promise<string[]> {
  return inTransaction(deps, ids, async (em) => {
    const run = sqlOf(em);
    await lockIds(run, ids);
    const { docs, written, changes } = planTransitions(ids, await loadCurrent(em, ids), next, now(deps));
    await writeDocs(run, written, 'lifecycle');
    await deps.recordChange(em, changes);
    return docs;
  });
}

/**
 * Creates drafts or replaces the content of existing records; an identical save changes nothing.
 * Returns the docs in the order given.
 */
function upsertMany(deps: Deps, contents: readonly LearningOpportunityContent[]): Promise<string[]> {
  const ids = contents.map((c) => c.id);
  return inTransaction(deps, ids, async (em) => {
    const run = sqlOf(em);
    await lockIds(run, ids);
    const existing = await loadStored(run, ids);
    const { docs, changes, created, replaced } = planUpserts(contents, existing, now(deps));
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

/** Removes a record and its nested items for good; returns its last internal view. */
function deleteOne(deps: Deps, id: string): Promise<string> {
  return inTransaction(deps, [id], async (em) => {
    await lockIds(sqlOf(em), [id]);
    const existing = await em.findOne(LearningOpportunity, id, { populate: ['doc'] });
    if (!existing) throw notFound(`Learning opportunity ${id}`);
    const before = { status: lifecycleOf(existing).status, doc: existing.doc };
    await em.nativeDelete(LearningOpportunity, { id });
    await deps.recordChange(em, [{ resourceId: id, before, after: null, at: now(deps) }]);
    return existing.doc;
  });
}

/**
 * `committed`: told the ids a write touched once it has committed (the process's record version
 * cache drops them at once, so that this process never answers its own writes with an old version;
 * other processes hear of them by NOTIFY).
 */
export function createCatalogWrites(options: Omit<Deps, 'gate'>) {
  const deps: Deps = { ...options, gate: createIdGate() };
  const first = async (docs: Promise<string[]>): Promise<string> => (await docs)[0]!;
  return {
    upsertMany: (contents: readonly LearningOpportunityContent[]) => upsertMany(deps, contents),
    upsert: (content: LearningOpportunityContent): Promise<string> => first(upsertMany(deps, [content])),

    /** DRAFT or ARCHIVED -> PUBLISHED; publishing a published record changes nothing. */
    publishMany: (ids: readonly string[]): Promise<string[]> => transitionMany(deps, ids, publishNext),
    publish: (id: string): Promise<string> => first(transitionMany(deps, [id], publishNext)),

    /** PUBLISHED -> ARCHIVED; archiving an archived record changes nothing; a draft cannot be archived. */
    archive: (id: string): Promise<string> => first(transitionMany(deps, [id], archiveNext)),

    /** Removes a record and its nested items for good; returns its last internal view. */
    delete: (id: string): Promise<string> => deleteOne(deps, id),
  };
}
