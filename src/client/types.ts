// The public /v1 shapes as a consumer sees them (CONTRACT.md section 1): plain JSON, timestamps as
// strings. Defined here rather than imported from the service so that the client has no dependency
// on the service's internals (its record type holds Dates, not strings). New fields may appear in
// v1 at any time (additive changes); a consumer ignores the ones it does not know.

/** `YYYY-MM-DDThh:mm:ss.sssZ`, UTC, exactly three fraction digits. */
export type Timestamp = string;

export type Format = 'ONLINE' | 'IN_PERSON' | 'HYBRID';
export type DeadlineType = 'APPLICATION' | 'ENROLLMENT' | 'PAYMENT' | 'OTHER';
/** REST shows only PUBLISHED records; ARCHIVED appears in ARCHIVED event snapshots. */
export type LearningOpportunityStatus = 'PUBLISHED' | 'ARCHIVED';

export type Location = { name: string | null; address: string | null; city: string | null; country: string | null };

export type Session = {
  id: string;
  startsAt: Timestamp;
  endsAt: Timestamp | null;
  timezone: string | null;
  format: Format | null;
  location: Location | null;
  capacity: number | null;
};

export type Deadline = { id: string; type: DeadlineType; dueAt: Timestamp; description: string | null };

export type Faq = { id: string; question: string; answer: string };

export type ExternalReview = {
  id: string;
  source: string;
  url: string | null;
  rating: number | null;
  maxRating: number | null;
  reviewCount: number | null;
  excerpt: string | null;
  reviewedAt: Timestamp | null;
};

export type Accolade = { id: string; title: string; issuer: string | null; awardedAt: Timestamp | null; url: string | null };

/** One learning opportunity: `GET /v1/learning-opportunities/{id}`, a list item, an event's `data`. */
export type LearningOpportunity = {
  id: string;
  title: string;
  summary: string | null;
  description: string | null;
  url: string | null;
  provider: { name: string; url: string | null } | null;
  format: Format;
  language: string | null;
  topics: string[];
  /** `amount` is a decimal string ("1200.00"), never a float. */
  price: { amount: string; currency: string } | null;
  status: LearningOpportunityStatus;
  publishedAt: Timestamp | null;
  createdAt: Timestamp;
  updatedAt: Timestamp;
  sessions: Session[];
  deadlines: Deadline[];
  faqs: Faq[];
  externalReviews: ExternalReview[];
  accolades: Accolade[];
};

export type Pagination = { totalCount: number; limit: number; offset: number };

/** `GET /v1/learning-opportunities`: ordered by updatedAt descending, then id descending. */
export type LearningOpportunityPage = { results: LearningOpportunity[]; pagination: Pagination };

export type EventType = 'LEARNING_OPPORTUNITY_PUBLISHED' | 'LEARNING_OPPORTUNITY_UPDATED' | 'LEARNING_OPPORTUNITY_ARCHIVED' | 'LEARNING_OPPORTUNITY_DELETED';

/** One change: an item of `GET /v1/events`, byte for byte the webhook body of the same event. */
export type CatalogEvent = {
  id: string;
  type: EventType;
  occurredAt: Timestamp;
  resource: { type: 'LEARNING_OPPORTUNITY'; id: string };
  /** The record after the change; null for DELETED. */
  data: LearningOpportunity | null;
};

/** `GET /v1/events`: `next` is always a cursor to continue from (passed back as `after`). */
export type EventPage = { results: CatalogEvent[]; pagination: { limit: number; after: string | null; next: string; hasMore: boolean } };

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
