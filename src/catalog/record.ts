// The record of a learning opportunity and its one renderer. REST reads, list pages, GraphQL and
// event snapshots all serve the bytes produced here (stored in learning_opportunity.doc).

export const FORMATS = ['ONLINE', 'IN_PERSON', 'HYBRID'] as const;
export const DEADLINE_TYPES = ['APPLICATION', 'ENROLLMENT', 'PAYMENT', 'OTHER'] as const;
export const STATUSES = ['DRAFT', 'PUBLISHED', 'ARCHIVED'] as const;

export type Format = (typeof FORMATS)[number];
export type DeadlineType = (typeof DEADLINE_TYPES)[number];
export type Status = (typeof STATUSES)[number];

export type Location = { name: string | null; address: string | null; city: string | null; country: string | null };
export type SessionItem = {
  id: string;
  startsAt: Date;
  endsAt: Date | null;
  timezone: string | null;
  format: Format | null;
  location: Location | null;
  capacity: number | null;
};
export type DeadlineItem = { id: string; type: DeadlineType; dueAt: Date; description: string | null };
export type FaqItem = { id: string; question: string; answer: string };
export type ExternalReviewItem = {
  id: string;
  source: string;
  url: string | null;
  rating: number | null;
  maxRating: number | null;
  reviewCount: number | null;
  excerpt: string | null;
  reviewedAt: Date | null;
};
export type AccoladeItem = { id: string; title: string; issuer: string | null; awardedAt: Date | null; url: string | null };

/** What the content platform owns: everything but status and timestamps. */
export type LearningOpportunityContent = {
  id: string;
  title: string;
  summary: string | null;
  description: string | null;
  url: string | null;
  provider: { name: string; url: string | null } | null;
  format: Format;
  language: string | null;
  topics: string[];
  price: { amount: string; currency: string } | null;
  sessions: SessionItem[];
  deadlines: DeadlineItem[];
  faqs: FaqItem[];
  externalReviews: ExternalReviewItem[];
  accolades: AccoladeItem[];
};

/** What the service owns. */
export type Lifecycle = { status: Status; publishedAt: Date | null; createdAt: Date; updatedAt: Date };

export type LearningOpportunityRecord = LearningOpportunityContent & Lifecycle;

const iso = (d: Date): string => d.toISOString();
const isoOrNull = (d: Date | null): string | null => (d ? d.toISOString() : null);

/**
 * Renders the public JSON of one record. Every field is listed explicitly, in a fixed order, with
 * null for absent optionals, so equal states always render to equal bytes.
 */
export function renderRecord(r: LearningOpportunityRecord): string {
  return JSON.stringify({
    id: r.id,
    title: r.title,
    summary: r.summary,
    description: r.description,
    url: r.url,
    provider: r.provider ? { name: r.provider.name, url: r.provider.url } : null,
    format: r.format,
    language: r.language,
    topics: r.topics,
    price: r.price ? { amount: r.price.amount, currency: r.price.currency } : null,
    status: r.status,
    publishedAt: isoOrNull(r.publishedAt),
    createdAt: iso(r.createdAt),
    updatedAt: iso(r.updatedAt),
    sessions: r.sessions.map((s) => ({
      id: s.id,
      startsAt: iso(s.startsAt),
      endsAt: isoOrNull(s.endsAt),
      timezone: s.timezone,
      format: s.format,
      location: s.location
        ? { name: s.location.name, address: s.location.address, city: s.location.city, country: s.location.country }
        : null,
      capacity: s.capacity,
    })),
    deadlines: r.deadlines.map((d) => ({ id: d.id, type: d.type, dueAt: iso(d.dueAt), description: d.description })),
    faqs: r.faqs.map((f) => ({ id: f.id, question: f.question, answer: f.answer })),
    externalReviews: r.externalReviews.map((e) => ({
      id: e.id,
      source: e.source,
      url: e.url,
      rating: e.rating,
      maxRating: e.maxRating,
      reviewCount: e.reviewCount,
      excerpt: e.excerpt,
      reviewedAt: isoOrNull(e.reviewedAt),
    })),
    accolades: r.accolades.map((a) => ({
      id: a.id,
      title: a.title,
      issuer: a.issuer,
      awardedAt: isoOrNull(a.awardedAt),
      url: a.url,
    })),
  });
}
