// The maintained counts behind the filtered lists' totals (migration facet_count, list-query.ts
// countedTotal): after any mix of writes through the one write path (bulk seed, upserts that change
// values and sessions, publish, archive, delete, raw statements of many rows), facet_count holds
// exactly what a count over the tables gives; and the totals read from facet_count and list_bucket
// equal a count(*) of the matching published records, on both sides of every range bound.
import { expect } from 'chai';
import { createListReads, type ListFilter, type ListQuery } from '../../src/catalog/list-query.ts';
import { foldCounts } from '../../src/catalog/count-folder.ts';
import { testDb } from '../hooks.ts';
import { runMixedCatalogWrites } from '../support/mixed-catalog-writes.ts';
import { resetCatalog } from '../support/factories.ts';

type Count = { facet: string; value: string; n: string };

// What facet_count must hold: published records per value, from the columns and the session rows.
const COUNTED = `
  select 'format' as facet, format as value, count(*) as n from learning_opportunity where status = 'PUBLISHED' group by format
  union all select 'language', language, count(*) from learning_opportunity where status = 'PUBLISHED' and language is not null group by language
  union all select 'provider', provider_name, count(*) from learning_opportunity where status = 'PUBLISHED' and provider_name is not null group by provider_name
  union all select 'topic', t.value, count(distinct lo.id) from learning_opportunity lo cross join jsonb_array_elements_text(lo.topics) t where lo.status = 'PUBLISHED' group by t.value
  union all select 'country', s.country, count(distinct lo.id) from lo_session s join learning_opportunity lo on lo.id = s.learning_opportunity_id
             where lo.status = 'PUBLISHED' and s.country is not null group by s.country
  union all select 'city', s.city, count(distinct lo.id) from lo_session s join learning_opportunity lo on lo.id = s.learning_opportunity_id
             where lo.status = 'PUBLISHED' and s.city is not null group by s.city`;

// Exact with the writes' deltas pending, and again once folded (migration count_deltas): the fold
// empties the delta tables and leaves every sum as it was.
async function expectCountsExact(): Promise<void> {
  const pool = testDb().pool;
  const sorted = (rows: Count[]) => rows.map((r) => `${r.facet}|${r.value}|${r.n}`).sort();
  const maintained = async () =>
    sorted((await pool.query<Count>(`select facet, value, n from facet_count where n <> 0`)).rows);
  const counted = (await pool.query<Count>(COUNTED)).rows;
  expect(counted.length).to.be.greaterThan(20);
  expect(await maintained()).to.deep.equal(sorted(counted));
  expect(await foldCounts(pool)).to.equal(true);
  const { rows } = await pool.query<{ pending: string }>(
    `select (select count(*) from facet_count_delta) + (select count(*) from catalog_count_delta) + (select count(*) from list_bucket_delta) as pending`,
  );
  expect(rows[0]!.pending).to.equal('0');
  expect(await maintained()).to.deep.equal(sorted(counted));
}

const list = (filter: ListFilter): ListQuery => ({ filter, q: null, sort: '-updatedAt', fields: null, facets: [] });

describe('maintained counts of the filtered lists (facet_count, list_bucket)', () => {
  before(() => resetCatalog());
  after(() => resetCatalog());

  it('facet_count equals a count over the tables after mixed writes (bulk, upsert, publish, archive, delete)', async function () {
    this.timeout(120_000);
    await runMixedCatalogWrites({ seedCount: 1500, seed: 2299, topic: 'facet-test', check: expectCountsExact });
  });

  it('reads totals from the counts exactly as count(*) gives them, on both sides of every range bound', async function () {
    this.timeout(120_000);
    const pool = testDb().pool;
    const reads = createListReads(pool);
    const exact = async (where: string, values: unknown[]) =>
      Number(
        (
          await pool.query<{ n: string }>(
            `select count(*) as n from learning_opportunity lo where lo.status = 'PUBLISHED' and ${where}`,
            values,
          )
        ).rows[0]!.n,
      );
    const total = async (filter: ListFilter) =>
      (await reads.getPage(list(filter), 1, 0, 'public', { keyId: 'test' })).totalCount;

    // Every value of every facet (topic, country and city one at a time; the single-valued ones also several at once).
    const { rows } = await pool.query<Count>(
      `select facet, value, n from facet_count where n > 0 order by facet, value`,
    );
    const column: Record<string, string> = {
      format: 'lo.format = any($1)',
      language: 'lo.language = any($1)',
      provider: 'lo.provider_name = any($1)',
      topic: 'lo.topics ?| $1',
      country: 'exists (select from lo_session s where s.learning_opportunity_id = lo.id and s.country = any($1))',
      city: 'exists (select from lo_session s where s.learning_opportunity_id = lo.id and s.city = any($1))',
    };
    for (const r of rows.filter((_, i) => i % 3 === 0)) {
      expect(await total({ [r.facet]: [r.value] }), `${r.facet}=${r.value}`).to.equal(
        await exact(column[r.facet]!, [[r.value]]),
      );
    }
    for (const facet of ['format', 'language', 'provider']) {
      const values = [
        ...rows
          .filter((r) => r.facet === facet)
          .slice(0, 3)
          .map((r) => r.value),
        'nothing-such',
      ];
      expect(await total({ [facet]: [...values, values[0]!] }), facet).to.equal(await exact(column[facet]!, [values]));
    }
    // Several values of a facet a record holds more than one of: counted, not summed.
    const topics = rows
      .filter((r) => r.facet === 'topic')
      .slice(0, 4)
      .map((r) => r.value);
    expect(await total({ topic: topics })).to.equal(await exact(column.topic!, [topics]));

    // updatedSince and updatedBefore at each range bound, a millisecond either side, and both at once.
    const bounds = (
      await pool.query<{ at: string }>(
        `select to_json(lo_updated_at) #>> '{}' as at from list_bucket where lo_updated_at > '-infinity' order by 1`,
      )
    ).rows.map((r) => Date.parse(r.at));
    expect(bounds.length).to.be.at.least(1);
    const { rows: span } = await pool.query<{ lo: string; hi: string }>(
      `select to_json(min(updated_at)) #>> '{}' as lo, to_json(max(updated_at)) #>> '{}' as hi from learning_opportunity where status = 'PUBLISHED'`,
    );
    const instants = [...bounds, Date.parse(span[0]!.lo), Date.parse(span[0]!.hi)].flatMap((t) => [t - 1, t, t + 1]);
    for (const t of instants) {
      const at = new Date(t);
      expect(await total({ updatedSince: at }), `updatedSince ${at.toISOString()}`).to.equal(
        await exact('lo.updated_at >= $1', [at]),
      );
      expect(await total({ updatedBefore: at }), `updatedBefore ${at.toISOString()}`).to.equal(
        await exact('lo.updated_at < $1', [at]),
      );
    }
    for (const [a, b] of [
      [instants[0]!, instants.at(-1)!],
      [instants.at(-1)!, instants[0]!],
      [instants[1]!, instants[4]!],
    ] as [number, number][]) {
      const [since, before] = [new Date(a), new Date(b)];
      expect(await total({ updatedSince: since, updatedBefore: before })).to.equal(
        await exact('lo.updated_at >= $1 and lo.updated_at < $2', [since, before]),
      );
    }
  });
});
