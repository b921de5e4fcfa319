// The field rules of a LearningOpportunityInput (catalog/input.ts builds the record's schema from
// them): size limits, storable text, timestamps, http(s) URLs, languages, IANA time zones, decimal
// amounts, item lists with unique ids. Each failure message says what the field must be.
import { z } from 'zod';
import { UUID_RE } from '../kernel/ids.ts';

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

export const uuid = z
  .string()
  .regex(UUID_RE, 'must be a UUID')
  .transform((s) => s.toLowerCase());
// PostgreSQL text cannot hold NUL, and a lone surrogate would be stored as U+FFFD (so the record
// would re-render differently): both are bad input, not a database failure.
const storableText = (s: string): boolean => s.isWellFormed() && !s.includes('\u0000');
const STORABLE_MESSAGE = 'must be well-formed Unicode text without NUL characters';
const text = (max: number) =>
  z.string().max(max, `must be at most ${max} characters`).refine(storableText, STORABLE_MESSAGE);
export const requiredText = (max: number) => text(max).refine((s) => s.trim().length > 0, 'must not be blank');
export const optionalText = (max: number) =>
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

export const timestamp = z
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
export const optionalTimestamp = timestamp.nullish().transform((v) => v ?? null);

// Characters that no URI (RFC 3986) nor IRI (RFC 3987) holds as such: whitespace (Unicode's too),
// controls, and the delimiters RFC 3986 excludes. A browser or client would encode them its own way,
// so the link served would not be the one stored.
const URL_UNSAFE = /[\s\p{Cc}<>"{}|\\^`]/u;
const NON_ASCII = /\P{ASCII}/u;
// A URL is stored as sent, unless it holds letters beyond ASCII (an IRI: `https://例え.jp/ä`): it is
// then stored in its URI form, as a browser sends it (WHATWG serialization: the host in punycode,
// the rest percent-encoded UTF-8), since the record's `url` fields are `format: uri` for consumers
// that validate what they read. The length limit holds for what is stored.
const httpUrl = z
  .string()
  .superRefine((s, ctx) => {
    let u: URL | null = null;
    try {
      u = new URL(s);
    } catch {
      // reported below
    }
    if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.username || u.password || !storableText(s))
      ctx.addIssue({ code: 'custom', message: 'must be an absolute http(s) URL without credentials' });
    else if (URL_UNSAFE.test(s))
      ctx.addIssue({ code: 'custom', message: 'must percent-encode spaces and the characters < > " { } | \\ ^ `' });
  })
  .transform((s) => (NON_ASCII.test(s) ? new URL(s).href : s))
  .pipe(z.string().max(LIMITS.url, `must be at most ${LIMITS.url} characters`));
export const optionalUrl = httpUrl.nullish().transform((v) => v ?? null);

// Three capitals alone let "XXY" or "ABC" through. ICU's currency names know every ISO 4217 code,
// withdrawn ones (DEM, HRK) included, so a record stored with an old code can still be re-sent.
const CURRENCY_NAMES = new Intl.DisplayNames('en', { type: 'currency', fallback: 'none' });
export const currency = z
  .string()
  .refine((s) => /^[A-Z]{3}$/.test(s) && CURRENCY_NAMES.of(s) !== undefined, 'must be an ISO 4217 code, e.g. EUR');

export const language = z
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
export const timezone = z.string().max(64).refine(isTimeZone, 'must be an IANA time zone, e.g. Europe/Berlin');

export const decimal = z
  .string()
  .regex(
    DECIMAL_RE,
    'must be a non-negative decimal string of at most 12 digits and 2 fraction digits (at most 999999999999.99), e.g. "123.00"',
  )
  .transform((s) => {
    const [whole, fraction = ''] = s.split('.');
    return `${whole}.${fraction.padEnd(2, '0')}`;
  });

export const nonNegativeInt = z.number().int('must be an integer').min(0, 'must be >= 0').max(2_147_483_647);
export const items = <T extends z.ZodType<{ id: string }>>(item: T) =>
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
