// Validation of LearningOpportunityInput (GraphQL) into LearningOpportunityContent. Every rule that
// fails is reported, each under the path of the offending field.
import { z } from 'zod';
import { AppError, badInput, type InvalidParam } from '../kernel/errors.ts';
import { DEADLINE_TYPES, FORMATS, type LearningOpportunityContent } from './record.ts';
import { checkRenderedSize } from './record-size.ts';
import {
  currency,
  decimal,
  items,
  language,
  LIMITS,
  nonNegativeInt,
  optionalText,
  optionalTimestamp,
  optionalUrl,
  requiredText,
  timestamp,
  timezone,
  uuid,
} from './input-fields.ts';

const session = z
  .object({
    id: uuid,
    startsAt: timestamp,
    endsAt: optionalTimestamp,
    timezone: timezone.nullish().transform((v) => v ?? null),
    format: z
      .enum(FORMATS)
      .nullish()
      .transform((v) => v ?? null),
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
  // zod runs this even when a timestamp failed (then a string): compare only two valid dates.
  .refine((s) => !(s.endsAt instanceof Date) || !(s.startsAt instanceof Date) || s.endsAt >= s.startsAt, {
    path: ['endsAt'],
    message: 'must not be before startsAt',
  });

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
    rating: z
      .number()
      .min(0, 'must be >= 0')
      .nullish()
      .transform((v) => v ?? null),
    maxRating: z
      .number()
      .gt(0, 'must be > 0')
      .nullish()
      .transform((v) => v ?? null),
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
    .object({ amount: decimal, currency })
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

/** Validates the content platform's input; throws BAD_USER_INPUT listing every problem, or naming the largest field of a record above RECORD_MAX_BYTES. */
export function parseLearningOpportunityInput(input: unknown, prefix = 'input'): LearningOpportunityContent {
  const parsed = contentSchema.safeParse(input);
  if (!parsed.success) throw badInput(zodInvalidParams(parsed.error, prefix));
  checkRenderedSize(parsed.data, prefix);
  return parsed.data;
}

/** The most items one bulk mutation takes (one transaction each). */
export const MAX_BATCH = 500;

/**
 * Validates a batch of at most MAX_BATCH items, each by `parse` under the name `name[i]`; throws
 * BAD_USER_INPUT listing every problem of every item, and any id given twice.
 */
export function parseBatch<T extends string | { id: string }>(
  values: unknown,
  name: string,
  parse: (value: unknown, name: string) => T,
): T[] {
  if (!Array.isArray(values)) throw badInput([{ name, reason: 'must be a list' }]);
  if (values.length > MAX_BATCH) throw badInput([{ name, reason: `must have at most ${MAX_BATCH} items` }]);
  const problems: InvalidParam[] = [];
  const parsed: T[] = [];
  const seen = new Map<string, number>();
  values.forEach((value, i) => {
    try {
      const item = parse(value, `${name}[${i}]`);
      const id = typeof item === 'string' ? item : item.id;
      const earlier = seen.get(id);
      if (earlier !== undefined)
        problems.push({
          name: typeof item === 'string' ? `${name}[${i}]` : `${name}[${i}].id`,
          reason: `repeats ${name}[${earlier}]`,
        });
      seen.set(id, i);
      parsed.push(item);
    } catch (error) {
      if (!(error instanceof AppError && error.invalidParams)) throw error;
      problems.push(...error.invalidParams);
    }
  });
  if (problems.length) throw badInput(problems);
  return parsed;
}
