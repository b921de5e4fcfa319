// The record of a learning opportunity, declared once (zod 4). Everything else derives from it:
// - the TypeScript types of the service (record.ts: timestamps as Date),
// - the renderer's fields and their order (record.ts: renderRecord encodes through this schema),
// - the OpenAPI components schemas/LearningOpportunity, Session, ... (`npm run generate`),
// - the client package's types (generated from those components by the same command).
// Timestamps are codecs: JSON strings on the wire, Dates inside the service.
// Adding a field: docs/development.md, "Adding a field to the record".
import { z } from 'zod';

export const FORMATS = ['ONLINE', 'IN_PERSON', 'HYBRID'] as const;
export const DEADLINE_TYPES = ['APPLICATION', 'ENROLLMENT', 'PAYMENT', 'OTHER'] as const;
export const STATUSES = ['DRAFT', 'PUBLISHED', 'ARCHIVED'] as const;
/** The statuses a consumer can see: REST serves PUBLISHED, an ARCHIVED event carries ARCHIVED. */
export const PUBLIC_STATUSES = ['PUBLISHED', 'ARCHIVED'] as const;

// The `id` of a schema's meta names its OpenAPI component (#/components/schemas/<id>).
const Uuid = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
  .meta({ id: 'Uuid', format: 'uuid', description: 'Lower-case UUID supplied by the content platform.' });

const Timestamp = z.codec(
  z
    .string()
    .regex(/^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$/)
    .meta({
      id: 'Timestamp',
      format: 'date-time',
      description: 'UTC, exactly three fraction digits.',
      examples: ['2026-03-01T09:00:00.000Z'],
    }),
  z.date(),
  { decode: (s) => new Date(s), encode: (d) => d.toISOString() },
);

const Format = z.enum(FORMATS).meta({ id: 'Format' });
// Annotated, not checked: URLs were checked on input (catalog/input.ts).
const uri = () => z.string().meta({ format: 'uri' });

export const LocationSchema = z
  .strictObject({
    name: z.string().nullable(),
    address: z.string().nullable(),
    city: z.string().nullable(),
    country: z.string().nullable(),
  })
  .meta({ id: 'Location' });

export const SessionSchema = z
  .strictObject({
    id: Uuid,
    startsAt: Timestamp,
    endsAt: Timestamp.nullable(),
    timezone: z
      .string()
      .nullable()
      .meta({ description: 'IANA time zone.', examples: ['Europe/Berlin'] }),
    format: Format.nullable(),
    location: LocationSchema.nullable(),
    capacity: z.int().min(0).nullable(),
  })
  .meta({ id: 'Session' });

export const DeadlineSchema = z
  .strictObject({ id: Uuid, type: z.enum(DEADLINE_TYPES), dueAt: Timestamp, description: z.string().nullable() })
  .meta({ id: 'Deadline' });

export const FaqSchema = z.strictObject({ id: Uuid, question: z.string(), answer: z.string() }).meta({ id: 'Faq' });

export const ExternalReviewSchema = z
  .strictObject({
    id: Uuid,
    source: z.string(),
    url: uri().nullable(),
    rating: z.number().min(0).nullable(),
    maxRating: z.number().positive().nullable(),
    reviewCount: z.int().min(0).nullable(),
    excerpt: z.string().nullable(),
    reviewedAt: Timestamp.nullable(),
  })
  .meta({ id: 'ExternalReview' });

export const AccoladeSchema = z
  .strictObject({
    id: Uuid,
    title: z.string(),
    issuer: z.string().nullable(),
    awardedAt: Timestamp.nullable(),
    url: uri().nullable(),
  })
  .meta({ id: 'Accolade' });

/** Every state the service renders (drafts too, for GraphQL); the property order is the JSON's. */
export const RecordSchema = z.strictObject({
  id: Uuid,
  title: z.string().meta({ description: 'Never blank.' }),
  summary: z.string().nullable(),
  description: z.string().nullable(),
  url: uri().nullable().meta({ description: 'Canonical page of the opportunity.' }),
  provider: z.strictObject({ name: z.string(), url: uri().nullable() }).nullable(),
  format: Format,
  language: z
    .string()
    .nullable()
    .meta({ description: 'BCP 47 language tag.', examples: ['en', 'pt-BR'] }),
  topics: z.array(z.string()),
  price: z
    .strictObject({
      amount: z
        .string()
        .regex(/^(0|[1-9][0-9]*)\.[0-9]{2}$/)
        .meta({ description: 'Decimal string with two fraction digits.', examples: ['123.00'] }),
      currency: z
        .string()
        .regex(/^[A-Z]{3}$/)
        .meta({ description: 'ISO 4217 code.' }),
    })
    .nullable(),
  status: z.enum(STATUSES),
  publishedAt: Timestamp.nullable(),
  createdAt: Timestamp,
  updatedAt: Timestamp.meta({ description: 'Moves whenever the public snapshot changes; the list is sorted by it.' }),
  sessions: z.array(SessionSchema),
  deadlines: z.array(DeadlineSchema),
  faqs: z.array(FaqSchema),
  externalReviews: z.array(ExternalReviewSchema),
  accolades: z.array(AccoladeSchema),
});

export const PUBLIC_RECORD_ID = 'LearningOpportunity';

/** The record as a consumer sees it (REST, events): published once, so publishedAt is set. */
export const PublicRecordSchema = RecordSchema.extend({
  status: z
    .enum(PUBLIC_STATUSES)
    .meta({ description: 'REST shows only PUBLISHED; ARCHIVED appears in the snapshot of an ARCHIVED event.' }),
  publishedAt: Timestamp,
}).meta({
  id: PUBLIC_RECORD_ID,
  description: 'A complete, self-contained record; also the `data` of snapshot webhook events.',
});
