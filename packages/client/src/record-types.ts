// Generated from src/catalog/record-schema.ts (through the OpenAPI components) by `npm run generate`: do not edit.
// The public /v1 record as a consumer sees it: plain JSON, timestamps as strings.

/** A complete, self-contained record; also the `data` of snapshot webhook events. */
export type LearningOpportunity = {
  id: Uuid;
  /** Never blank. */
  title: string;
  summary: string | null;
  description: string | null;
  /** Canonical page of the opportunity. */
  url: string | null;
  provider: {
    name: string;
    url: string | null;
  } | null;
  format: Format;
  /** BCP 47 language tag. */
  language: string | null;
  topics: string[];
  price: {
    /** Decimal string with two fraction digits. */
    amount: string;
    /** ISO 4217 code. */
    currency: string;
  } | null;
  /** REST shows only PUBLISHED; ARCHIVED appears in the snapshot of an ARCHIVED event. */
  status: 'PUBLISHED' | 'ARCHIVED';
  publishedAt: Timestamp;
  createdAt: Timestamp;
  /** Moves whenever the public snapshot changes; the list is sorted by it. */
  updatedAt: Timestamp;
  sessions: Session[];
  deadlines: Deadline[];
  faqs: Faq[];
  externalReviews: ExternalReview[];
  accolades: Accolade[];
};

/** Lower-case UUID supplied by the content platform. */
export type Uuid = string;

export type Format = 'ONLINE' | 'IN_PERSON' | 'HYBRID';

/** UTC, exactly three fraction digits. */
export type Timestamp = string;

export type Session = {
  id: Uuid;
  startsAt: Timestamp;
  endsAt: Timestamp | null;
  /** IANA time zone. */
  timezone: string | null;
  format: Format | null;
  location: Location | null;
  capacity: number | null;
};

export type Location = {
  name: string | null;
  address: string | null;
  city: string | null;
  country: string | null;
};

export type Deadline = {
  id: Uuid;
  type: 'APPLICATION' | 'ENROLLMENT' | 'PAYMENT' | 'OTHER';
  dueAt: Timestamp;
  description: string | null;
};

export type Faq = {
  id: Uuid;
  question: string;
  answer: string;
};

export type ExternalReview = {
  id: Uuid;
  source: string;
  url: string | null;
  rating: number | null;
  maxRating: number | null;
  reviewCount: number | null;
  excerpt: string | null;
  reviewedAt: Timestamp | null;
};

export type Accolade = {
  id: Uuid;
  title: string;
  issuer: string | null;
  awardedAt: Timestamp | null;
  url: string | null;
};
