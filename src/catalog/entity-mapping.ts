// From the entity graph to the record the renderer takes: the rows are read back through MikroORM
// (`catalog rerender` re-renders records from their rows, and so does a lifecycle move for a record
// whose doc no longer fits the schema); they are written by write-docs.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import { type ILearningOpportunity, LearningOpportunity } from './entities.ts';
import type { DeadlineType, Format, LearningOpportunityRecord, Lifecycle, Status } from './record.ts';

export const NESTED_PROPERTIES = ['sessions', 'deadlines', 'faqs', 'externalReviews', 'accolades'] as const;

export function lifecycleOf(entity: ILearningOpportunity): Lifecycle {
  return {
    status: entity.status as Status,
    publishedAt: entity.publishedAt ?? null,
    createdAt: entity.createdAt,
    updatedAt: entity.updatedAt,
  };
}

export type LoadedRecord = { entity: ILearningOpportunity; record: LearningOpportunityRecord };

/**
 * Loads records with their five collections (one query per collection, whatever their number) for
 * re-rendering. Read-only: the entities are not managed, so the transaction's closing flush does not
 * compare thousands of nested entities that nothing changed (writes go through write-docs.ts).
 */
export async function loadRecords(em: EntityManager, ids: readonly string[]): Promise<Map<string, LoadedRecord>> {
  const entities = await em.find(
    LearningOpportunity,
    { id: { $in: [...ids] } },
    { populate: ['doc', ...NESTED_PROPERTIES], disableIdentityMap: true },
  );
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
    price:
      entity.priceAmount && entity.priceCurrency
        ? { amount: entity.priceAmount, currency: entity.priceCurrency }
        : null,
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
    deadlines: entity.deadlines
      .getItems()
      .map((d) => ({ id: d.itemId, type: d.type as DeadlineType, dueAt: d.dueAt, description: d.description ?? null })),
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
    accolades: entity.accolades.getItems().map((a) => ({
      id: a.itemId,
      title: a.title,
      issuer: a.issuer ?? null,
      awardedAt: a.awardedAt ?? null,
      url: a.url ?? null,
    })),
  };
}
