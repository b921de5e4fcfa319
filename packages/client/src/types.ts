// The public /v1 shapes as a consumer sees them (docs/contract.md, "The record"): plain JSON, timestamps as
// strings. The record's types are generated from the service's record schema (record-types.ts,
// `npm run generate`), so the client has no dependency on the service's internals at run time.
// New fields may appear in v1 at any time (additive changes); a consumer ignores the ones it does
// not know.
import type { Deadline, LearningOpportunity, Timestamp } from './record-types.ts';

export type * from './record-types.ts';

export type DeadlineType = Deadline['type'];
/** REST shows only PUBLISHED records; ARCHIVED appears in ARCHIVED event snapshots. */
export type LearningOpportunityStatus = LearningOpportunity['status'];

/** `next`: the offset of the following page (a page may hold fewer than `limit` records before the end: its bytes are bounded); `hasMore`: records follow it. */
export type Pagination = { totalCount: number; limit: number; offset: number; next?: number; hasMore?: boolean };

/** One facet's values over the whole filtered result: the 20 most frequent, most frequent first. */
export type FacetValue = { value: string; count: number };
export type FacetName = 'format' | 'language' | 'topic' | 'provider' | 'country';

/**
 * `GET /v1/learning-opportunities`: ordered by updatedAt descending, then id descending (or by
 * `sort`). With `fields`, each result holds only those members plus `id` and `updatedAt`; `facets`
 * is present when asked for.
 */
export type LearningOpportunityPage = {
  results: LearningOpportunity[];
  pagination: Pagination;
  facets?: Partial<Record<FacetName, FacetValue[]>>;
};

/** The list's parameters (docs/consumers.md, "Filters, search, fields and facets"); lists are sent comma-separated. */
export type LearningOpportunityListParams = {
  limit?: number;
  offset?: number;
  /** Timestamps: a Date or an RFC 3339 string (at most millisecond precision). */
  updatedSince?: Date | string;
  updatedBefore?: Date | string;
  format?: readonly LearningOpportunity['format'][];
  language?: readonly string[];
  topic?: readonly string[];
  provider?: readonly string[];
  country?: readonly string[];
  city?: readonly string[];
  startsFrom?: Date | string;
  startsBefore?: Date | string;
  q?: string;
  sort?: '-updatedAt' | 'updatedAt' | 'nextSessionStartsAt' | 'relevance';
  fields?: readonly (keyof LearningOpportunity)[];
  facets?: readonly FacetName[];
};

/** `LEARNING_OPPORTUNITY_LEFT_VIEW` only in the feed of a view: the record left it (`data` null). */
export type EventType =
  | 'LEARNING_OPPORTUNITY_PUBLISHED'
  | 'LEARNING_OPPORTUNITY_UPDATED'
  | 'LEARNING_OPPORTUNITY_ARCHIVED'
  | 'LEARNING_OPPORTUNITY_DELETED'
  | 'LEARNING_OPPORTUNITY_LEFT_VIEW';

/** One change: an item of `GET /v1/events`, byte for byte the webhook body of the same event. */
export type CatalogEvent = {
  id: string;
  type: EventType;
  occurredAt: Timestamp;
  /** `version` grows with every event of the resource id (docs/contract.md, "Event body"): apply only newer ones. */
  resource: { type: 'LEARNING_OPPORTUNITY'; id: string; version: number };
  /** The record after the change; null for DELETED and LEFT_VIEW. */
  data: LearningOpportunity | null;
};

/** `GET /v1/events`: `next` is always a cursor to continue from (passed back as `after`). */
export type EventPage = {
  results: CatalogEvent[];
  pagination: { limit: number; after: string | null; next: string; hasMore: boolean };
};

export type InvalidParam = { name: string; reason: string };

/** RFC 7807 problem details, as the service sends them with every non-2xx response. */
export type ProblemDetails = {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  /** Present on 400 responses: every rejected parameter with the reason. */
  invalidParams?: InvalidParam[];
  [member: string]: unknown;
};
