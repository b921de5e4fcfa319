// What a catalog write changes, decided before anything is written: for each record its new doc
// (rendered by the one renderer), whether it changed, and the change to record. Pure: the records as
// loaded and the time in, the docs and changes out; catalog-writes.ts runs the statements.
import { AppError, notFound } from '../kernel/errors.ts';
import type { Change } from '../events/record-change.ts';
import {
  type LearningOpportunityContent,
  type LearningOpportunityRecord,
  type Lifecycle,
  renderRecord,
} from './record.ts';

/** A record's next state under a lifecycle move at `now`; null: no change. */
export type Transition = (record: LearningOpportunityRecord, now: Date) => LearningOpportunityRecord | null;

/** updatedAt moves forward on every observable change, even twice within one millisecond. */
export function nextUpdatedAt(previous: Date, now: Date): Date {
  return now > previous ? now : new Date(previous.getTime() + 1);
}

/** DRAFT or ARCHIVED -> PUBLISHED; publishing a published record changes nothing. */
export const publishNext: Transition = (record, now) => {
  if (record.status === 'PUBLISHED') return null;
  const updatedAt = nextUpdatedAt(record.updatedAt, now);
  return { ...record, status: 'PUBLISHED', publishedAt: updatedAt, updatedAt };
};

/** PUBLISHED -> ARCHIVED; archiving an archived record changes nothing; a draft cannot be archived. */
export const archiveNext: Transition = (record, now) => {
  if (record.status === 'ARCHIVED') return null;
  if (record.status === 'DRAFT') {
    throw new AppError(
      'INVALID_STATE_TRANSITION',
      `Learning opportunity ${record.id} is a draft; only a published record can be archived (delete a draft instead)`,
    );
  }
  return { ...record, status: 'ARCHIVED', updatedAt: nextUpdatedAt(record.updatedAt, now) };
};

/** A stored record with its doc, as a lifecycle move re-renders it. */
export type CurrentRecord = { doc: string; record: LearningOpportunityRecord };

/** The docs in the order of `ids`, the ones to write and the changes of a lifecycle move. */
export function planTransitions(
  ids: readonly string[],
  loaded: Map<string, CurrentRecord>,
  next: Transition,
  now: Date,
) {
  const changes: Change[] = [];
  const written: string[] = [];
  const docs = ids.map((id, i) => {
    const found = loaded.get(id);
    if (!found)
      throw notFound(ids.length === 1 ? `Learning opportunity ${id}` : `Learning opportunity ${id} (ids[${i}])`);
    const changed = next(found.record, now);
    if (!changed) return found.doc;
    const doc = renderRecord(changed);
    changes.push({
      resourceId: id,
      before: { status: found.record.status, doc: found.doc },
      after: { status: changed.status, doc },
      at: changed.updatedAt,
    });
    written.push(doc);
    return doc;
  });
  return { docs, written, changes };
}

/** A stored record as an upsert needs it: its lifecycle and its doc. */
export type StoredRecord = Lifecycle & { doc: string };

/** The docs in the order given, the new and replaced ones and the changes of an upsert; an identical save changes nothing. */
export function planUpserts(
  contents: readonly LearningOpportunityContent[],
  existing: Map<string, StoredRecord>,
  now: Date,
) {
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
    const { doc: storedDoc, ...lifecycle } = stored;
    // Rendered with the old timestamps, an unchanged record gives back exactly the stored bytes.
    if (renderRecord({ ...content, ...lifecycle }) === storedDoc) return storedDoc;
    const record: LearningOpportunityRecord = {
      ...content,
      ...lifecycle,
      updatedAt: nextUpdatedAt(lifecycle.updatedAt, now),
    };
    const doc = renderRecord(record);
    changes.push({
      resourceId: content.id,
      before: { status: lifecycle.status, doc: storedDoc },
      after: { status: record.status, doc },
      at: record.updatedAt,
    });
    replaced.push({ id: content.id, doc });
    return doc;
  });
  return { docs, changes, created, replaced };
}
