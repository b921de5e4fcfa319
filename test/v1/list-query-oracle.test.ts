// GET /v1/learning-opportunities with filters, search, sorts, fields and facets (docs/contract.md, "Filters"),
// checked against an oracle: the full walk of the unfiltered list, filtered, sorted and counted in
// JavaScript. Every page of a filtered list must be exactly the walk's matching records, in the same
// total order, with the exact totalCount; facets count over the whole filtered result.
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import { createTestKey, getJson, startTestApi } from '../support/api.ts';
import { cloneTestDatabase } from '../support/database.ts';
import { createRecord } from '../support/factories.ts';
import { expectInvalidParams } from '../support/problem.ts';

type Session = { startsAt: string; location: { city: string | null; country: string | null } | null };
type Rec = {
  id: string;
  title: string;
  summary: string | null;
  description: string | null;
  provider: { name: string } | null;
  format: string;
  language: string | null;
  topics: string[];
  updatedAt: string;
  sessions: Session[];
} & Record<string, unknown>;
type Facet = { value: string; count: number };
type ListBody = {
  results: Rec[];
  pagination: { totalCount: number; limit: number; offset: number; next: number; hasMore: boolean };
  facets?: Record<string, Facet[]>;
};

const NOW = new Date();
const DAY = 86_400_000;
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();
const codepoints = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const byIdDesc = (a: Rec, b: Rec) => codepoints(b.id, a.id);

/** A filter as the oracle applies it: the query string and the predicate it means. */
type Case = { query: string; match: (r: Rec) => boolean; sort?: (a: Rec, b: Rec) => number };

const anyOf = (values: string[], value: string | null | undefined) => value != null && values.includes(value);
const sessionIn = (r: Rec, test: (s: Session) => boolean) => r.sessions.some(test);
const nextStart = (r: Rec): number | null => {
  const future = r.sessions.map((s) => Date.parse(s.startsAt)).filter((t) => t > Date.now());
  return future.length ? Math.min(...future) : null;
};
/** PostgreSQL's English stop words that start with "a" (tsearch_data/english.stop): never indexed. */
const A_STOP_WORDS = new Set([
  'a',
  'about',
  'above',
  'after',
  'again',
  'against',
  'all',
  'am',
  'an',
  'and',
  'any',
  'are',
  'as',
  'at',
]);
// The searchable words of a record, lower case (title, summary, description, provider, topics).
const words = (r: Rec) =>
  [r.title, r.summary, r.description, r.provider?.name, ...r.topics]
    .join(' ')
    .toLowerCase()
    .match(/[\p{L}\p{N}]+/gu) ?? [];

describe('GET /v1/learning-opportunities filters, search, fields and facets against a full walk', () => {
  let api: Api;
  let key: string;
  let walk: Rec[];
  // A database of its own: the other files of a serial run keep their small catalog.
  let db: Database;
  let drop: () => Promise<void>;
  const list = (query: string) => getJson(api, `/v1/learning-opportunities${query}`, key);

  before(async function () {
    this.timeout(120_000);
    const clone = await cloneTestDatabase(
      JSON.parse(process.env.LODS_TEST_POSTGRES!) as { adminUrl: string; template: string },
    );
    drop = clone.drop;
    db = await connectDatabase(clone.url, { poolMax: 10, connectTimeoutMs: 3000, migrate: false });
    api = await startTestApi({ db });
    key = await createTestKey(['catalog:read'], db);
    await seedCatalog(db.pool, { count: 400, seed: 2213, now: NOW, batchSize: 100 });
    // Records the public list never shows, though they match filters below.
    await createRecord(api.writes, { format: 'ONLINE', language: 'de', topics: ['python'] }, { publish: false });
    await db.pool.query('analyze');
    walk = [];
    for (let offset = 0; ; offset += 100) {
      const body = (await list(`?limit=100&offset=${offset}`)).body as ListBody;
      walk.push(...body.results);
      if (body.results.length < 100) break;
    }
    expect(walk.length).to.be.at.least(400);
  });
  after(async function () {
    this.timeout(60_000);
    await api?.close();
    await db?.close();
    await drop?.();
  });

  // Values picked from the walk itself: a common one and a rare one of each kind.
  const common = <T>(values: T[]): T[] => {
    const counts = new Map<T, number>();
    for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
    return [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([v]) => v);
  };

  /** Every page of `query` at `limit`, compared with the oracle's records; returns the first body. */
  async function expectMatches(c: Case, limit = 37): Promise<ListBody> {
    const expected = walk.filter(c.match);
    if (c.sort) expected.sort(c.sort);
    let first: ListBody | undefined;
    const got: Rec[] = [];
    for (let offset = 0; offset <= expected.length; offset += limit) {
      const res = await list(`?${c.query}&limit=${limit}&offset=${offset}`);
      expect(res.status, `${c.query}: ${res.text}`).to.equal(200);
      const body = res.body as ListBody;
      const next = offset + body.results.length;
      expect(body.pagination, c.query).to.deep.equal({
        totalCount: expected.length,
        limit,
        offset,
        next,
        hasMore: next < expected.length,
      });
      first ??= body;
      got.push(...body.results);
    }
    expect(
      got.map((r) => r.id),
      c.query,
    ).to.deep.equal(expected.map((r) => r.id));
    // Whole records are the walk's bytes.
    if (!c.query.includes('fields=')) expect(got, c.query).to.deep.equal(expected);
    return first!;
  }

  it('filters by each parameter alone, exactly as the walk filtered', async function () {
    this.timeout(120_000);
    const languages = common(walk.map((r) => r.language).filter((l) => l !== null) as string[]);
    const topics = common(walk.flatMap((r) => r.topics));
    const providers = common(walk.map((r) => r.provider?.name).filter(Boolean) as string[]);
    const countries = common(
      walk.flatMap((r) => r.sessions.map((s) => s.location?.country)).filter(Boolean) as string[],
    );
    const cities = common(walk.flatMap((r) => r.sessions.map((s) => s.location?.city)).filter(Boolean) as string[]);
    const mid = Date.parse(walk[Math.floor(walk.length / 2)]!.updatedAt);
    const from = NOW.getTime() + 30 * DAY;
    const before = NOW.getTime() + 60 * DAY;
    const cases: Case[] = [
      { query: `updatedSince=${iso(mid)}`, match: (r) => Date.parse(r.updatedAt) >= mid },
      { query: `updatedBefore=${iso(mid)}`, match: (r) => Date.parse(r.updatedAt) < mid },
      { query: 'format=ONLINE', match: (r) => r.format === 'ONLINE' },
      { query: 'format=IN_PERSON,HYBRID', match: (r) => r.format !== 'ONLINE' },
      { query: `language=${languages[0]}`, match: (r) => r.language === languages[0] },
      { query: `language=${languages.slice(1, 4).join(',')}`, match: (r) => anyOf(languages.slice(1, 4), r.language) },
      { query: `topic=${encodeURIComponent(topics[0]!)}`, match: (r) => r.topics.includes(topics[0]!) },
      {
        query: `topic=${topics.slice(-3).map(encodeURIComponent).join(',')}`,
        match: (r) => r.topics.some((t) => topics.slice(-3).includes(t)),
      },
      { query: `provider=${encodeURIComponent(providers[0]!)}`, match: (r) => r.provider?.name === providers[0] },
      {
        query: `provider=${providers.slice(1, 5).map(encodeURIComponent).join(',')}`,
        match: (r) => anyOf(providers.slice(1, 5), r.provider?.name),
      },
      { query: `country=${countries[0]}`, match: (r) => sessionIn(r, (s) => s.location?.country === countries[0]) },
      {
        query: `country=${countries.slice(2, 6).join(',')}`,
        match: (r) => sessionIn(r, (s) => anyOf(countries.slice(2, 6), s.location?.country)),
      },
      {
        query: `city=${encodeURIComponent(cities[1]!)}`,
        match: (r) => sessionIn(r, (s) => s.location?.city === cities[1]),
      },
      { query: `startsFrom=${iso(from)}`, match: (r) => sessionIn(r, (s) => Date.parse(s.startsAt) >= from) },
      { query: `startsBefore=${iso(before)}`, match: (r) => sessionIn(r, (s) => Date.parse(s.startsAt) < before) },
      {
        query: `startsFrom=${iso(from)}&startsBefore=${iso(before)}`,
        match: (r) => sessionIn(r, (s) => Date.parse(s.startsAt) >= from && Date.parse(s.startsAt) < before),
      },
      { query: 'provider=Nobody%20At%20All', match: () => false },
    ];
    for (const c of cases) await expectMatches(c);
  });

  it('combines parameters with AND and re-sorts in a total order', async function () {
    this.timeout(120_000);
    const de = common(walk.map((r) => r.language).filter(Boolean) as string[])[0]!;
    const berlin = common(walk.flatMap((r) => r.sessions.map((s) => s.location?.city)).filter(Boolean) as string[])[0]!;
    const countries = common(
      walk.flatMap((r) => r.sessions.map((s) => s.location?.country)).filter(Boolean) as string[],
    );
    const from = NOW.getTime();
    const before = NOW.getTime() + 90 * DAY;
    const ascending = (a: Rec, b: Rec) => codepoints(a.updatedAt, b.updatedAt) || byIdDesc(a, b);
    const byNextStart = (a: Rec, b: Rec) => {
      const [x, y] = [nextStart(a), nextStart(b)];
      if (x !== y) return x === null ? 1 : y === null ? -1 : x - y;
      return byIdDesc(a, b);
    };
    const cases: Case[] = [
      { query: `format=ONLINE&language=${de}`, match: (r) => r.format === 'ONLINE' && r.language === de },
      {
        query: `format=IN_PERSON&startsFrom=${iso(from)}&startsBefore=${iso(before)}&sort=nextSessionStartsAt`,
        match: (r) =>
          r.format === 'IN_PERSON' &&
          sessionIn(r, (s) => Date.parse(s.startsAt) >= from && Date.parse(s.startsAt) < before),
        sort: byNextStart,
      },
      {
        query: `language=${de}&updatedSince=${iso(NOW.getTime() - 180 * DAY)}&sort=updatedAt`,
        match: (r) => r.language === de && Date.parse(r.updatedAt) >= NOW.getTime() - 180 * DAY,
        sort: ascending,
      },
      {
        // Separate conditions: some session in the city, some (maybe another) session in the window.
        query: `city=${encodeURIComponent(berlin)}&startsFrom=${iso(from)}&startsBefore=${iso(before)}`,
        match: (r) =>
          sessionIn(r, (s) => s.location?.city === berlin) &&
          sessionIn(r, (s) => Date.parse(s.startsAt) >= from && Date.parse(s.startsAt) < before),
      },
      // A country with a start window: read from one index of each record's countries times its
      // start days, the window's ends within a day (not at midnight) checked on the starts; the
      // country and the start may be two sessions'; countries in any case.
      {
        query: `country=${countries[0]!.toLowerCase()}&startsFrom=${iso(from + 7 * DAY + 5 * HOUR)}&startsBefore=${iso(from + 40 * DAY + 7 * HOUR)}&sort=nextSessionStartsAt`,
        match: (r) =>
          sessionIn(r, (s) => s.location?.country?.toLowerCase() === countries[0]!.toLowerCase()) &&
          sessionIn(
            r,
            (s) =>
              Date.parse(s.startsAt) >= from + 7 * DAY + 5 * HOUR &&
              Date.parse(s.startsAt) < from + 40 * DAY + 7 * HOUR,
          ),
        sort: byNextStart,
      },
      {
        query: `country=${countries.slice(1, 4).join(',')}&startsFrom=${iso(from + 3 * HOUR)}&startsBefore=${iso(from + 20 * DAY)}`,
        match: (r) =>
          sessionIn(r, (s) => anyOf(countries.slice(1, 4), s.location?.country)) &&
          sessionIn(r, (s) => Date.parse(s.startsAt) >= from + 3 * HOUR && Date.parse(s.startsAt) < from + 20 * DAY),
      },
      // Too many days for that index (more than 1,000 keys): the countries' and the days' indexes.
      {
        query: `country=${countries[0]}&startsFrom=${iso(from - 400 * DAY)}&startsBefore=${iso(from + 700 * DAY)}&sort=nextSessionStartsAt`,
        match: (r) =>
          sessionIn(r, (s) => s.location?.country === countries[0]) &&
          sessionIn(r, (s) => Date.parse(s.startsAt) >= from - 400 * DAY && Date.parse(s.startsAt) < from + 700 * DAY),
        sort: byNextStart,
      },
      // With a search: the same index, asked for the search's matches.
      {
        query: `q=a&country=${countries[0]}&startsFrom=${iso(from + 2 * HOUR)}&startsBefore=${iso(from + 30 * DAY)}&sort=nextSessionStartsAt`,
        match: (r) =>
          words(r).some((w) => w.startsWith('a') && !A_STOP_WORDS.has(w)) &&
          sessionIn(r, (s) => s.location?.country === countries[0]) &&
          sessionIn(r, (s) => Date.parse(s.startsAt) >= from + 2 * HOUR && Date.parse(s.startsAt) < from + 30 * DAY),
        sort: byNextStart,
      },
      // An empty window: nothing.
      { query: `country=${countries[0]}&startsFrom=${iso(from + DAY)}&startsBefore=${iso(from)}`, match: () => false },
      { query: 'sort=updatedAt', match: () => true, sort: ascending },
      { query: 'sort=nextSessionStartsAt', match: () => true, sort: byNextStart },
      // Counted over the matches, found once for the count and the page (records without a future session last).
      {
        query: `format=ONLINE,HYBRID&language=${de}&sort=nextSessionStartsAt`,
        match: (r) => r.format !== 'IN_PERSON' && r.language === de,
        sort: byNextStart,
      },
      // Many matches counted by the search bitmaps: the first pages walk the sessions in start order,
      // the later ones sort the matches by their next start (by density, as the order's walk).
      {
        query: 'format=ONLINE,HYBRID&sort=nextSessionStartsAt',
        match: (r) => r.format !== 'IN_PERSON',
        sort: byNextStart,
      },
      {
        query: 'q=a&sort=nextSessionStartsAt',
        match: (r) => words(r).some((w) => w.startsWith('a') && !A_STOP_WORDS.has(w)),
        sort: byNextStart,
      },
      // A start window alone: counted from list_session, the page in next-session order.
      {
        query: `startsFrom=${iso(from + 30 * DAY)}&sort=nextSessionStartsAt`,
        match: (r) => sessionIn(r, (s) => Date.parse(s.startsAt) >= from + 30 * DAY),
        sort: byNextStart,
      },
      // Windows longer than two months, or open, with another condition: read from the sessions' index.
      {
        query: `format=ONLINE&startsFrom=${iso(from - 3000 * DAY)}&startsBefore=${iso(from + 3000 * DAY)}`,
        match: (r) =>
          r.format === 'ONLINE' &&
          sessionIn(
            r,
            (s) => Date.parse(s.startsAt) >= from - 3000 * DAY && Date.parse(s.startsAt) < from + 3000 * DAY,
          ),
      },
      {
        query: `q=a&startsFrom=${iso(from + 10 * DAY)}`,
        match: (r) =>
          words(r).some((w) => w.startsWith('a') && !A_STOP_WORDS.has(w)) &&
          sessionIn(r, (s) => Date.parse(s.startsAt) >= from + 10 * DAY),
      },
      {
        query: `language=${de}&startsBefore=${iso(from + 100 * DAY)}&sort=nextSessionStartsAt`,
        match: (r) => r.language === de && sessionIn(r, (s) => Date.parse(s.startsAt) < from + 100 * DAY),
        sort: byNextStart,
      },
      { query: 'sort=-updatedAt', match: () => true },
    ];
    for (const c of cases) await expectMatches(c, 41);
  });

  it('searches title, summary, description, provider and topics, the last word as a prefix', async function () {
    this.timeout(60_000);
    const has = (r: Rec, test: (w: string) => boolean) => words(r).some(test);
    const cases: Case[] = [
      {
        query: 'q=machine%20learn',
        match: (r) => has(r, (w) => w === 'machine') && has(r, (w) => w.startsWith('learn')),
      },
      { query: 'q=Bioinformatics', match: (r) => has(r, (w) => w === 'bioinformatics') },
      { query: 'q=weld', match: (r) => has(r, (w) => w.startsWith('weld')) },
      // A last word that is an English stop word is still a prefix (it found nothing before): the
      // stop words themselves are not indexed, so they are the only a-words left out.
      { query: 'q=a', match: (r) => has(r, (w) => w.startsWith('a') && !A_STOP_WORDS.has(w)) },
      {
        query: 'q=robotics&format=ONLINE',
        match: (r) => r.format === 'ONLINE' && has(r, (w) => w.startsWith('robot')),
      },
    ];
    for (const c of cases) {
      const body = await expectMatches(c);
      expect(body.pagination.totalCount, c.query).to.be.above(0);
    }
    // "machine learn" finds the "Machine Learning" titles.
    const ml = walk.filter((r) => r.title.includes('Machine Learning'));
    const found = ((await list('?q=machine%20learn&limit=100&fields=title')).body as ListBody).pagination.totalCount;
    expect(found).to.be.at.least(ml.length);
  });

  it('ranks by relevance: the matches of q, by rank then id descending', async () => {
    const res = await list('?q=machine%20learning&sort=relevance&limit=100');
    expect(res.status).to.equal(200);
    const body = res.body as ListBody;
    const ids = body.results.map((r) => r.id);
    const { rows } = await db.pool.query<{ id: string; rank: number }>(
      `select id, ts_rank(search, to_tsquery('english', '''machine'' & ''learning'':*')) as rank from learning_opportunity where id = any($1::uuid[])`,
      [ids],
    );
    const rank = new Map(rows.map((r) => [r.id, r.rank]));
    const resorted = [...ids].sort((a, b) => rank.get(b)! - rank.get(a)! || codepoints(b, a));
    expect(ids).to.deep.equal(resorted);
    expect(new Set(rows.map((r) => r.rank)).size, 'ranks differ between records').to.be.above(1);
    const plain = (await list('?q=machine%20learning&limit=100')).body as ListBody;
    expect(plain.pagination.totalCount).to.equal(body.pagination.totalCount);
    expect([...ids].sort()).to.deep.equal(plain.results.map((r) => r.id).sort());
  });

  it('returns only the requested fields plus id and updatedAt, as the stored bytes, in record order', async () => {
    const res = await list('?fields=topics,title,format&format=HYBRID&limit=100');
    expect(res.status).to.equal(200);
    const expected = walk.filter((r) => r.format === 'HYBRID');
    const body = res.body as ListBody;
    expect(body.results.map((r) => Object.keys(r))).to.deep.equal(
      expected.map(() => ['id', 'title', 'format', 'topics', 'updatedAt']),
    );
    expect(body.results).to.deep.equal(
      expected
        .slice(0, 100)
        .map((r) => ({ id: r.id, title: r.title, format: r.format, topics: r.topics, updatedAt: r.updatedAt })),
    );
    // Same bytes as the whole record's members: each projected record is a cut of the stored doc.
    const one = body.results[0]!;
    expect(JSON.stringify(one)).to.equal(
      JSON.stringify({
        id: one.id,
        title: one.title,
        format: one.format,
        topics: one.topics,
        updatedAt: one.updatedAt,
      }),
    );
  });

  it('counts facets over the whole filtered result, top 20, most frequent first', async () => {
    const facetsOf = (records: Rec[]) => {
      const values: Record<string, (r: Rec) => (string | null | undefined)[]> = {
        format: (r) => [r.format],
        language: (r) => [r.language],
        topic: (r) => r.topics,
        provider: (r) => [r.provider?.name],
        country: (r) => r.sessions.map((s) => s.location?.country),
      };
      return Object.fromEntries(
        Object.entries(values).map(([name, of]) => {
          const counts = new Map<string, number>();
          for (const r of records)
            for (const v of new Set(of(r))) if (v != null) counts.set(v, (counts.get(v) ?? 0) + 1);
          const top = [...counts.entries()]
            .map(([value, count]) => ({ value, count }))
            .sort((a, b) => b.count - a.count || codepoints(a.value, b.value));
          return [name, top.slice(0, 20)];
        }),
      );
    };
    for (const [query, match] of [
      ['', () => true],
      ['format=IN_PERSON', (r: Rec) => r.format === 'IN_PERSON'],
      ['q=leadership', (r: Rec) => words(r).some((w) => w.startsWith('leadership'))],
    ] as [string, (r: Rec) => boolean][]) {
      const res = await list(`?${query}&facets=format,language,topic,provider,country&limit=5`);
      expect(res.status, res.text).to.equal(200);
      const body = res.body as ListBody;
      const expected = walk.filter(match);
      expect(body.pagination.totalCount, query).to.equal(expected.length);
      expect(body.facets, query).to.deep.equal(facetsOf(expected));
      expect(Object.keys(body)).to.deep.equal(['results', 'pagination', 'facets']);
    }
    const only = (await list('?facets=format&limit=1')).body as ListBody;
    expect(Object.keys(only.facets!)).to.deep.equal(['format']);
  });

  it('pages a list with facets exactly as without them, in every order, with many matches or few', async function () {
    this.timeout(60_000);
    const provider = common(walk.map((r) => r.provider?.name).filter(Boolean) as string[]).at(-1)!;
    for (const query of [
      'format=ONLINE',
      'format=ONLINE&sort=updatedAt',
      `provider=${encodeURIComponent(provider)}`,
      'q=leadership',
      'q=machine%20learning&sort=relevance',
      'q=zzyzx',
      'startsFrom=2000-01-01T00:00:00Z&sort=nextSessionStartsAt',
    ]) {
      // Pages from the first to past the last: the page is found by walking the order or by sorting
      // the matches, by their number against the offset.
      const total = ((await list(`?${query}&limit=1`)).body as ListBody).pagination.totalCount;
      for (let offset = 0; offset <= total; offset += 61) {
        const plain = (await list(`?${query}&limit=61&offset=${offset}`)).body as ListBody;
        const faceted = (await list(`?${query}&limit=61&offset=${offset}&facets=format,topic`)).body as ListBody;
        expect(faceted.results, `${query} at ${offset}`).to.deep.equal(plain.results);
        expect(faceted.pagination, `${query} at ${offset}`).to.deep.equal(plain.pagination);
      }
    }
  });

  it('answers the unfiltered list byte for byte as before (an explicit default sort too)', async () => {
    const plain = await list('?limit=7&offset=3');
    const sorted = await list('?limit=7&offset=3&sort=-updatedAt');
    expect(sorted.text).to.equal(plain.text);
    expect(sorted.headers.get('etag')).to.equal(plain.headers.get('etag'));
  });

  it('gives filtered pages an ETag, Cache-Control and 304', async () => {
    const res = await list('?format=ONLINE&facets=topic&limit=5');
    const etag = res.headers.get('etag')!;
    expect(etag).to.match(/^"[0-9a-f]{32}"$/);
    expect(res.headers.get('cache-control')).to.equal('private, no-cache');
    const again = await getJson(api, '/v1/learning-opportunities?format=ONLINE&facets=topic&limit=5', key, {
      headers: { 'if-none-match': etag },
    });
    expect(again.status).to.equal(304);
    expect(again.text).to.equal('');
    const other = await getJson(api, '/v1/learning-opportunities?format=ONLINE&facets=topic&limit=5&offset=1', key, {
      headers: { 'if-none-match': etag },
    });
    expect(other.status).to.equal(200);
    const projected = await getJson(
      api,
      '/v1/learning-opportunities?format=ONLINE&facets=topic&limit=5&fields=title',
      key,
      { headers: { 'if-none-match': etag } },
    );
    expect(projected.status).to.equal(200);
  });

  it('refuses bad values with a 400 naming each parameter', async () => {
    const bad: [string, string[]][] = [
      ['format=ONLINE,PODCAST', ['format']],
      ['format=', ['format']],
      ['updatedSince=yesterday', ['updatedSince']],
      ['updatedBefore=2026-02-30T00:00:00.000Z', ['updatedBefore']],
      ['startsFrom=2026-01-01', ['startsFrom']],
      ['startsBefore=2026-01-01T00:00:00.000Z&startsBefore=2026-02-01T00:00:00.000Z', ['startsBefore']],
      ['sort=title', ['sort']],
      ['sort=relevance', ['sort']],
      ['fields=title,secret', ['fields']],
      ['facets=format,city', ['facets']],
      ['q=%20%2B%2B%20', ['q']],
      // 65 words, or 22 of U+FDFA, one character that is four words in its NFKC form (run together: 67).
      [`q=${Array.from({ length: 65 }, (_, i) => `w${i}`).join('%20')}`, ['q']],
      [`q=${'%EF%B7%BA'.repeat(22)}`, ['q']],
      [`topic=${Array.from({ length: 51 }, (_, i) => `t${i}`).join(',')}`, ['topic']],
      ['language=en,,de', ['language']],
      // A NUL cannot be in stored text: a 400, not a failed statement (was a 500).
      ['provider=a%00b&city=%00&topic=x,%00', ['provider', 'city', 'topic']],
      ['limit=0&format=HYBRID&sort=nope', ['limit', 'sort']],
    ];
    for (const [query, names] of bad) expectInvalidParams(await list(`?${query}`), names);
    // An offset is the same instant as its UTC form.
    const utc = await list('?updatedSince=2026-03-01T09:00:00.000Z&limit=100');
    const offset = await list('?updatedSince=2026-03-01T10:00:00%2B01:00&limit=100');
    expect(offset.status).to.equal(200);
    expect((offset.body as ListBody).results).to.deep.equal((utc.body as ListBody).results);
    // 50 values are fine; unknown parameters are ignored.
    expect(
      (await list(`?topic=${Array.from({ length: 50 }, (_, i) => `t${i}`).join(',')}&colour=red`)).status,
    ).to.equal(200);
    // 64 words are a search, however they are written.
    expect((await list(`?q=${Array.from({ length: 64 }, (_, i) => `w${i}`).join('%20')}`)).status).to.equal(200);
    expect((await list(`?q=${'%EF%B7%BA'.repeat(21)}`)).status).to.equal(200);
  });
});
