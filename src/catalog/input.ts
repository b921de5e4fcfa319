// Validation of LearningOpportunityInput (GraphQL) into LearningOpportunityContent. Every rule that
// fails is reported, each under the path of the offending field.
import { z } from 'zod';
import { badInput, type InvalidParam } from '../errors.ts';
import { DEADLINE_TYPES, FORMATS, type LearningOpportunityContent } from './record.ts';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const DECIMAL_RE = /^(0|[1-9]\d{0,11})(\.\d{1,2})?$/;

export const LIMITS = {
  title: 500,
  shortText: 2_000,
  longText: 50_000,
  url: 2_048,
  topics: 50,
  topic: 100,
  items: 200,
} as const;

export const isUuid = (value: string): boolean => UUID_RE.test(value);

const uuid = z.string().regex(UUID_RE, 'must be a UUID').transform((s) => s.toLowerCase());
const text = (max: number) => z.string().max(max, `must be at most ${max} characters`);
const requiredText = (max: number) => text(max).refine((s) => s.trim().length > 0, 'must not be blank');
const optionalText = (max: number) => text(max).nullish().transform((v) => v ?? null);

const timestamp = z
  .string()
  .regex(TIMESTAMP_RE, 'must be an ISO 8601 timestamp with a time zone, e.g. 2026-01-31T09:00:00.000Z')
  .transform((s, ctx) => {
    const d = new Date(s);
    if (Number.isNaN(d.getTime())) {
      ctx.addIssue({ code: 'custom', message: 'is not a valid date' });
      return z.NEVER;
    }
    return d;
  });
const optionalTimestamp = timestamp.nullish().transform((v) => v ?? null);

const httpUrl = z
  .string()
  .max(LIMITS.url, `must be at most ${LIMITS.url} characters`)
  .refine((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password;
    } catch {
      return false;
    }
  }, 'must be an absolute http(s) URL without credentials');
const optionalUrl = httpUrl.nullish().transform((v) => v ?? null);

const language = z
  .string()
  .max(35)
  .transform((s, ctx) => {
    try {
      const [canonical] = Intl.getCanonicalLocales(s);
      if (canonical) return canonical;
    } catch {
      // reported below
    }
    ctx.addIssue({ code: 'custom', message: 'must be a BCP 47 language tag, e.g. en or pt-BR' });
    return z.NEVER;
  });

const TIME_ZONES = new Set(Intl.supportedValuesOf('timeZone').concat('UTC'));
const timezone = z.string().refine((s) => TIME_ZONES.has(s), 'must be an IANA time zone, e.g. Europe/Berlin');

const decimal = z
  .string()
  .regex(DECIMAL_RE, 'must be a non-negative decimal string with at most 2 fraction digits, e.g. "123.00"')
  .transform((s) => {
    const [whole, fraction = ''] = s.split('.');
    return `${whole}.${fraction.padEnd(2, '0')}`;
  });

const nonNegativeInt = z.number().int('must be an integer').min(0, 'must be >= 0').max(2_147_483_647);
const items = <T extends z.ZodType<{ id: string }>>(item: T) =>
  z
    .array(item)
    .max(LIMITS.items, `must have at most ${LIMITS.items} items`)
    .nullish()
    .transform((v) => v ?? [])
    .superRefine((list, ctx) => {
      const seen = new Set<string>();
      list.forEach((entry, i) => {
        if (seen.has(entry.id)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: 'duplicates the id of another item' });
        seen.add(entry.id);
      });
    });

const session = z
  .object({
    id: uuid,
    startsAt: timestamp,
    endsAt: optionalTimestamp,
    timezone: timezone.nullish().transform((v) => v ?? null),
    format: z.enum(FORMATS).nullish().transform((v) => v ?? null),
    location: z
      .object({
        name: optionalText(LIMITS.shortText),
        address: optionalText(LIMITS.shortText),
        city: optionalText(LIMITS.shortText),
        country: optionalText(LIMITS.shortText),
      })
      .nullish()
      .transform((v) => v ?? null),
    capacity: nonNegativeInt.nullish().transform((v) => v ?? null),
  })
  .refine((s) => !s.endsAt || s.endsAt >= s.startsAt, { path: ['endsAt'], message: 'must not be before startsAt' });

const deadline = z.object({
  id: uuid,
  type: z.enum(DEADLINE_TYPES),
  dueAt: timestamp,
  description: optionalText(LIMITS.shortText),
});

const faq = z.object({ id: uuid, question: requiredText(LIMITS.shortText), answer: requiredText(LIMITS.longText) });

const externalReview = z
  .object({
    id: uuid,
    source: requiredText(LIMITS.title),
    url: optionalUrl,
    rating: z.number().min(0, 'must be >= 0').nullish().transform((v) => v ?? null),
    maxRating: z.number().gt(0, 'must be > 0').nullish().transform((v) => v ?? null),
    reviewCount: nonNegativeInt.nullish().transform((v) => v ?? null),
    excerpt: optionalText(LIMITS.shortText),
    reviewedAt: optionalTimestamp,
  })
  .refine((r) => r.rating === null || r.maxRating === null || r.rating <= r.maxRating, {
    path: ['rating'],
    message: 'must not exceed maxRating',
  });

const accolade = z.object({
  id: uuid,
  title: requiredText(LIMITS.title),
  issuer: optionalText(LIMITS.title),
  awardedAt: optionalTimestamp,
  url: optionalUrl,
});

const contentSchema = z.object({
  id: uuid,
  title: requiredText(LIMITS.title),
  summary: optionalText(LIMITS.shortText),
  description: optionalText(LIMITS.longText),
  url: optionalUrl,
  provider: z
    .object({ name: requiredText(LIMITS.title), url: optionalUrl })
    .nullish()
    .transform((v) => v ?? null),
  format: z.enum(FORMATS),
  language: language.nullish().transform((v) => v ?? null),
  topics: z
    .array(requiredText(LIMITS.topic))
    .max(LIMITS.topics, `must have at most ${LIMITS.topics} items`)
    .nullish()
    .transform((v) => v ?? []),
  price: z
    .object({ amount: decimal, currency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code, e.g. EUR') })
    .nullish()
    .transform((v) => v ?? null),
  sessions: items(session),
  deadlines: items(deadline),
  faqs: items(faq),
  externalReviews: items(externalReview),
  accolades: items(accolade),
});

export function formatPath(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix;
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : `${out ? '.' : ''}${String(part)}`;
  return out;
}

export function zodInvalidParams(error: z.ZodError, prefix: string): InvalidParam[] {
  return error.issues.map((issue) => ({ name: formatPath(prefix, issue.path), reason: issue.message }));
}

/** Validates the content platform's input; throws BAD_USER_INPUT listing every problem. */
export function parseLearningOpportunityInput(input: unknown, prefix = 'input'): LearningOpportunityContent {
  const parsed = contentSchema.safeParse(input);
  if (!parsed.success) throw badInput(zodInvalidParams(parsed.error, prefix));
  return parsed.data;
}

/** Validates a record id given by a caller; throws BAD_USER_INPUT naming the parameter. */
export function parseId(value: unknown, name = 'id'): string {
  if (typeof value !== 'string' || !UUID_RE.test(value)) throw badInput([{ name, reason: 'must be a UUID' }]);
  return value.toLowerCase();
}
