// The public list reaches deep offsets through the range counts of list_bucket (migration
// list_buckets). Whatever the writes do to the ranges (splits, merges, concurrent writers, a count
// gone wrong), every page must be exactly the one a plain OFFSET over the same order gives.
import { expect } from 'chai';
import pg from 'pg';
import { createCatalogReads } from '../../src/catalog/read-model.ts';
import { testDb } from '../hooks.ts';
import { resetCatalog } from '../support/factories.ts';

type Bucket = { lo_id: string; n: string };
const LOWEST = '00000000-0000-0000-0000-000000000000';

/** Inserts `count` published rows in one statement, with many ties in updated_at (whole seconds). */
async function insertPublished(count: number, spreadSeconds: number): Promise<void> {
  await testDb().pool.query(
    `insert into learning_opportunity (id, title, format, status, published_at, created_at, updated_at, doc)
     select id, 'Bucket test', 'ONLINE', 'PUBLISHED', at, at, at, json_build_object('id', id)::text
       from (select gen_random_uuid() as id, timestamptz '2026-01-01' + floor(random() * $2) * interval '1 second' as at
               from generate_series(1, $1)) g`,
    [count, spreadSeconds],
  );
}

async function expectedIds(): Promise<string[]> {
  const { rows } = await testDb().pool.query<{ id: string }>(
    `select id from learning_opportunity where status = 'PUBLISHED' order by updated_at desc, id desc`,
  );
  return rows.map((r) => r.id);
}

async function buckets(): Promise<Bucket[]> {
  return (await testDb().pool.query<Bucket>('select lo_id, n from list_bucket order by lo_updated_at, lo_id')).rows;
}

/** Every count equals the published rows in its range, and they add up to catalog_count. */
async function expectExactCounts(): Promise<void> {
  const { rows } = await testDb().pool.query<{ bad: string; total: string; counted: string }>(`
    select (select count(*) from (
              select b.n, (select count(*) from learning_opportunity lo
                            where lo.status = 'PUBLISHED' and (lo.updated_at, lo.id) >= (b.lo_updated_at, b.lo_id)
                              and (lo.updated_at, lo.id) < (coalesce(b.hi_at, 'infinity'), coalesce(b.hi_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))) as actual
                from (select *, lead(lo_updated_at) over w as hi_at, lead(lo_id) over w as hi_id from list_bucket window w as (order by lo_updated_at, lo_id)) b
            ) c where c.n <> c.actual) as bad,
           (select n from catalog_count where status = 'PUBLISHED') as total,
           (select sum(n) from list_bucket) as counted`);
  expect(rows[0]).to.deep.equal({ bad: '0', total: rows[0]!.counted, counted: rows[0]!.counted });
}

/** Walks the whole list through the read model at `limit` and compares it with the plain order. */
async function expectEveryPageExact(limit: number): Promise<void> {
  const reads = createCatalogReads(testDb().pool);
  const expected = await expectedIds();
  const seen: string[] = [];
  for (let offset = 0; offset <= expected.length; offset += limit) {
    const page = await reads.getPage(limit, offset, 'public');
    expect(page.totalCount).to.equal(expected.length);
    const ids = (JSON.parse(`[${page.results}]`) as { id: string }[]).map((r) => r.id);
    expect(ids, `page at offset ${offset}`).to.deep.equal(expected.slice(offset, offset + limit));
    seen.push(...ids);
  }
  expect(seen).to.deep.equal(expected);
}

describe('public list paging over range counts (list_bucket)', () => {
  before(() => resetCatalog());
  after(() => resetCatalog());

  it('splits a bulk insert into ranges of at most 1024 and pages exactly across their bounds', async function () {
    this.timeout(60_000);
    await insertPublished(3000, 2000);
    const ranges = await buckets();
    expect(ranges.length).to.be.within(3, 8);
    expect(Math.max(...ranges.map((b) => Number(b.n)))).to.be.at.most(1024);
    await expectExactCounts();
    await expectEveryPageExact(97);
    // limit=1 on both sides of every range bound (a bound is where offsets switch ranges)
    const reads = createCatalogReads(testDb().pool);
    const expected = await expectedIds();
    let through = 0;
    for (const b of [...ranges].reverse()) {
      through += Number(b.n);
      for (const offset of [through - 1, through, through + 1]) {
        const page = await reads.getPage(1, offset, 'public');
        expect(page.results ? (JSON.parse(page.results) as { id: string }).id : undefined, `offset ${offset}`).to.equal(
          expected[offset],
        );
      }
    }
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
    expect(ranges.filter((b) => b.lo_id !== LOWEST && Number(b.n) < 128)).to.deep.equal([]);
    await expectExactCounts();
    await expectEveryPageExact(100);
  });

  it('stays exact under concurrent single-record writers', async function () {
    this.timeout(60_000);
    const ids = (await expectedIds()).slice(0, 400);
    const writers = Array.from({ length: 4 }, () => new pg.Client({ connectionString: testDb().url }));
    await Promise.all(writers.map((c) => c.connect()));
    try {
      await Promise.all(
        writers.map(async (client, w) => {
          for (let i = w; i < ids.length; i += writers.length) {
            await client.query('begin');
            await client.query(`update learning_opportunity set updated_at = clock_timestamp() where id = $1`, [
              ids[i],
            ]);
            // hold the range locks a moment, as a real write does while it records its event
            await client.query('select pg_sleep(0.001)');
            await client.query('commit');
          }
        }),
      );
    } finally {
      await Promise.all(writers.map((c) => c.end()));
    }
    await expectExactCounts();
    await expectEveryPageExact(100);
  });

  it('falls back to a plain offset, still exact, if the counts ever disagree with catalog_count', async () => {
    const pool = testDb().pool;
    const [first] = await buckets();
    await pool.query(`update list_bucket set n = n + 5 where lo_id = $1`, [first!.lo_id]);
    try {
      await expectEveryPageExact(100);
    } finally {
      await pool.query(`update list_bucket set n = n - 5 where lo_id = $1`, [first!.lo_id]);
    }
    await expectExactCounts();
  });
});
