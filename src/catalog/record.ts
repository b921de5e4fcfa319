// The record of a learning opportunity inside the service (types from record-schema.ts) and its
// one renderer. REST reads, list pages, GraphQL and event snapshots all serve the bytes produced
// here (stored in learning_opportunity.doc).
import { z } from 'zod';
import {
  type AccoladeSchema,
  type DeadlineSchema,
  DEADLINE_TYPES,
  type ExternalReviewSchema,
  type FaqSchema,
  FORMATS,
  type LocationSchema,
  RecordSchema,
  type SessionSchema,
  STATUSES,
} from './record-schema.ts';

export { DEADLINE_TYPES, FORMATS, STATUSES };

export type Format = (typeof FORMATS)[number];
export type DeadlineType = (typeof DEADLINE_TYPES)[number];
export type Status = (typeof STATUSES)[number];

// z.output: the decoded side of the timestamp codecs (Date).
export type Location = z.output<typeof LocationSchema>;
export type SessionItem = z.output<typeof SessionSchema>;
export type DeadlineItem = z.output<typeof DeadlineSchema>;
export type FaqItem = z.output<typeof FaqSchema>;
export type ExternalReviewItem = z.output<typeof ExternalReviewSchema>;
export type AccoladeItem = z.output<typeof AccoladeSchema>;

export type LearningOpportunityRecord = z.output<typeof RecordSchema>;

/** What the service owns. */
export type Lifecycle = Pick<LearningOpportunityRecord, 'status' | 'publishedAt' | 'createdAt' | 'updatedAt'>;

/** What the content platform owns: everything but status and timestamps. */
export type LearningOpportunityContent = Omit<LearningOpportunityRecord, keyof Lifecycle>;

/**
 * Renders the public JSON of one record: every field of the schema, in the schema's order, with
 * null for absent optionals, timestamps encoded as ISO strings; so equal states always render to
 * equal bytes. Throws if the record does not fit the schema (an unknown or missing field).
 */
export function renderRecord(r: LearningOpportunityRecord): string {
  return JSON.stringify(z.encode(RecordSchema, r));
}

/**
 * The record a stored doc holds, or null when the doc no longer fits the schema: a field added or
 * removed since it was rendered, before `catalog rerender` rewrote it (the caller then reads the
 * record from its rows).
 */
export function recordOfDoc(doc: string): LearningOpportunityRecord | null {
  const parsed = z.safeDecode(RecordSchema, JSON.parse(doc));
  return parsed.success ? parsed.data : null;
}
