// Between the entity graph and the record the renderer takes.
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  Accolade,
  Deadline,
  ExternalReview,
  Faq,
  type ILearningOpportunity,
  LearningOpportunity,
  Session,
} from './entities.ts';
import type { DeadlineType, Format, LearningOpportunityContent, LearningOpportunityRecord, Lifecycle, Status } from './record.ts';

export const NESTED_PROPERTIES = ['sessions', 'deadlines', 'faqs', 'externalReviews', 'accolades'] as const;

export function lifecycleOf(entity: ILearningOpportunity): Lifecycle {
  return { status: entity.status as Status, publishedAt: entity.publishedAt ?? null, createdAt: entity.createdAt, updatedAt: entity.updatedAt };
}

/** Scalar columns of the row from content and lifecycle. */
export function rowOf(record: LearningOpportunityRecord, doc: string) {
  return {
    id: record.id,
    title: record.title,
    summary: record.summary,
    description: record.description,
    url: record.url,
    providerName: record.provider?.name ?? null,
    providerUrl: record.provider?.url ?? null,
    format: record.format,
    language: record.language,
    topics: record.topics,
    priceAmount: record.price?.amount ?? null,
    priceCurrency: record.price?.currency ?? null,
    status: record.status,
    publishedAt: record.publishedAt,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    doc,
  };
}

/** Creates the nested rows of `content` (in the given order) for a managed record. */
export function createNestedItems(em: EntityManager, owner: ILearningOpportunity, content: LearningOpportunityContent): void {
  const common = (id: string, position: number) => ({ itemId: id, learningOpportunity: owner, position });
  content.sessions.forEach((s, i) =>
    em.create(Session, { ...common(s.id, i), startsAt: s.startsAt, endsAt: s.endsAt, timezone: s.timezone, format: s.format, location: s.location, capacity: s.capacity }),
  );
  content.deadlines.forEach((d, i) => em.create(Deadline, { ...common(d.id, i), type: d.type, dueAt: d.dueAt, description: d.description }));
  content.faqs.forEach((f, i) => em.create(Faq, { ...common(f.id, i), question: f.question, answer: f.answer }));
  content.externalReviews.forEach((r, i) =>
    em.create(ExternalReview, {
      ...common(r.id, i),
      source: r.source,
      url: r.url,
      rating: r.rating,
      maxRating: r.maxRating,
      reviewCount: r.reviewCount,
      excerpt: r.excerpt,
      reviewedAt: r.reviewedAt,
    }),
  );
  content.accolades.forEach((a, i) => em.create(Accolade, { ...common(a.id, i), title: a.title, issuer: a.issuer, awardedAt: a.awardedAt, url: a.url }));
}

/** Deletes every nested row of these records (before their content is replaced): one statement per table. */
export async function deleteNestedItems(em: EntityManager, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const where = { learningOpportunity: { $in: [...ids] } };
  await em.nativeDelete(Session, where);
  await em.nativeDelete(Deadline, where);
  await em.nativeDelete(Faq, where);
  await em.nativeDelete(ExternalReview, where);
  await em.nativeDelete(Accolade, where);
}

export type LoadedRecord = { entity: ILearningOpportunity; record: LearningOpportunityRecord };

/** Loads records with their five collections (one query per collection, whatever their number) for re-rendering. */
export async function loadRecords(em: EntityManager, ids: readonly string[]): Promise<Map<string, LoadedRecord>> {
  const entities = await em.find(LearningOpportunity, { id: { $in: [...ids] } }, { populate: ['doc', ...NESTED_PROPERTIES] });
  return new Map(entities.map((entity) => [entity.id, { entity, record: recordOf(entity) }]));
}

/** The record the renderer takes, from an entity loaded with its five collections. */
export function recordOf(entity: ILearningOpportunity): LearningOpportunityRecord {
  return {
    id: entity.id,
    title: entity.title,
    summary: entity.summary ?? null,
    description: entity.description ?? null,
    url: entity.url ?? null,
    provider: entity.providerName ? { name: entity.providerName, url: entity.providerUrl ?? null } : null,
    format: entity.format as Format,
    language: entity.language ?? null,
    topics: entity.topics,
    price: entity.priceAmount && entity.priceCurrency ? { amount: entity.priceAmount, currency: entity.priceCurrency } : null,
    ...lifecycleOf(entity),
    sessions: entity.sessions.getItems().map((s) => ({
      id: s.itemId,
      startsAt: s.startsAt,
      endsAt: s.endsAt ?? null,
      timezone: s.timezone ?? null,
      format: (s.format ?? null) as Format | null,
      location: s.location ?? null,
      capacity: s.capacity ?? null,
    })),
    deadlines: entity.deadlines.getItems().map((d) => ({ id: d.itemId, type: d.type as DeadlineType, dueAt: d.dueAt, description: d.description ?? null })),
    faqs: entity.faqs.getItems().map((f) => ({ id: f.itemId, question: f.question, answer: f.answer })),
    externalReviews: entity.externalReviews.getItems().map((r) => ({
      id: r.itemId,
      source: r.source,
      url: r.url ?? null,
      rating: r.rating ?? null,
      maxRating: r.maxRating ?? null,
      reviewCount: r.reviewCount ?? null,
      excerpt: r.excerpt ?? null,
      reviewedAt: r.reviewedAt ?? null,
    })),
    accolades: entity.accolades.getItems().map((a) => ({ id: a.itemId, title: a.title, issuer: a.issuer ?? null, awardedAt: a.awardedAt ?? null, url: a.url ?? null })),
  };
}
