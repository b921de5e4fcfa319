// Validation of LearningOpportunityInput (GraphQL) into LearningOpportunityContent. Every rule that
// fails is reported, each under the path of the offending field.
import { z } from 'zod';
import { AppError, badInput, type InvalidParam } from '../kernel/errors.ts';
import { UUID_RE } from '../kernel/ids.ts';
import { DEADLINE_TYPES, FORMATS, type LearningOpportunityContent } from './record.ts';
import { checkRenderedSize } from './record-size.ts';

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

const uuid = z
  .string()
  .regex(UUID_RE, 'must be a UUID')
  .transform((s) => s.toLowerCase());
// PostgreSQL text cannot hold NUL, and a lone surrogate would be stored as U+FFFD (so the record
// would re-render differently): both are bad input, not a database failure.
const storableText = (s: string): boolean => s.isWellFormed() && !s.includes('\u0000');
const STORABLE_MESSAGE = 'must be well-formed Unicode text without NUL characters';
const text = (max: number) =>
  z.string().max(max, `must be at most ${max} characters`).refine(storableText, STORABLE_MESSAGE);
const requiredText = (max: number) => text(max).refine((s) => s.trim().length > 0, 'must not be blank');
const optionalText = (max: number) =>
  text(max)
    .nullish()
    .transform((v) => v ?? null);

/** Date() silently rolls impossible fields over (2027-02-30 -> 03-02, 24:00 -> next day): check them as written. */
function isCalendarDate(s: string): boolean {
  const [year, month, day, hour] = s.slice(0, 13).split(/[-T]/).map(Number) as [number, number, number, number];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
  return month >= 1 && month <= 12 && day >= 1 && day <= days && hour <= 23;
}

const timestamp = z
  .string()
  .regex(TIMESTAMP_RE, 'must be an ISO 8601 timestamp with a time zone, e.g. 2026-01-31T09:00:00.000Z')
  .transform((s, ctx) => {
    const d = new Date(s);
    // Years outside 0001-9999 (UTC) have no YYYY form and PostgreSQL rejects year 0.
    if (Number.isNaN(d.getTime()) || !isCalendarDate(s) || d.getUTCFullYear() < 1 || d.getUTCFullYear() > 9999) {
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
      return (u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password && storableText(s);
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
const ZONE_NAME_RE = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;
/**
 * ICU lists one (CLDR) name per zone, so current IANA names such as Asia/Kolkata or Europe/Kyiv are
 * missing from the list: ask ICU whether it knows the name. Offsets (+01:00) are not zone names.
 */
function isTimeZone(s: string): boolean {
  if (TIME_ZONES.has(s)) return true;
  if (!ZONE_NAME_RE.test(s)) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: s });
    return true;
  } catch {
    return false;
  }
}
const timezone = z.string().max(64).refine(isTimeZone, 'must be an IANA time zone, e.g. Europe/Berlin');

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
        if (seen.has(entry.id))
          ctx.addIssue({ code: 'custom', path: [i, 'id'], message: 'duplicates the id of another item' });
        seen.add(entry.id);
      });
    });

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
