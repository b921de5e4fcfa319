// A generator of realistic catalog content (every collection used, varied sizes), deterministic for
// a given seed so that demos and benchmarks are reproducible.
import type { DeadlineType, Format, LearningOpportunityContent } from './record.ts';
import { DEADLINE_TYPES } from './record.ts';
import {
  SUBJECTS,
  LEVELS,
  PROVIDERS,
  TOPICS,
  LANGUAGES,
  COUNTRIES,
  ZONES,
  SOURCES,
  LOREM,
} from './generate-vocabulary.ts';

export type Random = () => number;

/**
 * sfc32 (128 bits of state), its state filled from the seed by splitmix32. A 32-bit generator such as
 * mulberry32 runs every seed along one and the same cycle, so two seeds can be a few thousand draws
 * apart and then make the same records; with 128 bits, different seeds start far apart.
 */
export function seededRandom(seed: number): Random {
  let x = seed >>> 0;
  const splitmix32 = () => {
    x = (x + 0x9e3779b9) >>> 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = splitmix32();
  let b = splitmix32();
  let c = splitmix32();
  let d = splitmix32();
  for (let i = 0; i < 12; i++) next(); // mixes the start state
  function next(): number {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t;
  }
  return () => next() / 4294967296;
}

const HEX = '0123456789abcdef';
const nibbles = new Uint8Array(32);

/** A version-4 UUID from 32 draws of `rnd` (one per hex digit, then one for the variant). */
export function randomUuid(rnd: Random): string {
  // seed generates a dozen of these per record: one pass, no intermediate strings to slice.
  for (let i = 0; i < 32; i++) nibbles[i] = Math.floor(rnd() * 16);
  nibbles[12] = 4; // the version; its draw is spent all the same, so the sequence stays as it was
  nibbles[16] = Math.floor(rnd() * 4) + 8;
  let s = '';
  for (let i = 0; i < 32; i++) {
    if (i === 8 || i === 12 || i === 16 || i === 20) s += '-';
    s += HEX[nibbles[i]!];
  }
  return s;
}

const pick = <T>(rnd: Random, list: readonly T[]): T => list[Math.floor(rnd() * list.length)] as T;
const int = (rnd: Random, min: number, max: number) => min + Math.floor(rnd() * (max - min + 1));
const maybe = <T>(rnd: Random, p: number, value: () => T): T | null => (rnd() < p ? value() : null);

/** A value of `list` with a long tail: the first values are drawn often, the last rarely. */
const skewed = <T>(rnd: Random, list: readonly T[]): T => list[Math.floor(rnd() ** 2.5 * list.length)] as T;

// The first `words` words of LOREM (at least 3) as a sentence; built once per length.
const SENTENCES = Array.from(
  { length: LOREM.split(' ').length + 1 },
  (_, words) => LOREM.split(' ').slice(0, Math.max(3, words)).join(' ').replace(/[,.]$/, '') + '.',
);
const sentence = (words: number) => SENTENCES[Math.min(words, SENTENCES.length - 1)]!;

/** One record's content. `base` is the time around which its dates are placed. */
export function generateContent(rnd: Random, base: Date): LearningOpportunityContent {
  const subject = pick(rnd, SUBJECTS);
  const format: Format = ((r) => (r < 0.5 ? 'ONLINE' : r < 0.85 ? 'IN_PERSON' : 'HYBRID'))(rnd());
  const provider = skewed(rnd, PROVIDERS);
  const slug = subject.toLowerCase().replace(/[^a-z]+/g, '-');
  const day = 86_400_000;
  const start = base.getTime() + int(rnd, 7, 365) * day;
  const [country, cities] = skewed(rnd, COUNTRIES);
  const sessions = generateSessions(rnd, { start, format, provider, country, cities });
  return {
    id: randomUuid(rnd),
    title: `${pick(rnd, LEVELS)} ${subject}`,
    summary: sentence(int(rnd, 8, 20)),
    description: maybe(rnd, 0.9, () => Array.from({ length: int(rnd, 1, 4) }, () => LOREM).join('\n\n')),
    url: `https://courses.example.org/${slug}/${int(rnd, 1000, 9999)}`,
    provider: maybe(rnd, 0.95, () => ({
      name: provider,
      url: maybe(rnd, 0.8, () => `https://${provider.toLowerCase().replace(/[^a-z]+/g, '')}.example.org`),
    })),
    format,
    language: maybe(rnd, 0.9, () => skewed(rnd, LANGUAGES)),
    topics: [...new Set(Array.from({ length: int(rnd, 0, 5) }, () => skewed(rnd, TOPICS)))],
    price: maybe(rnd, 0.7, () => ({
      amount: `${int(rnd, 0, 4000)}.${pick(rnd, ['00', '50', '99'])}`,
      currency: pick(rnd, ['EUR', 'USD', 'GBP', 'CAD']),
    })),
    sessions,
    deadlines: Array.from({ length: int(rnd, 0, 3) }, (_, i) => ({
      id: randomUuid(rnd),
      type: DEADLINE_TYPES[i % DEADLINE_TYPES.length] as DeadlineType,
      dueAt: new Date(start - int(rnd, 1, 30) * day),
      description: maybe(rnd, 0.6, () => sentence(8)),
    })),
    faqs: Array.from({ length: int(rnd, 0, 6) }, (_, i) => ({
      id: randomUuid(rnd),
      question: [
        'Do I need prior experience?',
        'Is there a certificate?',
        'Can I pay in instalments?',
        'How much time per week?',
        'Are recordings available?',
        'Is there a refund policy?',
      ][i] as string,
      answer: sentence(int(rnd, 6, 30)),
    })),
    externalReviews: generateReviews(rnd, slug, base),
    accolades: Array.from({ length: int(rnd, 0, 2) }, () => ({
      id: randomUuid(rnd),
      title: pick(rnd, ['Best Online Course', 'Top Employer Pick', 'Excellence in Teaching', 'Editors’ Choice']),
      issuer: maybe(rnd, 0.8, () => pick(rnd, ['EdTech Awards', 'Learning Guild', 'Skills Council'])),
      awardedAt: maybe(rnd, 0.8, () => new Date(base.getTime() - int(rnd, 30, 1000) * day)),
      url: null,
    })),
  };
}

const DAY = 86_400_000;

/** One to six sessions a week apart from `start`, mostly in the provider's country. */
function generateSessions(
  rnd: Random,
  at: { start: number; format: Format; provider: string; country: string; cities: string[] },
) {
  const { start, format, provider, country, cities } = at;
  const day = DAY;
  return Array.from({ length: int(rnd, 1, 6) }, (_, i) => {
    // Mostly in the provider's country, sometimes abroad.
    const [sessionCountry, city] =
      rnd() < 0.85 ? [country, pick(rnd, cities)] : ((c) => [c[0], pick(rnd, c[1])])(pick(rnd, COUNTRIES));
    const startsAt = new Date(start + i * 7 * day + int(rnd, 8, 18) * 3_600_000);
    return {
      id: randomUuid(rnd),
      startsAt,
      endsAt: new Date(startsAt.getTime() + int(rnd, 1, 8) * 3_600_000),
      timezone: pick(rnd, ZONES),
      format: format === 'HYBRID' ? (pick(rnd, ['ONLINE', 'IN_PERSON']) as Format) : format,
      location:
        format === 'ONLINE'
          ? null
          : { name: `${provider} Campus`, address: `${int(rnd, 1, 200)} Market Street`, city, country: sessionCountry },
      capacity: maybe(rnd, 0.8, () => int(rnd, 10, 300)),
    };
  });
}

/** Up to four reviews from review sites, some with an excerpt. */
function generateReviews(rnd: Random, slug: string, base: Date) {
  const day = DAY;
  return Array.from({ length: int(rnd, 0, 4) }, () => {
    const maxRating = 5;
    return {
      id: randomUuid(rnd),
      source: pick(rnd, SOURCES),
      url: maybe(rnd, 0.7, () => `https://reviews.example.org/${slug}/${int(rnd, 1, 99999)}`),
      rating: Math.round((2.5 + rnd() * 2.5) * 10) / 10,
      maxRating,
      reviewCount: int(rnd, 1, 5000),
      excerpt: maybe(rnd, 0.8, () => sentence(int(rnd, 6, 18))),
      reviewedAt: maybe(rnd, 0.9, () => new Date(base.getTime() - int(rnd, 1, 700) * day)),
    };
  });
}
