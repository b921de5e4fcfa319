// seed writes its rows in one set-based statement per batch (catalog/seed-insert.ts), not through the
// ORM like every other write. A seeded catalog must still be exactly what the service serves: counts
// maintained by the triggers, every row and nested item re-rendering to the stored doc, and /v1 pages
// that walk the plain list order with the true totalCount.
import { expect } from 'chai';
import { loadRecords } from '../../src/catalog/entity-mapping.ts';
import { renderRecord } from '../../src/catalog/record.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { testDb } from '../hooks.ts';
import { getJson, useTestApi } from '../support/api.ts';
import { resetCatalog } from '../support/factories.ts';

type ListBody = { results: { id: string }[]; pagination: { totalCount: number } };
const COUNT = 1500; // more than one list_bucket range holds (1024): the batches split ranges

describe('a seeded catalog', () => {
  let stored: { id: string; doc: string }[];

  before(async function () {
    this.timeout(60_000);
    await resetCatalog();
    expect(await seedCatalog(testDb().pool, { count: COUNT, seed: 20261128, batchSize: 600 })).to.deep.equal({
      inserted: COUNT,
      skipped: 0,
    });
    stored = (
      await testDb().pool.query<{ id: string; doc: string }>(
        `select id, doc from learning_opportunity where status = 'PUBLISHED' order by updated_at desc, id desc`,
      )
    ).rows;
  });
  const service = useTestApi(['catalog:read']);
  after(() => resetCatalog());

  it('has counts (catalog_count, list_bucket) equal to its rows', async () => {
    const { rows } = await testDb().pool.query<{ status: string; counted: string; actual: string }>(`
      select c.status, c.n as counted, (select count(*) from learning_opportunity lo where lo.status = c.status) as actual from catalog_count c order by c.status`);
    expect(rows.map((r) => [r.status, r.counted])).to.deep.equal(rows.map((r) => [r.status, r.actual]));
    expect(rows.find((r) => r.status === 'PUBLISHED')!.actual).to.equal(String(COUNT));
    const buckets = await testDb().pool.query<{ total: string; ranges: number }>(
      'select sum(n) as total, count(*)::int as ranges from list_bucket',
    );
    expect(buckets.rows[0]).to.deep.include({ total: String(COUNT) });
    expect(buckets.rows[0]!.ranges).to.be.greaterThan(1);
  });

  it("leaves the planner statistics of the triggers' tables knowing its rows (their plans are made from them)", async () => {
    // A trigger's statements are planned once per session and kept until these statistics change:
    // plans made on the empty catalog scanned list_session whole per batch (seed.ts, ANALYZE_GROWN).
    const { rows } = await testDb().pool.query<{ relname: string; reltuples: number; actual: number }>(`
      select c.relname, c.reltuples::float8 as reltuples,
             (select count(*) from list_session where c.relname = 'list_session')::float8
               + (select count(*) from list_entry where c.relname = 'list_entry')::float8 as actual
        from pg_class c where c.relname in ('list_entry', 'list_session') order by 1`);
    for (const r of rows) expect(r.reltuples, r.relname).to.be.at.least(r.actual / 2);
  });

  it('stores rows and nested items that re-render to exactly the stored doc', async function () {
    this.timeout(30_000);
    const loaded = await loadRecords(
      testDb().orm.em.fork(),
      stored.map((r) => r.id),
    );
    expect(loaded.size).to.equal(COUNT);
    const differing = stored.filter(({ id, doc }) => renderRecord(loaded.get(id)!.record) !== doc).map((r) => r.id);
    expect(differing).to.deep.equal([]);
    // every collection was written (the generator uses them all)
    const nested = await testDb().pool.query<{ n: number }>(`
      select least((select count(*) from lo_session), (select count(*) from lo_deadline), (select count(*) from lo_faq),
                   (select count(*) from lo_external_review), (select count(*) from lo_accolade))::int as n`);
    expect(nested.rows[0]!.n).to.be.greaterThan(100);
  });

  it('serves every list page in list order with the true totalCount, and each record as stored', async function () {
    this.timeout(30_000);
    const served: { id: string }[] = [];
    for (let offset = 0; offset < COUNT; offset += 100) {
      const page = await getJson(service.api, `/v1/learning-opportunities?limit=100&offset=${offset}`, service.key);
      expect(page.status).to.equal(200);
      expect((page.body as ListBody).pagination.totalCount).to.equal(COUNT);
      served.push(...(page.body as ListBody).results);
    }
    expect(served).to.deep.equal(stored.map((r) => JSON.parse(r.doc) as unknown));
    for (const { id, doc } of [stored[0]!, stored[777]!, stored[COUNT - 1]!]) {
      const one = await getJson(service.api, `/v1/learning-opportunities/${id}`, service.key);
      expect(one.text).to.equal(doc);
    }
  });
});
