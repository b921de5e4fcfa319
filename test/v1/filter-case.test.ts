// The list filters `country`, `language` and `city` ignore case, in REST and GraphQL alike: a value
// in any case finds the records the stored spelling finds, with the same exact totalCount (read from
// the maintained counts or counted), and the facets keep reporting the values as stored. Languages
// are BCP 47 tags (stored in their canonical form: `de`, `pt-BR`), so `DE` or `PT-br` is the tag
// itself; countries and cities are free text, compared in lower case (`lyon`, `Lyon` and `LYON`
// are one city, counted once per record).
import { expect } from 'chai';
import { getJson, graphql, useTestApi } from '../support/api.ts';
import { buildSession, createRecord, resetCatalog } from '../support/factories.ts';
import { testDb } from '../hooks.ts';

type Facet = { value: string; count: number };
type ListBody = {
  results: { id: string }[];
  pagination: { totalCount: number };
  facets?: Record<string, Facet[]>;
};
type Page = {
  results: { id: string }[];
  pagination: { totalCount: number };
  facets: Record<string, Facet[] | null> | null;
};

const LIST = `query($filter: LearningOpportunityFilter, $search: String, $sort: LearningOpportunitySort, $facets: [Facet!]) {
  learningOpportunities(filter: $filter, search: $search, sort: $sort, facets: $facets, limit: 100) {
    results { id } pagination { totalCount } facets { language { value count } country { value count } }
  }
}`;

/** Sessions at the given places (city, country), a week apart. */
const at = (...places: [string | null, string | null][]) => ({
  sessions: places.map(([city, country], i) =>
    buildSession(new Date(Date.UTC(2030, 0, 1 + 7 * i, 9)).toISOString(), city, country),
  ),
});

describe('country, language and city filters ignore case (REST and GraphQL)', () => {
  const served = useTestApi({ restKey: ['catalog:read'], graphKey: ['graphql:read'] });
  const ids: Record<string, string> = {};

  const rest = async (query: string): Promise<ListBody> => {
    const res = await getJson(served.api, `/v1/learning-opportunities?${query}&limit=100`, served.restKey);
    expect(res.status, `${query}: ${res.text}`).to.equal(200);
    return res.body as ListBody;
  };
  const graph = async (variables: Record<string, unknown>): Promise<Page> => {
    const res = await graphql<{ learningOpportunities: Page }>(served.api, served.graphKey, LIST, variables);
    expect(res.body.errors, JSON.stringify(res.body.errors)).to.equal(undefined);
    return res.body.data!.learningOpportunities;
  };
  const found = (body: { results: { id: string }[] }) => body.results.map((r) => r.id);
  /** Every published record's id, newest first (the list's order). */
  let order: string[] = [];
  /** The ids of the named records, in the list's order. */
  const named = (...names: string[]) => names.map((n) => ids[n]!).sort((a, b) => order.indexOf(a) - order.indexOf(b));

  before(async function () {
    this.timeout(60_000);
    await resetCatalog();
    const records: [string, Record<string, unknown>, boolean?][] = [
      ['freiburgDe', { title: 'Case one welding', language: 'de', ...at(['Freiburg', 'DE']) }],
      ['freiburgEn', { title: 'Case two welding', language: 'en', ...at(['Freiburg', 'DE'], [null, 'AT']) }],
      ['portoAlegre', { title: 'Case three welding', language: 'pt-BR', ...at(['Porto Alegre', 'BR']) }],
      ['zurich', { title: 'Case four welding', language: 'de', ...at(['Zürich', 'CH']) }],
      // Free text stored in several spellings: one city, one country, each record counted once.
      ['lyonTitle', { title: 'Case five', language: 'fr', ...at(['Lyon', 'FR']) }],
      ['lyonUpper', { title: 'Case six', language: 'fr', ...at(['LYON', 'fr']) }],
      ['lyonBoth', { title: 'Case seven', language: 'fr', ...at(['lyon', 'Fr'], ['Lyon', 'FR']) }],
      // Never listed publicly, though it matches.
      ['draft', { title: 'Case draft welding', language: 'de', ...at(['Freiburg', 'DE']) }, false],
    ];
    for (const [name, overrides, publish] of records)
      ids[name] = (await createRecord(served.api.writes, overrides, { publish: publish ?? true })).id;
    order = found(await rest('sort=-updatedAt&format=HYBRID'));
    expect(order).to.have.length(7);
  });
  after(() => resetCatalog());

  /** Each case's other spellings answer the records, order and totalCount of its stored spelling. */
  async function expectSameAnswers(cases: [string, string[], string[]][]): Promise<void> {
    for (const [stored, others, expected] of cases) {
      const canonical = await rest(stored);
      if (expected.length) expect(found(canonical), stored).to.deep.equal(expected);
      expect(canonical.pagination.totalCount, stored).to.equal(canonical.results.length).and.to.be.greaterThan(0);
      for (const other of others) {
        const body = await rest(other);
        expect(found(body), other).to.deep.equal(found(canonical));
        expect(body.pagination.totalCount, other).to.equal(canonical.pagination.totalCount);
      }
    }
  }

  it('REST country= ignores case', async () => {
    await expectSameAnswers([
      ['country=DE', ['country=de', 'country=De', 'country=dE'], named('freiburgDe', 'freiburgEn')],
      ['country=DE,BR', ['country=de,br', 'country=BR,de'], named('freiburgDe', 'freiburgEn', 'portoAlegre')],
      ['country=AT', ['country=at'], named('freiburgEn')],
      ['q=welding&country=DE', ['q=welding&country=de'], named('freiburgDe', 'freiburgEn')],
      ['country=DE&sort=nextSessionStartsAt', ['country=de&sort=nextSessionStartsAt'], []],
    ]);
  });

  it('REST language= ignores case (BCP 47 tags, stored canonical)', async () => {
    await expectSameAnswers([
      ['language=de', ['language=DE', 'language=De'], named('freiburgDe', 'zurich')],
      ['language=pt-BR', ['language=pt-br', 'language=PT-BR', 'language=Pt-bR'], named('portoAlegre')],
      [
        'language=de,pt-BR',
        ['language=DE,PT-br', 'language=de,DE,pt-br'],
        named('freiburgDe', 'zurich', 'portoAlegre'),
      ],
      ['q=welding&language=de', ['q=welding&language=DE'], named('freiburgDe', 'zurich')],
      ['language=de&format=HYBRID', ['language=DE&format=HYBRID'], named('freiburgDe', 'zurich')],
    ]);
  });

  it('REST city= ignores case', async () => {
    await expectSameAnswers([
      ['city=Freiburg', ['city=freiburg', 'city=FREIBURG', 'city=fReIbUrG'], named('freiburgDe', 'freiburgEn')],
      ['city=Porto%20Alegre', ['city=porto%20alegre', 'city=PORTO%20ALEGRE'], named('portoAlegre')],
      [
        'city=Freiburg,Porto%20Alegre',
        ['city=freiburg,PORTO%20alegre'],
        named('freiburgDe', 'freiburgEn', 'portoAlegre'),
      ],
      [
        'q=welding&city=Freiburg',
        ['q=welding&city=FREIBURG', 'q=WELDING&city=freiburg'],
        named('freiburgDe', 'freiburgEn'),
      ],
      ['city=Freiburg&sort=updatedAt', ['city=freiburg&sort=updatedAt'], named('freiburgEn', 'freiburgDe').reverse()],
      ['city=Freiburg&sort=nextSessionStartsAt', ['city=FREIBURG&sort=nextSessionStartsAt'], []],
    ]);
  });

  it('REST country, language and city together ignore case', async () => {
    await expectSameAnswers([
      ['country=DE&language=de&city=Freiburg', ['country=de&language=DE&city=freiburg'], named('freiburgDe')],
      [
        'country=DE&language=de&city=Freiburg&q=welding&facets=country,language',
        ['country=de&language=DE&city=FREIBURG&q=welding&facets=country,language'],
        named('freiburgDe'),
      ],
    ]);
  });

  it('counts a record holding several spellings of one city or country once, and finds every spelling', async () => {
    const lyon = named('lyonTitle', 'lyonUpper', 'lyonBoth');
    for (const query of ['city=Lyon', 'city=lyon', 'city=LYON', 'city=lYoN', 'city=Lyon&format=HYBRID']) {
      const body = await rest(query);
      expect(found(body), query).to.deep.equal(lyon);
      expect(body.pagination.totalCount, query).to.equal(3);
    }
    for (const query of ['country=FR', 'country=fr', 'country=Fr', 'country=fR', 'country=FR,fr']) {
      const body = await rest(query);
      expect(found(body), query).to.deep.equal(lyon);
      expect(body.pagination.totalCount, query).to.equal(3);
    }
    // A spelling no record holds, beside one they do: the same three.
    expect(found(await rest('city=LYON,Lyon,lyon'))).to.deep.equal(lyon);
  });

  it('reports facet values as stored, counted over the same records whatever the case of the filter', async () => {
    const stored = await rest('country=DE&facets=country,language');
    expect(stored.facets).to.deep.equal({
      country: [
        { value: 'DE', count: 2 },
        { value: 'AT', count: 1 },
      ],
      language: [
        { value: 'de', count: 1 },
        { value: 'en', count: 1 },
      ],
    });
    for (const query of ['country=de&facets=country,language', 'country=De&facets=country,language']) {
      const body = await rest(query);
      expect(body.facets, query).to.deep.equal(stored.facets);
      expect(body.pagination.totalCount, query).to.equal(2);
    }
    const french = await rest('city=lyon&facets=country');
    expect(french.facets!.country).to.deep.equal([
      { value: 'FR', count: 2 },
      { value: 'Fr', count: 1 },
      { value: 'fr', count: 1 },
    ]);
  });

  /** Each case's other spellings answer the records and totalCount of its stored spelling, published or every status. */
  async function expectSamePages(cases: [Record<string, string[]>, Record<string, string[]>[]][]): Promise<void> {
    for (const [stored, others] of cases)
      for (const status of [['PUBLISHED'], undefined]) {
        const canonical = await graph({ filter: { ...stored, status } });
        expect(canonical.pagination.totalCount).to.equal(canonical.results.length).and.to.be.greaterThan(0);
        for (const other of others) {
          const page = await graph({ filter: { ...other, status } });
          const label = JSON.stringify({ ...other, status });
          expect(found(page), label).to.deep.equal(found(canonical));
          expect(page.pagination.totalCount, label).to.equal(canonical.pagination.totalCount);
        }
      }
  }

  it('GraphQL filter.country ignores case', async () => {
    await expectSamePages([
      [{ country: ['DE'] }, [{ country: ['de'] }, { country: ['De'] }]],
      [{ country: ['FR'] }, [{ country: ['fr'] }]],
    ]);
  });

  it('GraphQL filter.language ignores case', async () => {
    await expectSamePages([
      [{ language: ['de'] }, [{ language: ['DE'] }]],
      [{ language: ['pt-BR'] }, [{ language: ['PT-br'] }, { language: ['pt-br'] }]],
    ]);
  });

  it('GraphQL filter.city ignores case', async () => {
    await expectSamePages([
      [{ city: ['Freiburg'] }, [{ city: ['freiburg'] }, { city: ['FREIBURG'] }]],
      [{ city: ['Lyon'] }, [{ city: ['lyon'] }, { city: ['LYON'] }]],
    ]);
  });

  it('GraphQL filters together ignore case, as REST, the facets as stored', async () => {
    await expectSamePages([
      [
        { country: ['DE'], language: ['de'], city: ['Freiburg'] },
        [{ country: ['de'], language: ['DE'], city: ['freiburg'] }],
      ],
    ]);
    // Every status: the draft in Freiburg too; the facets as stored.
    const all = await graph({ filter: { city: ['FREIBURG'], country: ['de'] }, facets: ['COUNTRY', 'LANGUAGE'] });
    expect(found(all).sort()).to.deep.equal([ids.freiburgDe!, ids.freiburgEn!, ids.draft!].sort());
    expect(all.pagination.totalCount).to.equal(3);
    expect(all.facets).to.deep.equal({
      country: [
        { value: 'DE', count: 3 },
        { value: 'AT', count: 1 },
      ],
      language: [
        { value: 'de', count: 2 },
        { value: 'en', count: 1 },
      ],
    });
    // As REST answers the same filter (published records), with a search too.
    const published = await graph({ filter: { city: ['FREIBURG'], language: ['DE'], status: ['PUBLISHED'] } });
    expect(found(published)).to.deep.equal(found(await rest('city=Freiburg&language=de')));
    const search = await graph({ filter: { city: ['freiburg'], status: ['PUBLISHED'] }, search: 'welding' });
    expect(found(search)).to.deep.equal(named('freiburgDe', 'freiburgEn'));
  });

  it('matches letters beyond ASCII in any case, as the database lowers them', async function () {
    const { rows } = await testDb().pool.query<{ folds: boolean }>(`select lower('ZÜRICH') = 'zürich' as folds`);
    // A database whose locale lowers ASCII letters alone (libc's C locale) cannot: the suite's own can.
    if (!rows[0]!.folds) this.skip();
    for (const query of ['city=Z%C3%BCrich', 'city=z%C3%BCrich', 'city=Z%C3%9CRICH']) {
      const body = await rest(query);
      expect(found(body), query).to.deep.equal(named('zurich'));
      expect(body.pagination.totalCount, query).to.equal(1);
    }
  });

  it('finds nothing, and refuses nothing, for values no record holds in any case (a language that is no tag as given)', async () => {
    for (const query of ['language=de_DE', 'language=not%20a%20tag', 'country=Deutschland', 'city=Freiburg%20im']) {
      const body = await rest(query);
      expect(body.results, query).to.deep.equal([]);
      expect(body.pagination.totalCount, query).to.equal(0);
    }
  });
});
