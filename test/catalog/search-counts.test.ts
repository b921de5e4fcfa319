// A search's exact total from the search bitmaps (migration search_bitmaps): after any mix of writes
// through the one write path, with records marked and not yet folded, after a fold, after a rebuild
// of everything, with lexemes frequent (bitmaps) and rare (no bitmaps, counted through the GIN
// index), and after a lexeme became frequent: the public list's totalCount and first page of a
// search, search_count and search_matches of any AND of words and prefixes, equal what a count(*)
// and a scan of the matching published records give.
import { expect } from 'chai';
import { createListReads, searchQuery, type ListQuery } from '../../src/catalog/list-query.ts';
import { foldSearch, foldSearchAll } from '../../src/catalog/count-folder.ts';
import { testDb } from '../hooks.ts';
import { runMixedCatalogWrites } from '../support/mixed-catalog-writes.ts';
import { resetCatalog } from '../support/factories.ts';
import { checkAcrossRebuild, markedRecords, seededAndFolded } from '../support/search-folds.ts';
import { writeBesideFolder } from '../support/writers-beside-folder.ts';

// Searches as consumers send them: common words, a stop word's prefix, rare words, a word this test adds.
const SEARCHES = [
  'machine learn',
  'a',
  'python',
  'orchard academy',
  'data science',
  'quokka',
  'quokka machine',
  'hall',
];
const MIN_RECORDS = 200;

const count = async (where: string, values: unknown[]) =>
  Number(
    (
      await testDb().pool.query<{ n: string }>(
        `select count(*) as n from learning_opportunity b where b.status = 'PUBLISHED' and ${where}`,
        values,
      )
    ).rows[0]!.n,
  );

const searchCount = async (tsquery: string) =>
  (await testDb().pool.query<{ n: string | null }>('select search_count($1::tsquery) as n', [tsquery])).rows[0]!.n;

// The tsqueries of rare and frequent lexemes (by the records holding them now), alone, combined and as prefixes.
async function lexemeQueries(): Promise<string[]> {
  const { rows } = await testDb().pool.query<{ lexeme: string; frequent: boolean }>(
    `with s as (select word as lexeme, ndoc from ts_stat($$select search from learning_opportunity where status = 'PUBLISHED'$$))
     (select lexeme, true as frequent from s order by ndoc desc, lexeme limit 3)
     union all (select lexeme, false from s where ndoc < $1 and lexeme ~ '^[a-z]{4,}$' order by ndoc desc, lexeme limit 3)`,
    [MIN_RECORDS],
  );
  const frequent = rows.filter((r) => r.frequent).map((r) => `'${r.lexeme}'`);
  const rare = rows.filter((r) => !r.frequent).map((r) => `'${r.lexeme}'`);
  expect(frequent, 'frequent lexemes').to.have.length(3);
  expect(rare, 'rare lexemes').to.have.length(3);
  return [
    ...frequent,
    ...rare,
    `${frequent[0]} & ${frequent[1]}`,
    `${frequent[0]} & ${rare[0]}`,
    `${rare[0]} & ${rare[1]}`,
    `${rare[0]!.slice(0, 3)}':*`,
    `${frequent[2]!.slice(0, 2)}':* & ${rare[2]!.slice(0, 2)}':*`,
  ];
}

// `answered`: whether the bitmaps answer (else search_count is null and the list reads the matches).
async function expectExact(answered = true): Promise<void> {
  const reads = createListReads(testDb().pool);
  for (const q of SEARCHES) {
    const search = searchQuery(q)!;
    const matches = await count(
      `b.search @@ (to_tsquery('english', $1) && coalesce(nullif(to_tsquery('english', $2), ''::tsquery), to_tsquery('simple', $2)))`,
      [search.words, search.last],
    );
    const first = await testDb().pool.query<{ id: string }>(
      `select b.id from learning_opportunity b where b.status = 'PUBLISHED'
          and b.search @@ (to_tsquery('english', $1) && coalesce(nullif(to_tsquery('english', $2), ''::tsquery), to_tsquery('simple', $2)))
        order by b.updated_at desc, b.id desc limit 5`,
      [search.words, search.last],
    );
    const query: ListQuery = { filter: {}, q, sort: '-updatedAt', fields: null, facets: [] };
    const page = await reads.getPage(query, 5, 0, 'public', { keyId: 'test' });
    expect(page.totalCount, `q=${q}`).to.equal(matches);
    const ids = (JSON.parse(`[${page.results}]`) as { id: string }[]).map((r) => r.id);
    expect(ids, `q=${q}`).to.deep.equal(first.rows.map((r) => r.id));
  }
  // The same filters for an internal reader (no bitmaps: the indexes and a count over the matches).
  for (const query of await filterQueries()) {
    const label = JSON.stringify(query);
    const page = await reads.getPage(query, 5, 0, 'public', { keyId: 'test' });
    const internal = { ...query, filter: { ...query.filter, status: ['PUBLISHED'] } };
    const expected = await reads.getPage(internal, 5, 0, 'internal', { keyId: 'test' });
    expect(page.totalCount, label).to.equal(expected.totalCount);
    expect(page.results, label).to.equal(expected.results);
  }
  for (const tsquery of await lexemeQueries()) {
    const matches = await count('b.search @@ $1::tsquery', [tsquery]);
    expect(await searchCount(tsquery), tsquery).to.equal(answered ? String(matches) : null);
    if (!answered) continue;
    const numbers = await testDb().pool.query<{ listed: number[]; matching: number[] }>(
      `select array(select unnest(search_matches($1::tsquery)) order by 1) as listed,
              array(select e.rn from list_entry e join learning_opportunity b on b.id = e.id
                     where b.status = 'PUBLISHED' and b.search @@ $1::tsquery order by 1) as matching`,
      [tsquery],
    );
    expect(numbers.rows[0]!.listed, tsquery).to.deep.equal(numbers.rows[0]!.matching);
  }
}

// Facet filters as consumers combine them, alone and with a search, with each facet's most common
// values (bitmaps), a rare provider (none: the indexes answer), a country in another case, a date
// window or a city beside them (the matches' rows checked), and the topic the mixed writes add.
async function filterQueries(): Promise<ListQuery[]> {
  const { rows } = await testDb().pool.query<{ facet: string; value: string }>(
    `select facet, value from (
       select facet, value, row_number() over (partition by facet order by n desc, value) as top,
              row_number() over (partition by facet order by n, value) as bottom
         from facet_count where n > 0) f where top <= 2 or (facet = 'provider' and bottom = 1)
     order by facet, top`,
  );
  const top = (facet: string, i = 0) => rows.filter((r) => r.facet === facet)[i]!.value;
  const since = (
    await testDb().pool.query<{ at: Date }>(
      `select percentile_disc(0.5) within group (order by updated_at) as at from list_entry`,
    )
  ).rows[0]!.at;
  const query = (filter: ListQuery['filter'], q: string | null = null): ListQuery => ({
    filter,
    q,
    sort: '-updatedAt',
    fields: null,
    facets: [],
  });
  return [
    query({ format: [top('format')], language: [top('language'), top('language', 1)] }),
    query({ topic: [top('topic'), top('topic', 1)], format: [top('format', 1)], updatedSince: since }),
    query({ country: [top('country').toLowerCase()], format: [top('format')] }),
    query({ provider: [top('provider')], language: [top('language')] }),
    query({ provider: [top('provider', 2)], format: [top('format')] }),
    query({ format: [top('format')], city: [top('city').toUpperCase()] }),
    query({ topic: ['search-test'], format: [top('format')] }),
    query({ format: [top('format')] }, 'machine learn'),
    query({ topic: [top('topic')], country: [top('country')] }, 'a'),
  ];
}

describe('search counts from the search bitmaps (search_count, fold_search)', () => {
  before(async () => {
    await resetCatalog();
    await foldSearchAll(testDb().pool);
    await testDb().pool.query('update search_config set min_records = $1, facet_min_records = $1', [MIN_RECORDS]);
  });
  after(async () => {
    await testDb().pool.query(
      'update search_config set min_records = 1000, facet_min_records = 10000, marked_max = 20000',
    );
    await resetCatalog();
  });

  it('gives the exact total of a search with records marked, folded, rebuilt and a lexeme newly frequent', async function () {
    this.timeout(180_000);
    const pool = testDb().pool;
    const marked = () => markedRecords(pool);
    await runMixedCatalogWrites({
      seedCount: 1500,
      seed: 3301,
      topic: 'search-test',
      check: async () => {
        // Some records written since the last fold: counted from their rows, the rest from the bitmaps.
        expect(await marked()).to.be.greaterThan(0);
        await expectExact();
        await foldSearchAll(pool);
        expect(await marked()).to.equal(0);
        await expectExact();
      },
    });
    const frequent = async (lexeme: string) =>
      (await pool.query<{ frequent: boolean }>('select frequent from search_lexeme where lexeme = $1', [lexeme]))
        .rows[0]?.frequent;
    // A word written into some records, then into more: rare (no bitmaps), then frequent (bitmaps built).
    const retitle = (n: number) =>
      pool.query(
        `update learning_opportunity set title = 'Quokka ' || title where id in (
           select id from learning_opportunity where status = 'PUBLISHED' and not search @@ 'quokka'::tsquery order by id limit $1)`,
        [n],
      );
    await retitle(120);
    await expectExact();
    await foldSearchAll(pool);
    expect(await frequent('quokka')).to.equal(false);
    await expectExact();
    await retitle(150);
    await expectExact();
    expect(await foldSearch(pool)).to.be.greaterThan(0);
    expect(await frequent('quokka')).to.equal(true);
    await expectExact();
    await checkAcrossRebuild(pool, expectExact);
  });

  it('stays exact in every snapshot beside concurrent writers and a folder, a lexeme becoming frequent meanwhile', async function () {
    this.timeout(120_000);
    const pool = testDb().pool;
    const ids = await seededAndFolded(pool, 1200, 3302, 400);
    const queries = [`'wombat'`, `'wombat' & 'machin'`, `'machin' & 'learn':*`, `'wom':*`, `'a':*`];
    const { folds, checks } = await writeBesideFolder({
      ids,
      // A few chunks' worth of records at a time.
      fold: async () => (await foldSearch(pool, 100)) > 0,
      // Each record: the word added, taken out of every fifth again, every third archived.
      writeRecord: async (write, id, i) => {
        await write(`update learning_opportunity set title = 'Wombat ' || title where id = $1`, id);
        if (i % 5 === 0)
          await write(`update learning_opportunity set title = replace(title, 'Wombat ', '') where id = $1`, id);
        if (i % 3 === 0) await write(`update learning_opportunity set status = 'ARCHIVED' where id = $1`, id);
      },
      // One statement, one snapshot: the bitmaps' count and numbers against the matches' count.
      check: async () => {
        for (const q of queries) {
          const { rows } = await pool.query<{ counted: string; listed: number; matching: string }>(
            `select search_count($1::tsquery) as counted, cardinality(search_matches($1::tsquery)) as listed,
                    (select count(*) from learning_opportunity where status = 'PUBLISHED' and search @@ $1::tsquery) as matching`,
            [q],
          );
          expect(rows[0]!.counted, q).to.equal(rows[0]!.matching);
          expect(String(rows[0]!.listed ?? 0), q).to.equal(rows[0]!.matching);
        }
      },
      pauseEvery: 60,
    });
    expect(folds).to.be.greaterThan(5);
    expect(checks).to.be.greaterThan(5);
    await foldSearchAll(pool);
    const { rows } = await pool.query<{ frequent: boolean }>(
      `select frequent from search_lexeme where lexeme = 'wombat'`,
    );
    expect(rows[0]?.frequent).to.equal(true);
    await expectExact();
  });

  it('answers from the bitmaps, not by counting the matches, once the records are folded', async () => {
    const pool = testDb().pool;
    await foldSearchAll(pool);
    for (const q of ['machin & learn:*', 'python', 'a:*']) {
      expect(await searchCount(q), q).to.not.equal(null);
      const { rows } = await pool.query('select search_matches($1::tsquery) as rns', [q]);
      expect(rows[0]!.rns, q).to.be.an('array').with.length.greaterThan(0);
    }
    const { rows } = await pool.query<{ n: string }>('select count(*) as n from search_bitmap');
    expect(Number(rows[0]!.n)).to.be.greaterThan(0);
    // Facet values: the bitmaps answer for common ones, with and without a search, not for a rare
    // provider (rebuilt with a lower threshold, so that the most common provider has bitmaps).
    await pool.query('update search_config set min_records = 50, facet_min_records = 50');
    await pool.query('select mark_search_all()');
    expect(await foldSearch(pool)).to.be.greaterThan(0);
    const top = async (facet: string, order: 'asc' | 'desc') =>
      (
        await pool.query<{ value: string }>(
          `select value from facet_count where facet = $1 and n > 0 order by n ${order}, value limit 1`,
          [facet],
        )
      ).rows[0]!.value;
    const [format, language, provider, rare] = [
      await top('format', 'desc'),
      await top('language', 'desc'),
      await top('provider', 'desc'),
      await top('provider', 'asc'),
    ];
    const facetCount = async (q: string | null, facets: string[], values: string[]) =>
      (
        await pool.query<{ n: string | null }>('select search_count($1::tsquery, $2::text[], $3::text[]) as n', [
          q,
          facets,
          values,
        ])
      ).rows[0]!.n;
    const published = `select count(*) as n from list_entry e join learning_opportunity b on b.id = e.id where e.status = 'PUBLISHED'`;
    const exact = async (where: string, values: unknown[]) =>
      (await pool.query<{ n: string }>(`${published} and ${where}`, values)).rows[0]!.n;
    expect(await facetCount(null, ['format', 'language'], [format, language])).to.equal(
      await exact('e.format = $1 and e.language = $2', [format, language]),
    );
    expect(await facetCount('python', ['format'], [format])).to.equal(
      await exact(`e.format = $1 and b.search @@ 'python'::tsquery`, [format]),
    );
    expect(await facetCount(null, ['provider', 'format'], [provider, format])).to.equal(
      await exact('e.provider_name = $1 and e.format = $2', [provider, format]),
    );
    expect(await facetCount(null, ['provider', 'format'], [rare, format])).to.equal(null);
    // A query that is not an AND of words and prefixes is left to the caller's count.
    expect(await searchCount(`'python' | 'data'`)).to.equal(null);
    expect(await searchCount(`!'python'`)).to.equal(null);
  });
});
