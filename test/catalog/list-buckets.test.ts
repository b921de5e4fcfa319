// The public list (published records) and the internal one (every status, GraphQL) reach deep
// offsets through the range counts of list_bucket (migrations list_buckets, list_bucket_all_statuses).
// Whatever the writes do to the ranges (splits, merges, status changes, concurrent writers, a count
// gone wrong), every page of either list must be exactly the one a plain OFFSET over the same order gives,
// whether the writes' count deltas are still pending or folded into the ranges (migration
// count_deltas: the service folds them every second, and rebalances the ranges then).
import { expect } from 'chai';
import { createCatalogReads, PAGE_MAX_BYTES_DEFAULT, PAGE_SQL, type Visibility } from '../../src/catalog/read-model.ts';
import { foldCounts } from '../../src/catalog/count-folder.ts';
import { testDb } from '../hooks.ts';
import { resetCatalog } from '../support/factories.ts';
import { writeBesideFolder } from '../support/writers-beside-folder.ts';
import { type PlanNode, planNodes, rowsTouched } from '../support/query-plans.ts';

type Bucket = { lo_id: string; n: string; n_all: string };
const VISIBILITIES: Visibility[] = ['public', 'internal'];
const LOWEST = '00000000-0000-0000-0000-000000000000';

/**
 * Inserts `count` rows in one statement, with many ties in updated_at (whole seconds): published
 * ones, or `drafts` of every ten drafts and one in ten archived, interleaved in list order.
 */
async function insertRows(count: number, spreadSeconds: number, drafts = 0): Promise<void> {
  await testDb().pool.query(
    `insert into learning_opportunity (id, title, format, status, published_at, created_at, updated_at, doc)
     select id, 'Bucket test', 'ONLINE', status, case when status = 'DRAFT' then null else at end, at, at, json_build_object('id', id)::text
       from (select gen_random_uuid() as id, timestamptz '2026-01-01' + floor(random() * $2) * interval '1 second' as at,
                    case when i % 10 < $3 then 'DRAFT' when i % 10 = 9 then 'ARCHIVED' else 'PUBLISHED' end as status
               from generate_series(1, $1) i) g`,
    [count, spreadSeconds, drafts],
  );
}

async function expectedIds(visibility: Visibility = 'public'): Promise<string[]> {
  const { rows } = await testDb().pool.query<{ id: string }>(
    `select id from learning_opportunity where ${visibility === 'public' ? `status = 'PUBLISHED'` : 'true'} order by updated_at desc, id desc`,
  );
  return rows.map((r) => r.id);
}

/** The ranges after a fold (the service's folder, run now): counts folded, ranges rebalanced. */
async function buckets(): Promise<Bucket[]> {
  expect(await foldCounts(testDb().pool)).to.equal(true);
  return (await testDb().pool.query<Bucket>('select lo_id, n, n_all from list_bucket order by lo_updated_at, lo_id'))
    .rows;
}

/**
 * Every range's counts equal its published rows (n) and all its rows (n_all), and they add up to
 * catalog_count's published row and its sum.
 */
async function expectExactCounts(): Promise<void> {
  const { rows } = await testDb().pool.query(`
    select (select count(*) from (
              select b.n, b.n_all,
                     count(*) filter (where lo.status = 'PUBLISHED') as published, count(lo.id) as every
                from (select *, lead(lo_updated_at) over w as hi_at, lead(lo_id) over w as hi_id from list_bucket window w as (order by lo_updated_at, lo_id)) b
                left join learning_opportunity lo on (lo.updated_at, lo.id) >= (b.lo_updated_at, b.lo_id)
                 and (lo.updated_at, lo.id) < (coalesce(b.hi_at, 'infinity'), coalesce(b.hi_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
               group by b.lo_updated_at, b.lo_id, b.n, b.n_all
            ) c where c.n <> c.published or c.n_all <> c.every) as bad,
           (select n from catalog_count where status = 'PUBLISHED') as published,
           (select sum(n) from list_bucket) as counted,
           (select sum(n) from catalog_count) as every,
           (select sum(n_all) from list_bucket) as counted_all`);
  const row = rows[0] as Record<string, string>;
  expect(row).to.deep.equal({
    bad: '0',
    published: row.counted,
    counted: row.counted,
    every: row.counted_all,
    counted_all: row.counted_all,
  });
}

/** Walks the whole list through the read model at `limit` and compares it with the plain order. */
async function expectEveryPageExact(limit: number, visibility: Visibility = 'public'): Promise<void> {
  const reads = createCatalogReads(testDb().pool);
  const expected = await expectedIds(visibility);
  const seen: string[] = [];
  for (let offset = 0; offset <= expected.length; offset += limit) {
    const page = await reads.getPage(limit, offset, visibility);
    expect(page.totalCount).to.equal(expected.length);
    const ids = (JSON.parse(`[${page.results}]`) as { id: string }[]).map((r) => r.id);
    expect(ids, `page at offset ${offset}`).to.deep.equal(expected.slice(offset, offset + limit));
    seen.push(...ids);
  }
  expect(seen).to.deep.equal(expected);
}

/** Rows (or index entries) of learning_opportunity that the page statement read (EXPLAIN ANALYZE), every scan summed. */
async function rowsRead(limit: number, offset: number, visibility: Visibility): Promise<number> {
  const values = visibility === 'public' ? [limit, offset, null, PAGE_MAX_BYTES_DEFAULT] : [limit, offset];
  const { rows } = await testDb().pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `explain (analyze, format json) ${PAGE_SQL[visibility]}`,
    values,
  );
  return planNodes(rows[0]!['QUERY PLAN'][0].Plan)
    .filter((node) => node['Relation Name'] === 'learning_opportunity')
    .reduce((total, node) => total + rowsTouched(node), 0);
}

describe('list paging over range counts (list_bucket), public and internal', () => {
  before(() => resetCatalog());
  after(() => resetCatalog());

  it('splits a bulk insert into ranges of at most 1024 records of any status and pages exactly across their bounds', async function () {
    this.timeout(60_000);
    await insertRows(3000, 2000, 2); // 2,100 published, 600 drafts, 300 archived
    await expectExactCounts(); // the statement's deltas pending
    for (const visibility of VISIBILITIES) await expectEveryPageExact(97, visibility);
    const ranges = await buckets();
    expect(ranges.length).to.be.within(3, 8);
    expect(Math.max(...ranges.map((b) => Number(b.n_all)))).to.be.at.most(1024);
    await expectExactCounts();
    const reads = createCatalogReads(testDb().pool);
    for (const visibility of VISIBILITIES) {
      await expectEveryPageExact(97, visibility);
      // limit=1 on both sides of every range bound (a bound is where offsets switch ranges)
      const expected = await expectedIds(visibility);
      let through = 0;
      for (const b of [...ranges].reverse()) {
        through += Number(visibility === 'public' ? b.n : b.n_all);
        for (const offset of [through - 1, through, through + 1]) {
          const page = await reads.getPage(1, offset, visibility);
          expect(
            page.results ? (JSON.parse(page.results) as { id: string }).id : undefined,
            `${visibility} offset ${offset}`,
          ).to.equal(expected[offset]);
        }
      }
      // The last page reads about one range and the page, not every key above it (a plain OFFSET).
      expect(await rowsRead(100, expected.length - 100, visibility), visibility).to.be.below(1024 + 300);
    }
  });

  it('keeps the internal list exact where drafts far outnumber published records (ranges cut by every status)', async function () {
    this.timeout(60_000);
    await insertRows(2500, 500, 9); // 2,250 drafts, 250 archived: no published record among them
    expect(Math.max(...(await buckets()).map((b) => Number(b.n_all)))).to.be.at.most(1024);
    await expectExactCounts();
    await expectEveryPageExact(100, 'internal');
    await expectEveryPageExact(100, 'public');
    // A draft's edit moves it to the top of the internal list only.
    const pool = testDb().pool;
    await pool.query(`update learning_opportunity set updated_at = now()
                       where id in (select id from learning_opportunity where status = 'DRAFT' order by random() limit 700)`);
    await expectExactCounts();
    await expectEveryPageExact(100, 'internal');
  });

  it('stays exact while records move to the top, get archived and deleted (ranges split and merge)', async function () {
    this.timeout(60_000);
    const pool = testDb().pool;
    // 1500 records move to the top in one statement: the newest range overflows and splits.
    await pool.query(`update learning_opportunity set updated_at = now() + (random() * 1000) * interval '1 ms'
                       where id in (select id from learning_opportunity where status = 'PUBLISHED' order by random() limit 1500)`);
    await expectExactCounts();
    // The 1000 oldest leave the public list: their ranges drain and merge.
    await pool.query(`update learning_opportunity set status = 'ARCHIVED'
                       where id in (select id from learning_opportunity where status = 'PUBLISHED' order by updated_at, id limit 1000)`);
    await pool.query(
      `delete from learning_opportunity where id in (select id from learning_opportunity where status = 'PUBLISHED' order by random() limit 300)`,
    );
    const ranges = await buckets();
    expect(ranges.filter((b) => b.lo_id !== LOWEST && Number(b.n_all) < 128)).to.deep.equal([]);
    await expectExactCounts();
    for (const visibility of VISIBILITIES) await expectEveryPageExact(100, visibility);
  });

  it('stays exact under concurrent single-record writers, a folder and readers', async function () {
    this.timeout(60_000);
    const ids = (await expectedIds('internal')).slice(0, 400); // drafts and archived ones among them
    // The service's folder, far more often than its second, and a reader checking in each of its
    // snapshots that the ranges and catalog_count agree with the rows (pending deltas or folded).
    const { folds, checks } = await writeBesideFolder({
      ids,
      writeRecord: (write, id) =>
        write(`update learning_opportunity set updated_at = clock_timestamp() where id = $1`, id),
      fold: () => foldCounts(testDb().pool, 20),
      check: expectExactCounts,
      pauseEvery: 60,
    });
    expect(folds).to.be.greaterThan(5);
    expect(checks).to.be.greaterThan(5);
    await expectExactCounts();
    for (const visibility of VISIBILITIES) await expectEveryPageExact(100, visibility);
    expect(Math.max(...(await buckets()).map((b) => Number(b.n_all)))).to.be.at.most(1024);
  });

  it('falls back to a plain offset, still exact, if the counts ever disagree with catalog_count', async function () {
    this.timeout(60_000);
    const pool = testDb().pool;
    const [first] = await buckets();
    await pool.query(`update list_bucket_base set n = n + 5, n_all = n_all + 5 where lo_id = $1`, [first!.lo_id]);
    try {
      for (const visibility of VISIBILITIES) await expectEveryPageExact(100, visibility);
    } finally {
      await pool.query(`update list_bucket_base set n = n - 5, n_all = n_all - 5 where lo_id = $1`, [first!.lo_id]);
    }
    await expectExactCounts();
  });
});
