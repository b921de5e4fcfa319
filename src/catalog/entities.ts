// MikroORM entities of the catalog. The content platform's nested items keep their own supplied
// ids (itemId) and the order in which they were given (position); `pk` is ours.
import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

const LearningOpportunitySchema = defineEntity({
  name: 'LearningOpportunity',
  tableName: 'learning_opportunity',
  properties: {
    id: p.uuid().primary(),
    title: p.text(),
    summary: p.text().nullable(),
    description: p.text().nullable(),
    url: p.text().nullable(),
    providerName: p.text().nullable(),
    providerUrl: p.text().nullable(),
    format: p.text(),
    language: p.text().nullable(),
    // jsonb, not text[]: MikroORM's array type mangles items such as "NULL" or ' padded '.
    topics: p.json<string[]>(),
    priceAmount: p.decimal('string').precision(14).scale(2).nullable(),
    priceCurrency: p.string().length(3).nullable(),
    status: p.text(),
    publishedAt: p.datetime(3).nullable(),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
    /** The rendered record (renderRecord), written in the same transaction as every change. */
    doc: p.text().lazy(),
    sessions: () => p.oneToMany(Session).mappedBy('learningOpportunity').orderBy({ position: 'asc' }),
    deadlines: () => p.oneToMany(Deadline).mappedBy('learningOpportunity').orderBy({ position: 'asc' }),
    faqs: () => p.oneToMany(Faq).mappedBy('learningOpportunity').orderBy({ position: 'asc' }),
    externalReviews: () => p.oneToMany(ExternalReview).mappedBy('learningOpportunity').orderBy({ position: 'asc' }),
    accolades: () => p.oneToMany(Accolade).mappedBy('learningOpportunity').orderBy({ position: 'asc' }),
  },
});

const nestedItem = {
  pk: p.bigint('number').primary().autoincrement(),
  itemId: p.uuid(),
  learningOpportunity: () => p.manyToOne(LearningOpportunitySchema).deleteRule('cascade'),
  position: p.integer(),
};

export const Session = defineEntity({
  name: 'Session',
  tableName: 'lo_session',
  properties: {
    ...nestedItem,
    startsAt: p.datetime(3),
    endsAt: p.datetime(3).nullable(),
    timezone: p.text().nullable(),
    format: p.text().nullable(),
    location: p
      .json<{ name: string | null; address: string | null; city: string | null; country: string | null }>()
      .nullable(),
    capacity: p.integer().nullable(),
  },
});

export const Deadline = defineEntity({
  name: 'Deadline',
  tableName: 'lo_deadline',
  properties: {
    ...nestedItem,
    type: p.text(),
    dueAt: p.datetime(3),
    description: p.text().nullable(),
  },
});

export const Faq = defineEntity({
  name: 'Faq',
  tableName: 'lo_faq',
  properties: {
    ...nestedItem,
    question: p.text(),
    answer: p.text(),
  },
});

export const ExternalReview = defineEntity({
  name: 'ExternalReview',
  tableName: 'lo_external_review',
  properties: {
    ...nestedItem,
    source: p.text(),
    url: p.text().nullable(),
    rating: p.double().$type<number>().nullable(),
    maxRating: p.double().$type<number>().nullable(),
    reviewCount: p.integer().nullable(),
    excerpt: p.text().nullable(),
    reviewedAt: p.datetime(3).nullable(),
  },
});

export const Accolade = defineEntity({
  name: 'Accolade',
  tableName: 'lo_accolade',
  properties: {
    ...nestedItem,
    title: p.text(),
    issuer: p.text().nullable(),
    awardedAt: p.datetime(3).nullable(),
    url: p.text().nullable(),
  },
});

export const LearningOpportunity = LearningOpportunitySchema;
export type ILearningOpportunity = InferEntity<typeof LearningOpportunity>;

export const catalogEntities = [LearningOpportunity, Session, Deadline, Faq, ExternalReview, Accolade];
