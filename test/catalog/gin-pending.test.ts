// list_entry's GINs answer from their tree alone (migration list_entry_gins_current): a catalog
// written since its last vacuum is read as cheaply as a vacuumed one. With PostgreSQL's pending
// list (fastupdate, the default), every search of a GIN read the list of recent writes whole and
// matched it against each of its keys: at 40,000 freshly seeded records a country with a year's
// start window took 946 ms, 20 ms after a vacuum (bench/README.md, "GIN pending lists").
import { expect } from 'chai';
import { explainNodes } from '../../bench/query/plans.ts';
import { listStatement, type ListQuery } from '../../src/catalog/list-query.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { testDb } from '../hooks.ts';
import { resetCatalog } from '../support/factories.ts';

const DAY = 86_400_000;
const GINS = ['topics', 'countries_lower', 'cities_lower', 'start_days', 'place_days'].map((n) => `list_entry_${n}`);

// The shared buffers a page's statement reads from list_entry's GINs (EXPLAIN ANALYZE, BUFFERS, of
// their index scans): their trees' pages and, with a pending list, its pages as well.
async function ginBuffersOf(query: ListQuery): Promise<number> {
  const nodes = await explainNodes(testDb(), listStatement(query, 20, 0, 'public'), 'analyze, buffers');
  return nodes
    .filter((node) => node['Node Type'] === 'Bitmap Index Scan' && GINS.includes(node['Index Name'] as string))
    .reduce(
      (sum, node) => sum + ((node['Shared Hit Blocks'] as number) ?? 0) + ((node['Shared Read Blocks'] as number) ?? 0),
      0,
    );
}

describe('list_entry GINs on a freshly written catalog', function () {
  this.timeout(60_000);

  it('read no more right after writes than after a vacuum: no pending list to scan', async () => {
    await resetCatalog();
    await testDb().pool.query('vacuum list_entry');
    await seedCatalog(testDb().pool, { count: 2000, seed: 3301, batchSize: 250 });
    await testDb().pool.query('analyze list_entry');
    const now = Date.now();
    const window = { startsFrom: new Date(now + 30 * DAY), startsBefore: new Date(now + 395 * DAY) };
    const queries: ListQuery[] = [
      // A country with a year's window: place_days' GIN with 2 x 367 keys.
      { filter: { country: ['DE', 'FR'], ...window }, q: null, sort: '-updatedAt', fields: null, facets: [] },
      // A topic with a month's window: the topics' and the start days' GINs.
      {
        filter: { topic: ['python'], startsFrom: window.startsFrom, startsBefore: new Date(now + 60 * DAY) },
        q: null,
        sort: '-updatedAt',
        fields: null,
        facets: [],
      },
      { filter: { city: ['Berlin'] }, q: null, sort: '-updatedAt', fields: null, facets: [] },
    ];
    const fresh: number[] = [];
    for (const query of queries) fresh.push(await ginBuffersOf(query));
    await testDb().pool.query('vacuum list_entry');
    const vacuumed: number[] = [];
    for (const query of queries) vacuumed.push(await ginBuffersOf(query));
    // The GINs were read (each query through at least one), and a vacuum changes nothing of what they
    // read (with a pending list it did: the list's pages, scanned whole and matched against every key).
    expect(
      fresh.every((n) => n > 0),
      `${fresh}`,
    ).to.equal(true);
    expect(fresh).to.deep.equal(vacuumed);
  });
});
