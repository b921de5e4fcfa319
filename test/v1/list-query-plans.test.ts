// The plans of the filtered lists (docs/contract.md, "Filters"): for every query of bench:query's fixed set
// (bench/query/queries.ts), EXPLAIN shows no sequential scan of the catalog, of sessions or of list_entry, on a
// catalog large enough (20,000 records, analyzed) that the planner prefers an index where one fits.
// enable_seqscan stays on: the planner chooses freely, as in production.
import { expect } from 'chai';
import { benchQueries } from '../../bench/query/queries.ts';
import { orderWalkRows, planScans, sequentialScans } from '../../bench/query/plans.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import { cloneTestDatabase } from '../support/database.ts';

describe('filtered list plans', () => {
  const now = new Date();
  // A database of its own: the other files of a serial run keep their small catalog.
  let db: Database;
  let drop: () => Promise<void>;

  before(async function () {
    this.timeout(300_000);
    const clone = await cloneTestDatabase(
      JSON.parse(process.env.LODS_TEST_POSTGRES!) as { adminUrl: string; template: string },
    );
    drop = clone.drop;
    db = await connectDatabase(clone.url, { poolMax: 3, connectTimeoutMs: 3000, migrate: false });
    await seedCatalog(db.pool, { count: 20_000, seed: 2207, now });
    await db.pool.query('vacuum analyze');
  });
  after(async function () {
    this.timeout(60_000);
    await db?.close();
    await drop?.();
  });

  it('read no table of the catalog or of sessions sequentially, for each query of the benchmark', async function () {
    this.timeout(60_000);
    const found: string[] = [];
    for (const { name, query } of benchQueries(now)) {
      const scans = await sequentialScans(db, query);
      if (scans.length) found.push(`${name} (${query}): ${scans.join(', ')}`);
    }
    expect(found).to.deep.equal([]);
  });

  it('reads a country with a start window from the index of countries times start days alone', async () => {
    const query = benchQueries(now).find((q) => q.name === 'country+starts+sort')!.query;
    const indexes = (await planScans(db, query)).map((n) => n.index).filter(Boolean);
    expect(indexes).to.include('list_entry_place_days');
    expect(indexes).to.not.include.members(['list_entry_start_days']);
    expect(indexes).to.not.include.members(['list_entry_countries_lower']);
  });

  it('reads a long start window beside another filter from the sessions, not from the start days (keys times records)', async () => {
    const query = benchQueries(now).find((q) => q.name === 'format+starts, ten years')!.query;
    const indexes = (await planScans(db, query)).map((n) => n.index).filter(Boolean);
    expect(indexes).to.not.include('list_entry_start_days');
    expect(indexes).to.include.oneOf(['list_session_starts', 'list_session_record']);
  });

  it('reads a window open at its end beside a language from one index of last starts alone: no row, no session', async () => {
    const query = benchQueries(now).find((q) => q.name === 'language+startsFrom')!.query;
    const scans = await planScans(db, query);
    const ofEntries = scans.filter((n) => n.relation === 'list_entry');
    expect(ofEntries.map((n) => `${n.type} ${n.index}`)).to.include('Index Only Scan list_entry_language_last');
    expect(ofEntries.filter((n) => n.type !== 'Index Only Scan').map((n) => n.index)).to.deep.equal([]);
    expect(scans.map((n) => n.relation)).to.not.include('list_session');
  });

  it('reads a start window of up to 45 days beside a narrow filter from the start days, a longer one from the sessions', async () => {
    const day = 86_400_000;
    const window = (days: number) =>
      `topic=python&startsFrom=${new Date(now.getTime() + 30 * day).toISOString()}&startsBefore=${new Date(now.getTime() + (30 + days) * day).toISOString()}`;
    const indexes = async (days: number) => (await planScans(db, window(days))).map((n) => n.index).filter(Boolean);
    expect(await indexes(7), '7 days').to.include('list_entry_start_days');
    expect(await indexes(45), '45 days').to.include('list_entry_start_days');
    expect(await indexes(60), '60 days').to.not.include('list_entry_start_days');
    expect(await indexes(60), '60 days').to.include.oneOf(['list_session_starts', 'list_session_record']);
  });

  it('does not walk the whole list order for a page with facets when the matches are few', async () => {
    const facets = 'facets=format,language,topic,provider,country';
    // Words that are common alone and rare together: the planner expects many matches. Before, the
    // page walked the catalog's order until it was full, here every one of the 20,000 records.
    for (const q of ['welding%20cloud', 'nursing%20cloud']) {
      const { rows } = await db.pool.query<{ n: number }>(
        `select count(*)::int as n from learning_opportunity where status = 'PUBLISHED' and search @@ plainto_tsquery('english', $1)`,
        [decodeURIComponent(q)],
      );
      expect(rows[0]!.n, q).to.be.below(1000);
      expect(await orderWalkRows(db, `q=${q}&${facets}`), q).to.be.at.most(20);
    }
  });
});
