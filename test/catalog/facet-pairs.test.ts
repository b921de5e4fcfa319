// The facets of a public list filtered by one facet value (or several of a format, a language or a
// provider), from the counts of pairs of values (migration facet_pairs): after any mix of writes through the one write path, with records marked
// and not yet folded, after a fold and after a rebuild, and in every snapshot beside concurrent
// writers and a folder, they equal the facets of the same filter for an internal reader (counted from
// the matching records' rows, never from the pairs).
import { expect } from 'chai';
import { foldSearch, foldSearchAll } from '../../src/catalog/count-folder.ts';
import { createListReads, type ListFilter, type ListQuery } from '../../src/catalog/list-query.ts';
import { LIST_FACETS, type ListFacet } from '../../src/catalog/list-model.ts';
import { createCatalogWrites } from '../../src/catalog/catalog-writes.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { createChangeRecorder } from '../../src/events/record-change.ts';
import { testDb } from '../hooks.ts';
import { runMixedCatalogWrites } from '../support/mixed-catalog-writes.ts';
import { buildLearningOpportunityInput, resetCatalog } from '../support/factories.ts';
import { checkAcrossRebuild, markedRecords, seededAndFolded } from '../support/search-folds.ts';
import { writeBesideFolder } from '../support/writers-beside-folder.ts';
import { eventually } from '../support/webhooks.ts';

const FACETS = [...LIST_FACETS];
const query = (filter: ListFilter): ListQuery => ({
  filter,
  q: null,
  sort: '-updatedAt',
  fields: null,
  facets: FACETS,
});

// Filters of one facet as consumers send them: each facet's most common value and a rare one, both
// together, a country in lower case, and the topic the mixed writes add.
async function facetFilters(): Promise<ListFilter[]> {
  const { rows } = await testDb().pool.query<{ facet: ListFacet; value: string }>(
    `select facet, value from (
       select facet, value, row_number() over (partition by facet order by n desc, value) as top,
              row_number() over (partition by facet order by n, value) as bottom
         from facet_count where n > 0 and facet <> 'city') f where top = 1 or bottom = 1
     order by facet, top`,
  );
  const filters: ListFilter[] = rows.map((r) => ({ [r.facet]: [r.value] }));
  const values = (facet: ListFacet) => rows.filter((r) => r.facet === facet).map((r) => r.value);
  const country = values('country')[0]!;
  // Several values of a facet: those of a single-valued one (a record holds one of them at most) add
  // up; those of a topic or a country are counted from the rows (a record may hold both).
  const several: ListFilter[] = FACETS.map((f) => ({ [f]: values(f) }));
  return [...filters, ...several, { country: [country.toLowerCase()] }, { topic: ['pairs-test'] }];
}

// The pairs' facets (null: they did not answer) and the page's, against an internal reader's.
async function expectPairsExact(answered = true): Promise<void> {
  const pool = testDb().pool;
  const reads = createListReads(pool);
  for (const filter of await facetFilters()) {
    const label = JSON.stringify(filter);
    const [facet, values] = Object.entries(filter)[0]! as [ListFacet, string[]];
    const expected = await reads.getPage(query({ ...filter, status: ['PUBLISHED'] }), 5, 0, 'internal', {
      keyId: 'test',
    });
    const page = await reads.getPage(query(filter), 5, 0, 'public', { keyId: 'test' });
    expect(page.facets, label).to.deep.equal(expected.facets);
    expect(page.totalCount, label).to.equal(expected.totalCount);
    expect(page.results, label).to.equal(expected.results);
    const { rows } = await pool.query<{ j: Record<string, [string, number][]> | null }>(
      'select facet_pair_counts($1, $2, $3, 20) as j',
      [facet, values, FACETS],
    );
    // A country's spellings are one filter value (the filter ignores case).
    const keys = new Set(facet === 'country' ? values.map((v) => v.toLowerCase()) : values);
    if (!answered || (keys.size > 1 && (facet === 'topic' || facet === 'country'))) {
      expect(rows[0]!.j, label).to.equal(null);
      continue;
    }
    const paired = Object.fromEntries(
      FACETS.map((f) => [f, rows[0]!.j![f]!.map(([value, n]) => ({ value, count: Number(n) }))]),
    );
    expect(paired, label).to.deep.equal(expected.facets);
  }
}

describe('facets of one facet value from the counts of pairs (facet_pair_counts, fold_search)', () => {
  before(async () => {
    await resetCatalog();
    await foldSearchAll(testDb().pool);
  });
  after(async () => {
    await testDb().pool.query('update search_config set marked_max = 20000');
    await resetCatalog();
  });

  it('equals the facets counted from the rows with records marked, folded and rebuilt', async function () {
    this.timeout(180_000);
    const pool = testDb().pool;
    const marked = () => markedRecords(pool);
    await runMixedCatalogWrites({
      seedCount: 1500,
      seed: 3401,
      topic: 'pairs-test',
      check: async () => {
        expect(await marked()).to.be.greaterThan(0);
        await expectPairsExact();
        await foldSearchAll(pool);
        expect(await marked()).to.equal(0);
        await expectPairsExact();
      },
    });
    // A country spelled in another case by some records: one filter value (the filter ignores case),
    // two facet values (a facet lists values as stored).
    const country = (
      await pool.query<{ value: string }>(
        `select value from facet_count where facet = 'country' and n > 0 order by n desc, value limit 1`,
      )
    ).rows[0]!.value;
    const writes = createCatalogWrites({ orm: testDb().orm, recordChange: createChangeRecorder(null) });
    const inputs = Array.from({ length: 6 }, () => {
      const input = buildLearningOpportunityInput({ topics: ['pairs-test'] });
      const [session] = input.sessions as Record<string, unknown>[];
      const location = { name: 'Hall', address: '1 Road', city: 'Town', country: country.toLowerCase() };
      return { ...input, sessions: [{ ...session, location }] };
    });
    await writes.upsertMany(inputs.map((input) => parseLearningOpportunityInput(input)));
    await writes.publishMany(inputs.map((input) => input.id));
    const spelled = await createListReads(pool).getPage(query({ country: [country] }), 5, 0, 'public', {
      keyId: 'test',
    });
    expect(spelled.facets!.country!.map((c) => c.value)).to.include.members([country, country.toLowerCase()]);
    await expectPairsExact();
    expect(await foldSearch(pool)).to.be.greaterThan(0);
    await expectPairsExact();
    await checkAcrossRebuild(pool, expectPairsExact);
  });

  it('folds while a write commits in the middle of the fold (a provider no fold has seen), and folds that write next', async function () {
    this.timeout(60_000);
    const pool = testDb().pool;
    await foldSearchAll(pool);
    const writes = createCatalogWrites({ orm: testDb().orm, recordChange: createChangeRecorder(null) });
    const blocking = buildLearningOpportunityInput({ provider: { name: 'Blocking Provider', url: null } });
    const moving = buildLearningOpportunityInput({ topics: ['pairs-test'] });
    await writes.upsertMany([blocking, moving].map((input) => parseLearningOpportunityInput(input)));
    await writes.publishMany([blocking.id, moving.id]);
    // Another session holds the blocking record's filter key, uncommitted: the fold's numbering of
    // the marked records' values waits for it there, half-way through the fold.
    const holder = await pool.connect();
    try {
      await holder.query('begin');
      await holder.query(`insert into facet_filter (key) values (facet_key('provider', 'Blocking Provider'))`);
      const folding = foldSearch(pool).catch((error: Error) => error);
      await eventually(
        async () =>
          (
            await pool.query(
              `select 1 from pg_stat_activity where datname = current_database() and query like '%fold_search%' and wait_event_type = 'Lock' and pid <> pg_backend_pid()`,
            )
          ).rowCount,
        10_000,
        'the fold waiting',
      );
      // Meanwhile a write commits: the moving record now has a provider that nothing has numbered.
      await writes.upsert(
        parseLearningOpportunityInput({ ...moving, provider: { name: 'Provider Never Folded', url: null } }),
      );
      await holder.query('rollback');
      const folded = await folding;
      // Read committed, the fold's next statement saw the new provider unnumbered: null filter_id.
      expect(folded).to.be.a('number').and.to.be.greaterThan(0);
    } finally {
      holder.release();
    }
    // The write's mark outlived that fold; the next one folds it, and the pairs equal the rows.
    expect(await markedRecords(pool)).to.be.greaterThan(0);
    await foldSearchAll(pool);
    expect(await markedRecords(pool)).to.equal(0);
    await expectPairsExact();
  });

  it('stays exact in every snapshot beside concurrent writers and a folder', async function () {
    this.timeout(120_000);
    const pool = testDb().pool;
    const ids = await seededAndFolded(pool, 1200, 3402, 300);
    const format = (
      await pool.query<{ value: string }>(
        `select value from facet_count where facet = 'format' and n > 0 order by n desc, value limit 1`,
      )
    ).rows[0]!.value;
    const { folds, checks } = await writeBesideFolder({
      ids,
      // A few chunks' worth of records at a time.
      fold: async () => (await foldSearch(pool, 100)) > 0,
      // Each record: its provider renamed, every third archived, every fifth moved to another format.
      writeRecord: async (write, id, i) => {
        await write(`update learning_opportunity set provider_name = 'Pair Provider ' || (${i % 7}) where id = $1`, id);
        if (i % 3 === 0) await write(`update learning_opportunity set status = 'ARCHIVED' where id = $1`, id);
        if (i % 5 === 0)
          await write(
            `update learning_opportunity set format = case when format = 'ONLINE' then 'HYBRID' else 'ONLINE' end where id = $1`,
            id,
          );
      },
      // One statement, one snapshot: the pairs' facets against the same counted from the rows.
      check: async () => {
        const { rows } = await pool.query<{ paired: unknown; counted: unknown }>(
          `select facet_pair_counts('format', array[$1], array['provider', 'format', 'language'], 1000) as paired,
                  (select jsonb_build_object(
                     'provider', coalesce((select jsonb_agg(jsonb_build_array(v, n) order by n desc, v collate "C")
                                   from (select provider_name v, count(*) n from list_entry where status = 'PUBLISHED' and format = $1 and provider_name is not null group by 1) x), '[]'),
                     'format', coalesce((select jsonb_agg(jsonb_build_array(v, n) order by n desc, v collate "C")
                                   from (select format v, count(*) n from list_entry where status = 'PUBLISHED' and format = $1 group by 1) x), '[]'),
                     'language', coalesce((select jsonb_agg(jsonb_build_array(v, n) order by n desc, v collate "C")
                                   from (select language v, count(*) n from list_entry where status = 'PUBLISHED' and format = $1 and language is not null group by 1) x), '[]'))) as counted`,
          [format],
        );
        expect(rows[0]!.paired).to.deep.equal(rows[0]!.counted);
      },
      pauseEvery: 40,
    });
    expect(folds).to.be.greaterThan(5);
    expect(checks).to.be.greaterThan(5);
    await foldSearchAll(pool);
    await expectPairsExact();
  });
});
