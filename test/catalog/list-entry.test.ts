// The catalog's narrow rows behind the filtered lists (migration list_entry, catalog/list-sql.ts):
// after any mix of writes through the one write path (bulk seed, upserts that change values and
// sessions, publish, archive, delete, raw statements of many rows), list_entry holds exactly one
// row per record, with the values its columns and its session rows give; list_session one row per
// session, with its record's status and the start before it.
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { runMixedCatalogWrites } from '../support/mixed-catalog-writes.ts';
import { resetCatalog } from '../support/factories.ts';

// What list_entry must hold, derived from the catalog's columns and its session rows, as text.
const DERIVED = `
  select lo.id, lo.status, lo.updated_at, lo.format, lo.language, lo.provider_name,
         array(select distinct t from jsonb_array_elements_text(lo.topics) t order by 1) as topics,
         array(select distinct s.country from lo_session s where s.learning_opportunity_id = lo.id and s.country is not null order by 1) as countries,
         array(select distinct s.city from lo_session s where s.learning_opportunity_id = lo.id and s.city is not null order by 1) as cities,
         array(select s.starts_at from lo_session s where s.learning_opportunity_id = lo.id order by 1) as starts,
         array(select distinct floor(extract(epoch from s.starts_at) / 86400)::int from lo_session s where s.learning_opportunity_id = lo.id order by 1) as start_days
    from learning_opportunity lo`;
const KEPT = `select id, status, updated_at, format, language, provider_name, topics, countries, cities, starts, start_days from list_entry`;
// What list_session must hold (migration list_session): a row per session with its record's status
// and the start before it in the record's start order (equal starts: one of them gets the other's).
const DERIVED_SESSIONS = `
  select lo.id, lo.status, s.starts_at, lag(s.starts_at) over (partition by lo.id order by s.starts_at) as prev_starts_at
    from learning_opportunity lo join lo_session s on s.learning_opportunity_id = lo.id`;
const KEPT_SESSIONS = `select id, status, starts_at, prev_starts_at from list_session`;

async function expectEntriesExact(): Promise<void> {
  const pool = testDb().pool;
  const rows = async (sql: string) =>
    (await pool.query<Record<string, unknown>>(`select row(x.*)::text as r from (${sql}) x order by 1`)).rows.map(
      (r) => r.r as string,
    );
  const derived = await rows(DERIVED);
  expect(derived.length).to.be.greaterThan(20);
  expect(await rows(KEPT)).to.deep.equal(derived);
  const sessions = await rows(DERIVED_SESSIONS);
  expect(sessions.length).to.be.greaterThan(derived.length);
  expect(await rows(KEPT_SESSIONS)).to.deep.equal(sessions);
}

describe('narrow rows of the filtered lists (list_entry, list_session)', () => {
  before(() => resetCatalog());
  after(() => resetCatalog());

  it('equal the catalog and its sessions after mixed writes (bulk, upsert, publish, archive, delete)', async function () {
    this.timeout(120_000);
    await runMixedCatalogWrites({ seedCount: 600, seed: 2212, topic: 'entry-test', check: expectEntriesExact });
  });
});
